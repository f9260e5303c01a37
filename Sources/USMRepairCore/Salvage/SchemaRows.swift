import Foundation

/// One row of `sqlite_schema`: what the result is built from.
struct SchemaRow: Sendable, Equatable {
    /// `table`, `index`, `view` or `trigger`.
    let type: String
    let name: String
    let tableName: String
    /// The root page in the file it was read from (0 for views and triggers).
    let rootPage: UInt32
    /// The `CREATE` statement; nil for indexes SQLite makes itself (`sqlite_autoindex_...`).
    let sql: String?

    /// The types a schema row may have.
    static let types: Set<String> = ["table", "index", "view", "trigger"]

    /// The statement of a bookkeeping table Core Data always declares the same way, for a store
    /// whose own schema row for it was lost.
    static func bookkeeping(_ name: String) -> SchemaRow? {
        let sql: String? =
            switch name {
            case "Z_PRIMARYKEY":
                "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)"
            case "Z_METADATA":
                "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)"
            case "Z_MODELCACHE": "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)"
            default: nil
            }
        return sql.map { SchemaRow(type: "table", name: name, tableName: name, rootPage: 0, sql: $0) }
    }
}

/// Text of a decoded record, in the database's encoding.
enum FieldText {
    /// The text (or blob bytes read as text) of `value`, nil for numbers and NULL.
    static func string(_ value: FieldValue, in record: ByteView, encoding: DatabaseHeader.TextEncoding) -> String? {
        let range: Range<Int>
        switch value {
        case let .text(r), let .blob(r): range = r
        default: return nil
        }
        guard let bytes = record.slice(range) else { return nil }
        switch encoding {
        case .utf8:
            return String(decoding: bytes.base, as: UTF8.self)
        case .utf16le, .utf16be:
            var units: [UInt16] = []
            units.reserveCapacity(bytes.count / 2)
            var i = 0
            while i + 1 < bytes.count {
                let a = UInt16(bytes.base[i])
                let b = UInt16(bytes.base[i + 1])
                units.append(encoding == .utf16le ? a | b << 8 : a << 8 | b)
                i += 2
            }
            return String(decoding: units, as: UTF16.self)
        }
    }

    /// The integer of `value`, nil for anything else.
    static func integer(_ value: FieldValue) -> Int64? {
        if case let .integer(n) = value { return n }
        return nil
    }
}

/// Collects the rows of `sqlite_schema` as the walk (or the scan) hands them over: a few
/// hundred rows at most, kept in memory.
final class SchemaCollector: RowSink {
    let encoding: DatabaseHeader.TextEncoding
    private(set) var rows: [Int64: SchemaRow] = [:]
    /// Rows read intact whose content is not a schema row (an unknown type, a name missing).
    private(set) var malformed = 0
    /// Bytes of schema text kept; past `SchemaDefinition.maxSchemaBytes` no more is kept and
    /// `overLimit` is set (the schema is refused), so memory stays bounded whatever the pages hold.
    private(set) var textBytes = 0
    private(set) var overLimit = false

    init(encoding: DatabaseHeader.TextEncoding) {
        self.encoding = encoding
    }

    func store(table: Int, rowid: Int64, fields: [FieldValue], record: ByteView, orphan: UInt32?) -> SinkOutcome {
        guard fields.count == 5, let type = FieldText.string(fields[0], in: record, encoding: encoding),
            SchemaRow.types.contains(type),
            let name = FieldText.string(fields[1], in: record, encoding: encoding), !name.isEmpty,
            let tableName = FieldText.string(fields[2], in: record, encoding: encoding),
            let root = FieldText.integer(fields[3]) ?? (fields[3] == .null ? 0 : nil), root >= 0,
            root <= Int64(UInt32.max)
        else {
            malformed += 1
            return .refused
        }
        let sql = FieldText.string(fields[4], in: record, encoding: encoding)
        textBytes += (sql?.utf8.count ?? 0) + name.utf8.count + tableName.utf8.count
        guard textBytes <= SchemaDefinition.maxSchemaBytes else {
            overLimit = true
            return .refused
        }
        let row = SchemaRow(type: type, name: name, tableName: tableName, rootPage: UInt32(root), sql: sql)
        if let existing = rows[rowid] { return existing == row ? .duplicate : .conflict }
        rows[rowid] = row
        return .stored
    }

    func remove(table: Int, range: ClosedRange<Int64>) -> Int {
        let doomed = rows.keys.filter { range.contains($0) }
        for key in doomed { rows[key] = nil }
        return doomed.count
    }

    /// The rows in key order.
    var ordered: [SchemaRow] { rows.sorted { $0.key < $1.key }.map(\.value) }
}
