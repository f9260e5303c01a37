import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum SQLitePageFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// One page of a damaged store as salvage's reader meets it: the B-tree header and cell pointer
/// array (`BTreePage.parse`), every cell (`leafCell`, `interiorCell`), the records that fit the
/// page, the file header (`DatabaseHeader.parse`), the page-size probe, and the page read as a
/// freelist trunk and a pointer-map page. Nothing may trap; whatever is accepted lies inside the page.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    bytes.withUnsafeBytes { raw in
        let page = ByteView(raw)
        var fields: [FieldValue] = []
        for headerOffset in [0, 100] {
            for usable in Set([page.count, page.count - 32, 480, 512]) where usable >= 0 && usable <= page.count {
                guard case let .success(parsed) = BTreePage.parse(page, headerOffset: headerOffset, usable: usable) else { continue }
                Fuzz.check(parsed.cellArrayOffset + 2 * parsed.cellCount <= usable, "a cell pointer array past the usable size")
                for i in 0..<parsed.cellCount {
                    guard let offset = parsed.cellOffset(i, in: page) else { Fuzz.fail("a cell \(i) parse accepted has no offset") }
                    Fuzz.check(offset >= parsed.cellArrayOffset + 2 * parsed.cellCount && offset < usable, "cell \(i) at \(offset) outside the cell area")
                    switch parsed.kind {
                    case .tableLeaf:
                        guard let cell = BTreePage.leafCell(at: offset, in: page, usable: usable) else { continue }
                        Fuzz.check(cell.localStart + cell.localCount <= usable, "a cell's local payload past the page")
                        Fuzz.check(cell.localCount <= cell.payloadSize, "more local bytes than the payload")
                        Fuzz.check((cell.overflowPage == nil) == (cell.localCount == cell.payloadSize), "overflow page and sizes disagree")
                        if cell.overflowPage == nil, let record = page.slice(cell.localStart..<(cell.localStart + cell.localCount)) {
                            if RecordDecoder.decode(record, into: &fields, maxColumns: 4096) == nil {
                                for case let .text(r) in fields { Fuzz.check(r.upperBound <= record.count, "a text range past the record") }
                                for case let .blob(r) in fields { Fuzz.check(r.upperBound <= record.count, "a blob range past the record") }
                            }
                        }
                    case .tableInterior:
                        _ = BTreePage.interiorCell(at: offset, in: page, usable: usable)
                    case .indexLeaf, .indexInterior:
                        _ = page.varint(offset)
                    }
                }
            }
        }
        if let header = DatabaseHeader.parse(page) {
            Fuzz.check(header.pageSize >= 512 && header.pageSize <= 65536 && header.usableSize >= 480, "a header with an impossible page size")
        }
        if let size = PageSizeProbe.infer(page, fileSize: Int64(page.count)) {
            Fuzz.check(PageSizeProbe.sizes.contains(size), "a probed page size that is not a power of two from 512")
        }
        // The page as every page of a small file: a freelist trunk (loops must stop) and a pointer map.
        let read: (UInt32, (ByteView) -> Void) -> Bool = { _, body in body(page); return true }
        let list = Freelist.walk(first: 2, declared: 3, pageCount: 64, usable: max(page.count, 16), read: read)
        Fuzz.check(list.found <= 64, "more free pages than pages")
        var map = PointerMap(usable: max(page.count, 5), pageSize: 4096, pageCount: 64)
        for n in UInt32(1)...64 { _ = map.root(of: n, read: read) }
    }
    return 0
}
