import Foundation
import GRDB

/// Whole-store rewrites on private copies: a compact copy with `VACUUM INTO`, Core Data's
/// triggers taken out around a bulk rewrite, and a copy without rows. Used by `archive --redact`
/// and `--metadata-only`, and by the migration strategies that copy whole stores or schemas.
/// Nothing here ever opens a user's file for writing.
public enum StoreRewrite {
    /// A trigger taken out of a store, to be put back after a rewrite.
    public struct Trigger: Sendable, Equatable {
        public let name: String
        /// The `CREATE TRIGGER` statement, exactly as `sqlite_master` holds it.
        public let sql: String
    }

    /// `VACUUM INTO` a fresh database at `destination` (which must not exist), read through a
    /// read-only connection to `source`: a consistent, compact copy without free pages, in the
    /// journal mode `journalMode` (`DELETE` or `WAL`). The source's page size, auto-vacuum mode
    /// and text encoding are kept (VACUUM INTO keeps them).
    public static func vacuumInto(source: URL, to destination: URL, journalMode: String = "DELETE") throws {
        var config = Configuration()
        config.readonly = true
        config.label = "usm-repair.vacuum-into"
        UntrustedDatabase.configure(&config, bytes: UntrustedDatabase.storeBytes(source.path))
        let queue = try DatabaseQueue(path: source.path, configuration: config)
        do {
            try queue.writeWithoutTransaction { db in
                // The schema is checked before it is copied; VACUUM INTO attaches its output.
                if let reason = try SchemaDefinition.audit(db) {
                    throw USMError.hostileSchema(path: source.path, reason: reason)
                }
                try UntrustedDatabase.attaching(db) {
                    try db.execute(sql: "VACUUM INTO ?", arguments: [destination.path])
                }
            }
            try queue.close()
        } catch {
            try? queue.close()
            throw error
        }
        let output = try openCopy(destination)
        defer { try? output.close() }
        try output.writeWithoutTransaction { db in
            try StagedStore.setJournalMode(db, journalMode == "WAL" ? "WAL" : "DELETE")
        }
    }

    /// A connection writing `url`, a copy of a stranger's store: guarded as an input, no step budget.
    static func openCopy(_ url: URL) throws -> DatabaseQueue {
        var config = Configuration()
        UntrustedDatabase.configure(&config, bytes: 0, budgeted: false)
        return try DatabaseQueue(path: url.path, configuration: config)
    }

    /// Core Data's triggers (derived attributes, persistent history, CloudKit) call SQL functions
    /// only Core Data defines, so rewriting rows with them in place fails. This takes every trigger
    /// out and returns them, each checked to be exactly one `CREATE TRIGGER` statement, so that
    /// putting them back runs nothing else. Call it inside a transaction.
    /// - Throws: `USMError.sqlite` naming the trigger when its text is anything else (a store can hold
    ///   any text in `sqlite_master`; it is never executed unchecked).
    public static func dropTriggers(_ db: Database, path: String) throws -> [Trigger] {
        let rows = try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        var triggers: [Trigger] = []
        for row in rows {
            guard let name = String.fromDatabaseValue(row["name"] as DatabaseValue),
                let sql = String.fromDatabaseValue(row["sql"] as DatabaseValue)
            else {
                throw USMError.sqlite(
                    path: path, code: 1, message: "a trigger in sqlite_master has no name or no SQL text")
            }
            triggers.append(Trigger(name: name, sql: sql))
        }
        for trigger in triggers {
            try db.execute(sql: "DROP TRIGGER \(trigger.name.sqlIdentifier)")
            try validate(db, trigger, path: path)
        }
        return triggers
    }

    /// Puts back triggers taken out by `dropTriggers`, one prepared statement each.
    public static func restoreTriggers(_ db: Database, _ triggers: [Trigger], path: String) throws {
        for trigger in triggers {
            try validate(db, trigger, path: path)
            try SchemaDefinition.execute(db, trigger.sql, type: "trigger")
        }
    }

    /// Refuses trigger text that is not one `CREATE TRIGGER` statement (`SchemaDefinition`).
    static func validate(_ db: Database, _ trigger: Trigger, path: String) throws {
        do {
            _ = try SchemaDefinition.parse(trigger.sql, type: "trigger")
        } catch let refusal as SchemaDefinition.Refusal {
            throw USMError.hostileSchema(
                path: path,
                reason: "trigger \(trigger.name.debugDescription): \(refusal.reason); refusing to execute its text")
        }
        // One statement (parsed above): preparing it compiles it against this schema and runs nothing.
        do {
            _ = try db.makeStatement(sql: trigger.sql)
        } catch let error as DatabaseError {
            throw USMError.hostileSchema(
                path: path,
                reason:
                    "trigger \(trigger.name.debugDescription) is not a statement SQLite can compile (\(error.message ?? "\(error)")); refusing to execute its text"
            )
        }
    }

    /// Writes a copy of the store open at `source` with the schema, metadata, model cache and
    /// key counters and no rows: what `archive --metadata-only` bundles, and the empty store of
    /// the `none` strategy. Free pages are zeroed (secure_delete) and vacuumed away.
    public static func withoutRows(source: URL, to destination: URL, journalMode: String = "DELETE") throws {
        try vacuumInto(source: source, to: destination)
        let queue = try openCopy(destination)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.inTransaction {
                let triggers = try dropTriggers(db, path: destination.path)
                let keep: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
                let tables = try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                for table in tables where !keep.contains(table.uppercased()) {
                    try db.execute(sql: "DELETE FROM \(table.sqlIdentifier)")
                }
                try restoreTriggers(db, triggers, path: destination.path)
                return .commit
            }
            // VACUUM attaches its own temporary database.
            try UntrustedDatabase.attaching(db) { try db.execute(sql: "VACUUM") }
            if journalMode == "WAL" { try StagedStore.setJournalMode(db, "WAL") }
        }
    }
}
