import CDigest
import Foundation
import GRDB

/// SQLite's guidance for database files from elsewhere, applied to every connection that opens
/// an input store (the store itself, a private copy of it, a sibling given with `--schema-from`,
/// and a store built from its schema): defensive mode, untrusted schema, `cell_size_check`, no
/// memory map, no extension loading, no attached database (the tool's own attach is let through
/// by `attaching`), limits on lengths, and a budget of VM steps proportional to the store's size,
/// past which every statement is interrupted and the store reported as `hostile-schema`.
public enum UntrustedDatabase {
    /// VM steps allowed per byte of the store, and at least.
    public static let stepsPerByte: Int64 = 100
    public static let defaultMinimumSteps: Int64 = 50_000_000

    /// A smaller floor for tests that provoke the budget (the commands run in process): the
    /// budget is hit after a few million steps instead of 50 million. Never set outside tests.
    @TaskLocal public static var minimumStepsOverride: Int64?

    /// The floor of every budget: `defaultMinimumSteps`, or the tests' override.
    public static var minimumSteps: Int64 { minimumStepsOverride ?? defaultMinimumSteps }

    /// The step budget of a store of `bytes` bytes.
    public static func budget(forBytes bytes: Int64) -> Int64 {
        max(
            minimumSteps, bytes.multipliedReportingOverflow(by: stepsPerByte).overflow ? .max : bytes * stepsPerByte)
    }

    /// Size in bytes of `path` and its `-wal` (0 when absent).
    public static func storeBytes(_ path: String) -> Int64 {
        let main = FileStatus.lookup(path).map { Int64($0.size) } ?? 0
        let wal = FileStatus.lookup(path + "-wal").map { Int64($0.size) } ?? 0
        return main + wal
    }

    /// Sets `config` up for an untrusted store of `bytes` bytes. `budgeted` false for a
    /// connection writing a store of ours (its rows come from elsewhere, in any number): no step
    /// budget there, the rest alike.
    public static func configure(_ config: inout Configuration, bytes: Int64, budgeted: Bool = true) {
        let steps = budgeted ? budget(forBytes: bytes) : 0
        // A value cannot be longer than the file holding it; room for the tool's own quote()/hex().
        // A store written here takes values from another (any size it holds): SQLite's own limit.
        let length =
            budgeted ? Int32(clamping: min(Int64(1_000_000_000), max(Int64(16 << 20), bytes * 4))) : 1_000_000_000
        config.prepareDatabase { db in
            guard let connection = db.sqliteConnection else { return }
            let rc = usm_untrusted(UnsafeMutableRawPointer(connection), steps, length)
            guard rc == 0 else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: rc), message: "cannot set the connection up for an untrusted store"
                )
            }
            // The digest and value-identity functions (never in a schema: untrusted schema mode
            // keeps a stranger's expressions from calling them).
            guard usm_register_digest(UnsafeMutableRawPointer(connection)) == 0 else {
                throw DatabaseError(message: "cannot register usm_digest")
            }
            try db.execute(sql: "PRAGMA trusted_schema = OFF")
            try db.execute(sql: "PRAGMA cell_size_check = ON")
            try db.execute(sql: "PRAGMA mmap_size = 0")
        }
    }

    /// Runs `body` (the tool's own `ATTACH` or `VACUUM INTO`) with one more database allowed.
    public static func attaching<T>(_ db: Database, _ body: () throws -> T) rethrows -> T {
        guard let connection = db.sqliteConnection else { return try body() }
        usm_allow_attach(UnsafeMutableRawPointer(connection), 1)
        defer { usm_allow_attach(UnsafeMutableRawPointer(connection), 0) }
        return try body()
    }

    /// Whether `db`'s step budget ran out.
    public static func exhausted(_ db: Database) -> Bool {
        guard let connection = db.sqliteConnection else { return false }
        return usm_budget_exhausted(UnsafeMutableRawPointer(connection)) != 0
    }

    /// True when `error` is SQLite interrupting a statement (the budget, when `exhausted` says so).
    public static func isInterrupt(_ error: any Error) -> Bool {
        (error as? DatabaseError)?.resultCode.primaryResultCode == .SQLITE_INTERRUPT
    }
}
