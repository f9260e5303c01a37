import Foundation
import GRDB
import GRDBSQLite

/// Writes the salvaged rows into a new store in a private scratch folder (the migration engine
/// then builds the result from it, as from any healthy store): tables first, rows as the reader
/// hands them over (bound straight from the damaged file's bytes, each row once), indexes,
/// views and triggers last, so loading never fires a Core Data trigger and indexes are built once.
final class SalvageWriter: RowSink {
    /// `SQLITE_TRANSIENT`: SQLite copies a bound value before the call returns.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    private let db: Database
    private let connection: OpaquePointer
    let encoding: DatabaseHeader.TextEncoding
    /// The tables, in the order the reader indexes them.
    private(set) var tables: [SalvageTable] = []
    private var names: [String] = []
    private var keyName: [String] = []
    /// Insert statements by table and number of values.
    private var inserts: [Int: [Int: OpaquePointer]] = [:]
    /// The first error SQLite gave on a write, kept to be thrown once the reader returns.
    private(set) var failure: (any Error)?

    /// Prepares the empty store on `db`: page size, auto-vacuum and encoding of the source, no
    /// journal (a scratch file: a crash leaves nothing anyone reads).
    init(db: Database, pageSize: Int, autoVacuum: Int, encoding: DatabaseHeader.TextEncoding) throws {
        guard let connection = db.sqliteConnection else {
            throw USMError.unexpected("the salvage store has no connection")
        }
        self.db = db
        self.connection = connection
        self.encoding = encoding
        try db.execute(sql: "PRAGMA page_size = \(pageSize)")
        try db.execute(sql: "PRAGMA auto_vacuum = \(autoVacuum)")
        let name =
            switch encoding {
            case .utf8: "UTF-8"
            case .utf16le: "UTF-16le"
            case .utf16be: "UTF-16be"
            }
        try db.execute(sql: "PRAGMA encoding = \(SQLName.literal(name))")
        _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = OFF")
        try db.execute(sql: "PRAGMA synchronous = OFF")
    }

    deinit {
        for byCount in inserts.values { for statement in byCount.values { sqlite3_finalize(statement) } }
    }

    /// Creates the tables of `rows` (each checked to be one `CREATE TABLE`) and returns what was
    /// left out and why. Tables are indexed in the order given.
    func createTables(_ rows: [SchemaRow], roots: [String: UInt32]) throws -> [String] {
        var skipped: [String] = []
        for row in rows where row.type == "table" {
            guard let sql = row.sql, !row.name.lowercased().hasPrefix("sqlite_") else { continue }
            guard (try? SchemaDefinition.parse(sql, type: "table"))?.kind == .table else {
                skipped.append(
                    "\(row.name): its statement is not a plain CREATE TABLE (a virtual table?); not salvaged")
                continue
            }
            if sql.uppercased().replacingOccurrences(of: " ", with: "").contains("WITHOUTROWID") {
                skipped.append("\(row.name): a WITHOUT ROWID table; not salvaged")
                continue
            }
            try SchemaDefinition.execute(db, sql, type: "table")
            let info = try Row.fetchAll(
                db, sql: "SELECT name, type, pk FROM pragma_table_info(?)", arguments: [row.name])
            let columns = info.map {
                SalvageTable.Column(name: $0["name"] ?? "", affinity: .init(declared: $0["type"] ?? ""))
            }
            let keys = info.enumerated().filter { (($0.element["pk"] as Int?) ?? 0) > 0 }
            let rowid =
                keys.count == 1 && ((keys[0].element["type"] as String?) ?? "").uppercased() == "INTEGER"
                ? keys[0].offset : nil
            tables.append(SalvageTable(name: row.name, columns: columns, rowidColumn: rowid, root: roots[row.name]))
            names.append(row.name)
            let lower = Set(columns.map { $0.name.lowercased() })
            keyName.append(["rowid", "_rowid_", "oid"].first { !lower.contains($0) } ?? "rowid")
        }
        return skipped
    }

    /// Creates the indexes, views and triggers of `rows` once the rows are in; returns those that
    /// could not be made (a unique index the salvaged rows break is made after the later
    /// duplicates are removed, which are counted in `removed`).
    func finish(_ rows: [SchemaRow], removed: inout [String: Int]) throws -> [String] {
        var skipped: [String] = []
        let order = ["index", "view", "trigger"]
        for type in order {
            for row in rows where row.type == type {
                guard let sql = row.sql, !row.name.lowercased().hasPrefix("sqlite_") else { continue }
                guard
                    names.contains(where: { $0.caseInsensitiveCompare(row.tableName) == .orderedSame })
                        || type == "view"
                else {
                    skipped.append("\(type) \(row.name): its table \(row.tableName) was not salvaged")
                    continue
                }
                do {
                    try SchemaDefinition.execute(db, sql, type: row.type)
                } catch let error as DatabaseError
                    where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT && type == "index"
                {
                    // A uniqueness constraint two salvaged rows break: the later rows go, counted.
                    if try removeDuplicates(row, removed: &removed) > 0 {
                        do {
                            try SchemaDefinition.execute(db, sql, type: row.type)
                            continue
                        } catch let again as DatabaseError
                            where again.resultCode.primaryResultCode == .SQLITE_CONSTRAINT
                        {}
                    }
                    skipped.append("index \(row.name): \(error.message ?? "constraint failed")")
                } catch let error as DatabaseError where error.resultCode.primaryResultCode != .SQLITE_ERROR {
                    // A full disk, an I/O error, no memory: the salvage fails (74, 75), never a
                    // statement left out as if it did not fit the salvaged tables.
                    throw error
                } catch {
                    skipped.append("\(type) \(row.name): \(USMError.wrap(error).message)")
                }
            }
        }
        return skipped
    }

    /// Removes the rows that break unique index `row` (all but the first of each group), from
    /// its column list as `pragma_index_info` gives it after a trial creation under another name.
    private func removeDuplicates(_ row: SchemaRow, removed: inout [String: Int]) throws -> Int {
        guard let sql = row.sql else { return 0 }
        let probe = "usm_salvage_probe_index"
        // The index's columns, read from a non-unique twin.
        guard let on = sql.range(of: " ON ", options: .caseInsensitive) else { return 0 }
        try db.execute(sql: "CREATE INDEX \(probe.sqlIdentifier)\(sql[on.lowerBound...])")
        defer { try? db.execute(sql: "DROP INDEX IF EXISTS \(probe.sqlIdentifier)") }
        let columns = try String.fetchAll(
            db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [probe])
        guard !columns.isEmpty, columns.allSatisfy({ !$0.isEmpty }) else { return 0 }
        let table = row.tableName.sqlIdentifier
        let list = columns.map(\.sqlIdentifier).joined(separator: ", ")
        let nonNull = columns.map { "\($0.sqlIdentifier) IS NOT NULL" }.joined(separator: " AND ")
        try db.execute(
            sql: """
                DELETE FROM \(table) WHERE rowid NOT IN (SELECT MIN(rowid) FROM \(table) GROUP BY \(list))
                  AND \(nonNull)
                """)
        let count = db.changesCount
        if count > 0 { removed[row.tableName, default: 0] += count }
        return count
    }

    // MARK: - RowSink

    func store(table: Int, rowid: Int64, fields: [FieldValue], record: ByteView, orphan: UInt32?) -> SinkOutcome {
        guard table >= 0, table < tables.count, let statement = insert(table, values: fields.count) else {
            return .refused
        }
        let info = tables[table]
        var parameter: Int32 = 1
        if info.rowidColumn == nil {
            sqlite3_bind_int64(statement, parameter, rowid)
            parameter += 1
        }
        for (i, value) in fields.enumerated() {
            if i == info.rowidColumn {
                sqlite3_bind_int64(statement, parameter, rowid)
            } else {
                bind(value, statement, parameter, record)
            }
            parameter += 1
        }
        let rc = sqlite3_step(statement)
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        if rc == SQLITE_DONE { return .stored }
        if rc & 0xFF == SQLITE_CONSTRAINT {
            return same(table, rowid: rowid, fields: fields, record: record) ? .duplicate : .conflict
        }
        if failure == nil {
            failure = DatabaseError(
                resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(connection)))
        }
        return .refused
    }

    func remove(table: Int, range: ClosedRange<Int64>) -> Int {
        guard table >= 0, table < tables.count else { return 0 }
        do {
            try db.execute(
                sql: "DELETE FROM \(names[table].sqlIdentifier) WHERE \(keyName[table]) BETWEEN ? AND ?",
                arguments: [range.lowerBound, range.upperBound])
            return db.changesCount
        } catch {
            if failure == nil { failure = error }
            return 0
        }
    }

    /// The insert statement of `table` for rows of `count` values (rows written before a column
    /// was added hold fewer; SQLite gives the others their default).
    private func insert(_ table: Int, values count: Int) -> OpaquePointer? {
        if let statement = inserts[table]?[count] { return statement }
        let info = tables[table]
        guard count <= info.columns.count else { return nil }
        var columns = info.columns.prefix(count).map { $0.name.sqlIdentifier }
        if info.rowidColumn == nil { columns.insert(keyName[table], at: 0) }
        let sql =
            "INSERT INTO \(info.name.sqlIdentifier) (\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))"
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            if failure == nil {
                failure = DatabaseError(
                    resultCode: .SQLITE_ERROR, message: String(cString: sqlite3_errmsg(connection)), sql: sql)
            }
            return nil
        }
        inserts[table, default: [:]][count] = statement
        return statement
    }

    private func bind(_ value: FieldValue, _ statement: OpaquePointer, _ index: Int32, _ record: ByteView) {
        switch value {
        case .null:
            sqlite3_bind_null(statement, index)
        case let .integer(n):
            sqlite3_bind_int64(statement, index, n)
        case let .real(x):
            sqlite3_bind_double(statement, index, x)
        case let .text(range):
            let base = record.base.baseAddress.map { $0 + range.lowerBound }
            let encoding: UInt8 =
                switch self.encoding {
                case .utf8: UInt8(SQLITE_UTF8)
                case .utf16le: UInt8(SQLITE_UTF16LE)
                case .utf16be: UInt8(SQLITE_UTF16BE)
                }
            sqlite3_bind_text64(
                statement, index, (base ?? UnsafeRawPointer(bitPattern: 1))?.assumingMemoryBound(to: CChar.self),
                sqlite3_uint64(range.count), Self.transient, encoding)
        case let .blob(range):
            // A zero-length blob still binds as a blob, never as NULL.
            if range.isEmpty {
                sqlite3_bind_zeroblob(statement, index, 0)
            } else {
                sqlite3_bind_blob64(
                    statement, index, record.base.baseAddress.map { $0 + range.lowerBound },
                    sqlite3_uint64(range.count),
                    Self.transient)
            }
        }
    }

    /// True when the row already stored under `rowid` holds exactly these values.
    private func same(_ table: Int, rowid: Int64, fields: [FieldValue], record: ByteView) -> Bool {
        let info = tables[table]
        let columns = info.columns.map { $0.name.sqlIdentifier }.joined(separator: ", ")
        guard
            let row = try? Row.fetchOne(
                db, sql: "SELECT \(columns) FROM \(info.name.sqlIdentifier) WHERE \(keyName[table]) = ?",
                arguments: [rowid])
        else { return false }
        for i in 0..<info.columns.count {
            let stored: DatabaseValue = row[i]
            let value: FieldValue = i < fields.count ? fields[i] : .null
            if i == info.rowidColumn { continue }
            switch (value, stored.storage) {
            case (.null, .null): continue
            case let (.integer(a), .int64(b)) where a == b: continue
            case let (.real(a), .double(b)) where a.bitPattern == b.bitPattern: continue
            case let (.text(range), .string(s)):
                if FieldText.string(.text(range), in: record, encoding: encoding) == s { continue }
                return false
            case let (.blob(range), .blob(data)):
                if let bytes = record.slice(range), bytes.count == data.count, data.elementsEqual(bytes.base) {
                    continue
                }
                return false
            default:
                return false
            }
        }
        return true
    }
}
