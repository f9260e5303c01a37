import CDigest
import Foundation
import GRDB

/// Creating and opening the staged store: a whole-store copy (the `ios` strategy), a copy of the
/// schema and bookkeeping rows without data (`none`, and `copy-entities` into a new store), and
/// connections with a bounded page cache, so memory stays flat whatever the store's size.
public enum StagedStore {
    /// Page cache per connection, KiB (as `StoreInspector`).
    static let cacheKiB = 2048

    /// A connection to `url` with the page cache capped and memory-mapping off.
    static func open(_ url: URL, readonly: Bool = false) throws -> DatabaseQueue {
        var config = Configuration()
        config.readonly = readonly
        config.label = "usm-repair.migrate"
        // The engine reads a private copy on two connections at once (the content digests while
        // the strategy runs); one of them may find the other rebuilding the copy's WAL index.
        config.busyMode = .timeout(30)
        // A store read is a stranger's; a store written here takes a stranger's schema and rows:
        // both guarded, only reads on a step budget.
        UntrustedDatabase.configure(
            &config, bytes: readonly ? UntrustedDatabase.storeBytes(url.path) : 0, budgeted: readonly)
        let cache = cacheKiB
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(cache)")
            try db.execute(sql: "PRAGMA mmap_size = 0")
            if let connection = db.sqliteConnection {
                let rc = usm_register_digest(UnsafeMutableRawPointer(connection))
                if rc != 0 {
                    throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "cannot register usm_digest")
                }
            }
        }
        return try DatabaseQueue(path: url.path, configuration: config)
    }

    /// Sets the journal mode of the connection's store and checks that SQLite did: it answers a
    /// switch it could not make (a write the file system refused) with the old mode, not an error.
    static func setJournalMode(_ db: Database, _ mode: String) throws {
        let now = try String.fetchOne(db, sql: "PRAGMA journal_mode = \(mode)")
        guard now?.uppercased() == mode.uppercased() else {
            throw DatabaseError(
                resultCode: .SQLITE_IOERR,
                message: "SQLite could not put the store in \(mode) journal mode (it stayed \(now ?? "unknown"))")
        }
    }

    /// Translates an SQLite error on the staged store: a full, read-only or unwritable folder is a
    /// write failure (exit 74), anything else stays an SQLite error.
    public static func wrapWrite(_ error: any Error, path: URL) -> USMError {
        if let error = error as? DatabaseError {
            let primary = error.resultCode.primaryResultCode
            let folder = path.deletingLastPathComponent().path
            if primary == .SQLITE_FULL { return .outOfSpace(path: folder, reason: "SQLite found the disk full") }
            if [.SQLITE_IOERR, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_PERM].contains(primary) {
                return USMError.writeFailed(path: folder, reason: error.message ?? "\(error)").diagnosingSpace()
            }
        }
        return USMError.wrap(error, path: path.path).diagnosingSpace()
    }

    /// Copies the whole store at `source` (a private copy; its `-wal` is read through SQLite) to a
    /// new file `destination` with SQLite's backup API: every page, history and CloudKit tables
    /// included, page size, auto-vacuum and encoding kept. The copy is left in rollback-journal mode
    /// until the engine finishes it.
    public static func copyWhole(from source: URL, to destination: URL) throws {
        do {
            let input = try open(source, readonly: true)
            defer { try? input.close() }
            let output = try open(destination)
            defer { try? output.close() }
            try input.backup(to: output)
            try output.writeWithoutTransaction { db in try setJournalMode(db, "DELETE") }
        } catch {
            throw wrapWrite(error, path: destination)
        }
    }

    /// Writes a new store at `destination` with the source's schema (tables, indexes, triggers,
    /// views, each checked to be one `CREATE` statement), its page size, auto-vacuum mode and text
    /// encoding, and its `Z_PRIMARYKEY`, `Z_METADATA` and `Z_MODELCACHE` rows, and no other row.
    /// Costs the same at any store size: nothing is copied but the schema.
    /// - Parameter keepCounters: keep the source's `Z_MAX` of every entity, user and system alike:
    ///   rows copied later follow with their keys, and the counters of entities whose rows are left
    ///   out do not drop (Core Data's key generator only raises them). Otherwise every `Z_MAX` is 0.
    public static func cloneSchema(from source: URL, to destination: URL, keepCounters: Bool) throws {
        let input = try open(source, readonly: true)
        defer { try? input.close() }
        let (pragmas, statements) = try input.read {
            db -> ([String: String], [(type: String, name: String, sql: String)]) in
            var pragmas: [String: String] = [:]
            for name in ["page_size", "auto_vacuum", "encoding"] {
                pragmas[name] = try String.fetchOne(db, sql: "PRAGMA \(name)")
            }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
                    ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid
                    """)
            return (
                pragmas,
                rows.compactMap { row in
                    guard let type = String.fromDatabaseValue(row["type"] as DatabaseValue),
                        let name = String.fromDatabaseValue(row["name"] as DatabaseValue),
                        let sql = String.fromDatabaseValue(row["sql"] as DatabaseValue)
                    else { return nil }
                    return (type, name, sql)
                }
            )
        }
        if let reason = SchemaDefinition.audit(statements.map { ($0.type, $0.name, $0.sql) }) {
            throw USMError.hostileSchema(path: source.path, reason: reason)
        }
        do {
            let output = try open(destination)
            defer { try? output.close() }
            try output.writeWithoutTransaction { db in
                if let size = pragmas["page_size"].flatMap(Int.init) {
                    try db.execute(sql: "PRAGMA page_size = \(size)")
                }
                if let vacuum = pragmas["auto_vacuum"].flatMap(Int.init) {
                    try db.execute(sql: "PRAGMA auto_vacuum = \(vacuum)")
                }
                if let encoding = pragmas["encoding"], ["UTF-8", "UTF-16le", "UTF-16be"].contains(encoding) {
                    try db.execute(sql: "PRAGMA encoding = \(SQLName.literal(encoding))")
                }
                try setJournalMode(db, "DELETE")
                try db.inTransaction {
                    for statement in statements {
                        try validate(db, statement, path: source.path)
                        try SchemaDefinition.execute(db, statement.sql, type: statement.type)
                    }
                    try UntrustedDatabase.attaching(db) {
                        try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [source.path])
                    }
                    for table in ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"] {
                        guard
                            let name = statements.first(where: { $0.type == "table" && $0.name.uppercased() == table })?
                                .name
                        else { continue }
                        try db.execute(
                            sql: "INSERT INTO main.\(name.sqlIdentifier) SELECT * FROM src.\(name.sqlIdentifier)")
                    }
                    if !keepCounters { try db.execute(sql: "UPDATE main.Z_PRIMARYKEY SET Z_MAX = 0") }
                    return .commit
                }
                try db.execute(sql: "DETACH DATABASE src")
            }
        } catch {
            throw wrapWrite(error, path: destination)
        }
    }

    /// Refuses schema text that is not one accepted `CREATE` statement of the type `sqlite_master`
    /// says (`SchemaDefinition`): a store can hold any text there, and it is never run unchecked.
    static func validate(_ db: Database, _ statement: (type: String, name: String, sql: String), path: String) throws {
        do {
            _ = try SchemaDefinition.parse(statement.sql, type: statement.type)
        } catch let refusal as SchemaDefinition.Refusal {
            throw USMError.hostileSchema(
                path: path, reason: "\(statement.type) \(statement.name.debugDescription): \(refusal.reason)")
        }
    }
}
