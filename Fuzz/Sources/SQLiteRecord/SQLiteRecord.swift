import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum SQLiteRecordFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// A record (SQLite's serial types and values) as salvage decodes every row: an accepted record's
/// values tile it exactly from the end of its header to its last byte, and their text reads in
/// each encoding; and as the start of a longer record (`decodeLocal`). Nothing may trap, whatever
/// the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    bytes.withUnsafeBytes { raw in
        let record = ByteView(raw)
        var fields: [FieldValue] = []
        for limit in [1, 5, 64, Int.max] {
            guard RecordDecoder.decode(record, into: &fields, maxColumns: limit) == nil else { continue }
            Fuzz.check(fields.count <= limit, "more values than allowed")
            checkInOrder(fields, of: record)
            for field in fields {
                for encoding in [DatabaseHeader.TextEncoding.utf8, .utf16le, .utf16be] {
                    _ = FieldText.string(field, in: record, encoding: encoding)
                }
            }
        }
        // The start of a record whose rest was on overflow pages: values on the page lie inside it,
        // in order; a value past it is empty.
        for extra in [0, 1, 4096] {
            guard
                RecordDecoder.decodeLocal(record, total: record.count + extra, into: &fields, maxColumns: Int.max)
                    == nil
            else { continue }
            checkInOrder(fields, of: record)
        }
        // The bounded reads themselves, at every offset.
        for at in -2..<(record.count + 2) {
            _ = record.varint(at)
            _ = record.u16(at)
            _ = record.u32(at)
            for width in 0...9 { _ = record.signed(at, width: width) }
        }
    }
    return 0
}

/// An accepted record's text and blob values start after its header, follow each other without
/// overlapping, and end inside the bytes given (the record, or the part of it on the page).
private func checkInOrder(_ fields: [FieldValue], of record: ByteView) {
    guard let header = record.varint(0) else { Fuzz.fail("an accepted record without a header size") }
    var next = Int(header.value)
    for field in fields {
        switch field {
        case let .text(range), let .blob(range):
            Fuzz.check(range.lowerBound >= next, "values overlap")
            Fuzz.check(range.upperBound <= record.count, "a value past the record")
            next = range.upperBound
        case .null, .integer, .real:
            break
        }
    }
}
