import CDigest
import Foundation
import GRDB

/// The one transaction in which a strategy changes the staged store: the source's private copy
/// attached read-only as `src`, the staged store as `main`, Core Data's triggers taken out for the
/// duration (they call functions only Core Data defines) and put back, page cache capped. Either
/// everything in the body is committed or nothing is.
public final class MigrationSession {
    let db: Database
    /// The job being run.
    public let job: MigrationJob
    /// The staged store's structure as it was when the session began.
    public let destinationSchema: CoreDataSchema
    /// Whether the staged store already held rows of the destination (a merge).
    public let isMerge: Bool

    /// The guard of recipe SQL, installed on the connection by the first `execute`. It lives as
    /// long as the connection (the session's `run` holds it past closing), since SQLite calls it.
    private let sqlGuard: RecipeSQLGuard
    private var guardInstalled = false

    init(db: Database, job: MigrationJob, destinationSchema: CoreDataSchema, sqlGuard: RecipeSQLGuard) {
        self.sqlGuard = sqlGuard
        self.db = db
        self.job = job
        self.destinationSchema = destinationSchema
        isMerge = job.isMerge
    }

    /// Runs `body` in one transaction on the staged store, the source attached as `src`.
    /// - Throws: what `body` throws (after rolling back); a full or read-only folder as `writeFailed`.
    public static func run<T>(_ job: MigrationJob, _ body: (MigrationSession) throws -> T) throws -> T {
        let sqlGuard = RecipeSQLGuard()
        return try withExtendedLifetime(sqlGuard) { try run(job, sqlGuard: sqlGuard, body) }
    }

    private static func run<T>(_ job: MigrationJob, sqlGuard: RecipeSQLGuard, _ body: (MigrationSession) throws -> T)
        throws -> T
    {
        let queue: DatabaseQueue
        do { queue = try StagedStore.open(job.destination) } catch {
            throw StagedStore.wrapWrite(error, path: job.destination)
        }
        defer { try? queue.close() }
        var result: T?
        do {
            try queue.writeWithoutTransaction { db in
                let schema = try CoreDataSchema.readMain(db)
                try attachSource(db, job.source)
                defer { try? db.execute(sql: "DETACH DATABASE src") }
                try db.execute(sql: "PRAGMA src.cache_size = -\(StagedStore.cacheKiB)")
                try db.inTransaction(.immediate) {
                    let triggers = try StoreRewrite.dropTriggers(db, path: job.destination.path)
                    result = try body(MigrationSession(db: db, job: job, destinationSchema: schema, sqlGuard: sqlGuard))
                    try StoreRewrite.restoreTriggers(db, triggers, path: job.destination.path)
                    return .commit
                }
            }
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: job.destination)
        }
        guard let result else { throw USMError.unexpected("the migration session ended without a result") }
        return result
    }

    /// Attaches the source read-only when SQLite takes URI file names, else by path (it is a private copy either way).
    static func attachSource(_ db: Database, _ source: URL) throws {
        // The connection is an untrusted one (no attached database): this attach alone is let through.
        try UntrustedDatabase.attaching(db) { try attachSourceFile(db, source) }
    }

    private static func attachSourceFile(_ db: Database, _ source: URL) throws {
        var uri = URLComponents()
        uri.scheme = "file"
        uri.path = source.path
        uri.queryItems = [URLQueryItem(name: "mode", value: "ro")]
        if let text = uri.string, (try? db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [text])) != nil,
            (try? Int.fetchOne(db, sql: "SELECT COUNT(*) FROM src.sqlite_master")) != nil
        {
            return
        }
        try? db.execute(sql: "DETACH DATABASE src")
        try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [source.path])
    }

    /// Runs one SQL text (one or more statements) with named values (`:name`) bound from
    /// `arguments`: a recipe's SQL, held by `RecipeSQLGuard` (no other file, no change to `src`,
    /// no transaction statements, a deadline of `job.options.pluginTimeout` seconds per statement).
    /// - Throws: `recipeDenied`-style `usage`/`recipeInvalid` from the caller's mapping: here a
    ///   `USMError.sqlite` whose message says why a statement was refused or stopped.
    public func execute(_ sql: String, arguments: [String: String] = [:]) throws {
        let guarding = sqlGuard
        if !guardInstalled {
            guarding.install(on: db)
            guardInstalled = true
        }
        // Statements the recipe ran may have changed the schema behind GRDB's cache.
        defer { db.clearSchemaCache() }
        guarding.start(timeout: job.options.pluginTimeout)
        defer { guarding.stop() }
        do {
            let statements = try db.allStatements(sql: sql)
            while let statement = try statements.next() {
                let raw = UnsafeMutableRawPointer(statement.sqliteStatement)
                var bound: [String: (any DatabaseValueConvertible)?] = [:]
                let count = usm_parameter_count(raw)
                for index in 0..<count {
                    guard let cName = usm_parameter_name(raw, index + 1) else {
                        throw USMError.usage(
                            "the SQL uses a nameless ? parameter; recipes bind only named ones (:name)")
                    }
                    let name = String(cString: cName)
                    let key = String(name.dropFirst())
                    guard let value = arguments[key] else {
                        throw USMError.usage("the SQL uses \(name), which no --param gives")
                    }
                    bound[key] = value
                }
                try statement.execute(arguments: StatementArguments(bound))
            }
        } catch let error as DatabaseError {
            if guarding.timedOut {
                throw USMError.sqlite(
                    path: job.destination.path, code: error.resultCode.rawValue,
                    message: "it ran longer than \(Int(job.options.pluginTimeout)) s (--plugin-timeout) and was stopped"
                )
            }
            if let denied = guarding.denied {
                throw USMError.sqlite(
                    path: job.destination.path, code: error.resultCode.rawValue, message: "refused: \(denied)")
            }
            if error.resultCode.primaryResultCode == .SQLITE_READONLY {
                throw USMError.sqlite(
                    path: job.destination.path, code: error.resultCode.rawValue,
                    message: "it writes into the read-only source (src)")
            }
            if error.resultCode.primaryResultCode == .SQLITE_ERROR,
                (error.message ?? "").contains("too many attached databases")
            {
                throw USMError.sqlite(
                    path: job.destination.path, code: error.resultCode.rawValue,
                    message:
                        "refused: it attaches another database (ATTACH, VACUUM INTO); a recipe works on the store and its source only"
                )
            }
            throw USMError.sqlite(
                path: job.destination.path, code: error.resultCode.rawValue, message: error.message ?? "\(error)")
        }
    }

    /// Copies entity rows from `src` into `main` (see `EntityCopy`).
    public func copyEntities(_ map: CopyMap) throws -> EntityCopy.Result {
        try EntityCopy(session: self, map: map).run()
    }

    /// Raises every hierarchy's counter (on its root's row, as Core Data keeps it) to at least the
    /// largest `Z_PK` of its table: Core Data must never hand out a key already in use. Returns the
    /// counters changed, by entity name.
    public func fixCounters() throws -> [String: Int64] {
        Dictionary(try Counters.raise(db).map { ($0.entity, $0.to) }, uniquingKeysWith: { a, _ in a })
    }

    /// Deletes every row of the staged tables whose names match `patterns` (a trailing `*` matches
    /// any suffix; case-insensitive). The `Z_MAX` of the entities stored there stays as it was:
    /// Core Data's key generator only ever raises it, and keys (history transaction numbers among
    /// them) that an extension or the mirroring delegate recorded must not be handed out again.
    /// Returns the tables cleared with the rows each held.
    public func clearTables(matching patterns: [String]) throws -> [(table: String, rows: Int)] {
        let schema = try CoreDataSchema.readMain(db)
        var cleared: [(String, Int)] = []
        for table in schema.tables.keys.sorted() where patterns.contains(where: { Self.matches(table, $0) }) {
            guard !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(table.uppercased()) else { continue }
            let rows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.\(table.sqlIdentifier)") ?? 0
            try db.execute(sql: "DELETE FROM main.\(table.sqlIdentifier)")
            cleared.append((table, rows))
        }
        return cleared
    }

    /// The tables of the staged store.
    public func tableNames() throws -> [String] {
        try String.fetchAll(
            db,
            sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    }

    /// True when `name` matches `pattern` (case-insensitive; a trailing `*` matches any suffix).
    public static func matches(_ name: String, _ pattern: String) -> Bool {
        let n = name.uppercased()
        let p = pattern.uppercased()
        return p.hasSuffix("*") ? n.hasPrefix(String(p.dropLast())) : n == p
    }
}
