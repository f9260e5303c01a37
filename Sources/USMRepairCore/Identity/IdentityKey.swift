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

    /// The SQL expression of `usm_idhash` of `values` (a 64-bit hash equal for lists equal under
    /// `IS`, as their keys are; equal hashes prove nothing), calls nested by `maxArguments`.
    static func hashExpression(_ values: [String]) -> String {
        guard values.count > maxArguments else { return "usm_idhash(\(values.joined(separator: ", ")))" }
        return hashExpression(
            stride(from: 0, to: values.count, by: maxArguments).map {
                hashExpression(Array(values[$0..<min($0 + maxArguments, values.count)]))
            })
    }

    private static func call(
        _ context: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?
    ) {
        let values = UnsafeBufferPointer(start: argv, count: argv == nil ? 0 : Int(max(argc, 0)))
        // The size first, then one buffer SQLite takes over (no copy).
        var size = 0
        for value in values {
            switch sqlite3_value_type(value) {
            case SQLITE_NULL: size += 1
            case SQLITE_INTEGER, SQLITE_FLOAT: size += 9
            default:
                // `sqlite3_value_blob` first: the bytes as stored (a TEXT value is not converted;
                // within one database every TEXT value is in its encoding).
                _ = sqlite3_value_blob(value)
                size += 5 + Int(sqlite3_value_bytes(value))
            }
        }
        guard size > 0 else {
            sqlite3_result_zeroblob(context, 0)
            return
        }
        guard size <= Int(Int32.max) else {
            sqlite3_result_error_toobig(context)
            return
        }
        guard let buffer = sqlite3_malloc64(UInt64(size)) else {
            sqlite3_result_error_nomem(context)
            return
        }
        var out = buffer.assumingMemoryBound(to: UInt8.self)
        for value in values {
            switch sqlite3_value_type(value) {
            case SQLITE_NULL:
                out.pointee = 0
                out += 1
            case SQLITE_INTEGER:
                write(tag: 1, UInt64(bitPattern: sqlite3_value_int64(value)), to: &out)
            case SQLITE_FLOAT:
                let d = sqlite3_value_double(value)
                // -0x1p63 ... 0x1p63 (excluded): the doubles an Int64 holds; -0.0 is the integer 0.
                if d.rounded(.towardZero) == d, d >= -0x1p63, d < 0x1p63 {
                    write(tag: 1, UInt64(bitPattern: Int64(d)), to: &out)
                } else {
                    write(tag: 2, d.bitPattern, to: &out)
                }
            default:
                let bytes = sqlite3_value_blob(value)
                let count = Int(sqlite3_value_bytes(value))
                out.pointee = sqlite3_value_type(value) == SQLITE_TEXT ? 3 : 4
                out += 1
                withUnsafeBytes(of: UInt32(count).bigEndian) { length in
                    UnsafeMutableRawPointer(out).copyMemory(from: length.baseAddress!, byteCount: 4)
                }
                out += 4
                if count > 0, let bytes {
                    UnsafeMutableRawPointer(out).copyMemory(from: bytes, byteCount: count)
                    out += count
                }
            }
        }
        sqlite3_result_blob64(context, buffer, UInt64(size), sqlite3_free)
    }

    private static func write(tag: UInt8, _ v: UInt64, to out: inout UnsafeMutablePointer<UInt8>) {
        out.pointee = tag
        withUnsafeBytes(of: v.bigEndian) { bytes in
            UnsafeMutableRawPointer(out + 1).copyMemory(from: bytes.baseAddress!, byteCount: 8)
        }
        out += 9
    }
}
