import Foundation
import GRDB
import GRDBSQLite

/// `usm_idkey(v1, v2, ...)`: one BLOB standing for a list of values, equal for two lists exactly
/// when `IS` holds between their values one by one (`DuplicateGroups` groups objects by it: one
/// column compared instead of hundreds, and statements naming each column of a wide table once).
///
/// Each value is written type-tagged and, when it has bytes, length-prefixed, so the encoding is
/// prefix-free and a list's key is injective:
/// - NULL: `0x00` (distinct from an empty TEXT or BLOB);
/// - INTEGER, and a REAL holding an integer that an `Int64` holds exactly (SQLite compares
///   `1 IS 1.0` true): `0x01` and the 8 bytes of the integer;
/// - any other REAL: `0x02` and the 8 bytes of the double;
/// - TEXT: `0x03`, the byte length (4 bytes) and the bytes as stored (BINARY collation: equal
///   text is equal bytes; TEXT is never equal to a BLOB or a number, so `'1'`, `1` and `x'31'`
///   differ);
/// - BLOB: `0x04`, the byte length and the bytes.
/// A key given as a value to another key is a BLOB like any other (keys of more values than one
/// call takes are nested: `expression`).
enum IdentityKey {
    /// SQL function name.
    static let name = "usm_idkey"
    /// Values one call takes at most (untrusted connections allow 127 arguments: `usm_untrusted`).
    static let maxArguments = 100

    /// `SQLITE_TRANSIENT`: SQLite copies the result before the call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Registers `usm_idkey` on `db`.
    static func register(_ db: Database) throws {
        guard let connection = db.sqliteConnection else { return }
        let rc = sqlite3_create_function_v2(
            connection, name, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, argc, argv in IdentityKey.call(context, argc, argv) }, nil, nil, nil)
        guard rc == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "cannot register \(name)")
        }
    }

    /// The SQL expression of the key of `values` (SQL expressions), calls nested by `maxArguments`.
    static func expression(_ values: [String]) -> String {
        guard values.count > maxArguments else { return "\(name)(\(values.joined(separator: ", ")))" }
        let chunks = stride(from: 0, to: values.count, by: maxArguments).map {
            expression(Array(values[$0..<min($0 + maxArguments, values.count)]))
        }
        return expression(chunks)
    }

    private static func call(
        _ context: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?
    ) {
        var out: [UInt8] = []
        out.reserveCapacity(16 * Int(max(argc, 1)))
        if let argv {
            for i in 0..<Int(max(argc, 0)) {
                guard append(argv[i], to: &out) else {
                    sqlite3_result_error_toobig(context)
                    return
                }
            }
        }
        out.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, bytes.count > 0 {
                sqlite3_result_blob(context, base, Int32(bytes.count), transient)
            } else {
                sqlite3_result_zeroblob(context, 0)
            }
        }
    }

    /// Appends the encoding of `value`; false when the key would pass 2 GiB.
    private static func append(_ value: OpaquePointer?, to out: inout [UInt8]) -> Bool {
        switch sqlite3_value_type(value) {
        case SQLITE_NULL:
            out.append(0)
        case SQLITE_INTEGER:
            appendInteger(sqlite3_value_int64(value), to: &out)
        case SQLITE_FLOAT:
            let d = sqlite3_value_double(value)
            // -0x1p63 ... 0x1p63 (excluded): the doubles an Int64 holds; -0.0 is the integer 0.
            if d.rounded(.towardZero) == d, d >= -0x1p63, d < 0x1p63 {
                appendInteger(Int64(d), to: &out)
            } else {
                out.append(2)
                appendBigEndian(d.bitPattern, to: &out)
            }
        case SQLITE_TEXT:
            // The stored bytes (`sqlite3_value_blob` does not convert): within one database
            // every TEXT value is in its encoding.
            return appendBytes(tag: 3, value, to: &out)
        default:
            return appendBytes(tag: 4, value, to: &out)
        }
        return true
    }

    private static func appendInteger(_ i: Int64, to out: inout [UInt8]) {
        out.append(1)
        appendBigEndian(UInt64(bitPattern: i), to: &out)
    }

    private static func appendBigEndian(_ v: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    private static func appendBytes(tag: UInt8, _ value: OpaquePointer?, to out: inout [UInt8]) -> Bool {
        let pointer = sqlite3_value_blob(value)
        let count = Int(sqlite3_value_bytes(value))
        guard out.count + count + 5 < Int(Int32.max) else { return false }
        out.append(tag)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: count >> shift)) }
        if count > 0, let pointer {
            out.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: count))
        }
        return true
    }
}
