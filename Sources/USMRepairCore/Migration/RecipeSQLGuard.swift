import Foundation
import GRDB
import GRDBSQLite

/// What a recipe's SQL may do: change the staged store, read the source, nothing else. A recipe
/// is outside input (a file the user names, maybe from someone else), so on the connection that
/// runs it:
/// 1. no further database can be attached (`SQLITE_LIMIT_ATTACHED` 0: `ATTACH` and
///    `VACUUM INTO` fail; `DETACH` then `ATTACH` too), and the authorizer denies `ATTACH`,
///    `DETACH`, transaction and savepoint statements (the recipe runs inside the engine's one
///    transaction), pragmas that point SQLite at other files or change process-wide state, any
///    change to `src` (the source is read-only), and `load_extension`;
/// 2. each statement runs under a deadline (a progress handler interrupts it), so an endless
///    recursive query ends as `recipe-failed`, naming the step.
/// The authorizer replaces GRDB's own on this connection for the rest of the session (GRDB uses
/// it to track schema changes and savepoints, so the session clears GRDB's schema cache after each
/// step and never uses savepoints); the connection is closed with the session.
final class RecipeSQLGuard {
    /// Why the last statement was denied, for the message.
    private(set) var denied: String?
    private var deadline = Date.distantFuture
    private(set) var timedOut = false
    /// True while a recipe's statements are prepared and run: the engine's own statements (its
    /// commit or rollback included) are never denied.
    private var active = false

    /// Pragmas a recipe may not run: they name other files, or change what every connection of
    /// the process does.
    static let deniedPragmas: Set<String> = [
        "temp_store_directory", "data_store_directory", "journal_mode", "locking_mode", "wal_autocheckpoint",
        "query_only", "writable_schema", "trusted_schema", "mmap_size", "soft_heap_limit", "hard_heap_limit", "threads",
    ]

    /// Installs the guard on `db` (once per session connection).
    func install(on db: Database) {
        let connection = db.sqliteConnection
        sqlite3_limit(connection, SQLITE_LIMIT_ATTACHED, 0)
        let me = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_set_authorizer(
            connection,
            { me, action, a, b, c, _ in
                Unmanaged<RecipeSQLGuard>.fromOpaque(me!).takeUnretainedValue().authorize(action, a, b, c)
            }, me)
        sqlite3_progress_handler(
            connection, 10_000,
            { me in
                Unmanaged<RecipeSQLGuard>.fromOpaque(me!).takeUnretainedValue().interrupt() ? 1 : 0
            }, me)
    }

    /// Starts the deadline of one step.
    func start(timeout: Double) {
        deadline = Date().addingTimeInterval(timeout)
        timedOut = false
        denied = nil
        active = true
    }

    /// Ends the step: the engine's own statements run without deadline or denial.
    func stop() {
        deadline = .distantFuture
        active = false
    }

    private func interrupt() -> Bool {
        guard Date() >= deadline else { return false }
        timedOut = true
        return true
    }

    private func authorize(
        _ action: Int32, _ a: UnsafePointer<CChar>?, _ b: UnsafePointer<CChar>?, _ c: UnsafePointer<CChar>?
    ) -> Int32 {
        guard active else { return SQLITE_OK }
        func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        func deny(_ why: String) -> Int32 {
            denied = why
            return SQLITE_DENY
        }
        switch action {
        case SQLITE_ATTACH: return deny("ATTACH opens another file; a recipe works on the store and its source only")
        case SQLITE_DETACH: return deny("DETACH is not allowed in a recipe")
        case SQLITE_TRANSACTION, SQLITE_SAVEPOINT:
            return deny("a recipe runs inside the migration's one transaction; it cannot begin, end or save one")
        case SQLITE_PRAGMA where Self.deniedPragmas.contains(text(a).lowercased()):
            return deny("PRAGMA \(text(a)) is not allowed in a recipe")
        case SQLITE_FUNCTION
        where ["load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"].contains(text(b).lowercased()):
            return deny("the function \(text(b)) is not allowed in a recipe")
        case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE, SQLITE_DROP_TABLE, SQLITE_DROP_INDEX, SQLITE_DROP_TRIGGER,
            SQLITE_DROP_VIEW,
            SQLITE_ALTER_TABLE, SQLITE_REINDEX, SQLITE_ANALYZE:
            // The database name is the third argument for these (the second for ALTER TABLE).
            let database = action == SQLITE_ALTER_TABLE ? text(a) : text(c)
            return database.lowercased() == "src" ? deny("it changes the source (src), which is read-only") : SQLITE_OK
        case SQLITE_CREATE_TABLE, SQLITE_CREATE_INDEX, SQLITE_CREATE_TRIGGER, SQLITE_CREATE_VIEW:
            return text(c).lowercased() == "src" ? deny("it changes the source (src), which is read-only") : SQLITE_OK
        default:
            return SQLITE_OK
        }
    }
}
