import Foundation
import GRDB
import GRDBSQLite

/// Reading values out of a store whose types and sizes cannot be trusted. Any column may hold any
/// storage class in SQLite, and GRDB traps when `row["col"] as T` cannot convert, so values are
/// taken as `DatabaseValue` and converted here; TEXT and BLOB values are read under a size limit so
/// that a value of hundreds of megabytes is measured, not loaded.
enum BoundedRead {
    /// One value read under a limit.
    enum Value: Equatable {
        /// The value (NULL included).
        case value(DatabaseValue)
        /// A TEXT or BLOB longer than the limit; its size in bytes when SQLite knows it without
        /// loading it (blobs).
        case tooLarge(type: String, bytes: Int64?)
    }

    /// The value of `column` in the first row of `table` (nil when the table is empty), read only
    /// when it is at most `limit` bytes. `length()` of a blob and `typeof()` never load the value;
    /// the fetch itself runs under SQLite's length limit, so oversized text fails instead of loading.
    static func first(_ db: Database, column: String, table: String, limit: Int) throws -> Value? {
        let c = column.sqlIdentifier
        let probe = """
            SELECT typeof(\(c)), CASE WHEN typeof(\(c)) = 'blob' THEN length(\(c)) END,
                   CASE WHEN typeof(\(c)) IN ('integer', 'real') THEN \(c) END
            FROM \(table.sqlIdentifier) LIMIT 1
            """
        guard let row = try Row.fetchOne(db, sql: probe) else { return nil }
        let type = String.fromDatabaseValue(row[0] as DatabaseValue) ?? "null"
        switch type {
        case "integer", "real":
            return .value(row[2] as DatabaseValue)
        case "text", "blob":
            let bytes = (row[1] as DatabaseValue).storedInt64
            if let bytes, bytes > limit { return .tooLarge(type: type, bytes: bytes) }
            do {
                let value = try db.withValueLimit(limit) {
                    try DatabaseValue.fetchOne(db, sql: "SELECT \(c) FROM \(table.sqlIdentifier) LIMIT 1")
                }
                return .value(value ?? .null)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_TOOBIG {
                return .tooLarge(type: type, bytes: bytes)
            }
        default:
            return .value(.null)
        }
    }

    /// The non-NULL text values of the first column `sql` returns, others left out.
    static func texts(_ db: Database, sql: String) throws -> [String] {
        try DatabaseValue.fetchAll(db, sql: sql).compactMap { $0.isNull ? nil : String.fromDatabaseValue($0) }
    }
}

extension Database {
    /// Runs `body` with SQLite's longest TEXT or BLOB lowered to `bytes`: a longer value that `body`
    /// reads fails with `SQLITE_TOOBIG` instead of being loaded. The previous limit is restored.
    func withValueLimit<T>(_ bytes: Int, _ body: () throws -> T) rethrows -> T {
        let limit = Int32(clamping: max(bytes, 1))
        let previous = sqlite3_limit(sqliteConnection, SQLITE_LIMIT_LENGTH, limit)
        defer { sqlite3_limit(sqliteConnection, SQLITE_LIMIT_LENGTH, previous) }
        return try body()
    }
}

extension DatabaseValue {
    /// The integer when SQLite stores an integer; nil for every other storage class (reals are not
    /// truncated and text is not parsed: Core Data writes bookkeeping numbers as integers).
    var storedInt64: Int64? {
        if case let .int64(value) = storage { value } else { nil }
    }

    /// `storedInt64` as an `Int`.
    var storedInt: Int? { storedInt64.flatMap { Int(exactly: $0) } }

    /// What the value is, for a sentence: `NULL`, `an integer`, `text`, `a blob of 3 bytes`, `the real 1e+300`.
    var kindDescription: String {
        switch storage {
        case .null: "NULL"
        case .int64: "an integer"
        case let .double(value): "the real \(value)"
        case let .string(text): "text of \(text.utf8.count) bytes"
        case let .blob(data): "a blob of \(data.count) bytes"
        }
    }
}
