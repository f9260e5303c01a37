import CDigest
import Foundation
import GRDB

/// What two stores hold, object by object: the objects of one that the other lacks, and the
/// objects of the other that the first already has. Two objects are the same when they are of the
/// same entity (by name) and hold the same values in every attribute column both stores have
/// (keys, `Z_OPT` and relationship columns left out: they differ between stores for the same
/// object). Objects are counted as multisets: two equal objects in A and one in B leave one of A's
/// missing from B.
///
/// It is how a plan tells a replacement that loses nothing from one that loses data the app
/// shows, and a merge that adds objects from one that would duplicate them. Both stores are read
/// through consistent private copies (their `-wal` included); their files stay byte-identical.
/// The hashes go into a scratch database on disk: memory stays flat in the stores' size.
public struct StoreComparison: Sendable, Equatable {
    /// Objects per entity of A and of B.
    public let objectsA: [String: Int]
    public let objectsB: [String: Int]
    /// Objects of A that B does not hold, per entity (only entities with some).
    public let missingFromB: [String: Int]
    /// Objects of B that A already holds, per entity (only entities with some).
    public let presentInA: [String: Int]
    /// Objects of B that A already holds by `ObjectIdentity` (attributes and to-one targets), per
    /// entity (only entities with some): what a merge of B into A does not copy twice.
    public let matchedInA: [String: Int]
    /// B's content digest (`Provenance.digest`) and `Z_UUID`: what a migration from B records.
    public let digestB: String
    public let storeUUIDB: String?
    /// What A's metadata says its data came from.
    public let provenanceA: [Provenance.Entry]
    /// Why B's objects cannot be merged into A entity by entity (`EntityCopy.preflight`: their
    /// models differ where a merge cannot follow), or nil.
    public var mergeProblem: String? = nil

    public var lostCount: Int { missingFromB.values.reduce(0, +) }
    public var duplicateCount: Int { presentInA.values.reduce(0, +) }
    public var matchedCount: Int { matchedInA.values.reduce(0, +) }
    public var totalB: Int { objectsB.values.reduce(0, +) }

    /// Compares the stores `a` and `b`.
    /// - Parameter matching: whether to match B's objects with A's by `ObjectIdentity`
    ///   (`matchedInA`): what a merge needs; a replacement reads the counts, the losses and the
    ///   digests only, and is spared the refinement of every object of both stores.
    /// - Throws: `sourceDamaged`/`notCoreData`... when either cannot be read as a Core Data store.
    public static func compare(_ a: StoreFileSet, _ b: StoreFileSet, matching: Bool = true) throws -> StoreComparison {
        ProgressNote.say(
            "planning: comparing every object of \(a.main.lastPathComponent) with \(b.main.lastPathComponent)")
        let scratch = try TemporaryDirectory(prefix: "usm-repair-compare")
        defer { scratch.remove() }
        // Captured through the command's cache when it has one: the build that follows the plan
        // then works from these copies and B's digests instead of capturing and hashing B again.
        let cache = CaptureCache.current
        let sideA =
            try cache?.capture(a, role: "store")
            ?? MigrationEngine.capture(a, into: scratch.url.appendingPathComponent("a"), role: "store")
        let sideB =
            try cache?.capture(b, role: "store")
            ?? MigrationEngine.capture(b, into: scratch.url.appendingPathComponent("b"), role: "store")
        // B's content digests on another thread while the objects are hashed below.
        let digestJob = Background { () throws -> String in
            let read = try cache?.digests(of: sideB) ?? ContentDigest.read(sideB.copy, schema: sideB.schema)
            return Provenance.digest(read.digests, userEntities: Set(sideB.schema.userEntities.map(\.name)))
        }
        defer { _ = try? digestJob.value() }
        let hashStarted = Date()
        defer { PhaseTimings.note("compare: objects hashed", seconds: Date().timeIntervalSince(hashStarted)) }
        var mergeProblem: String?
        do {
            try EntityCopy.preflight(source: sideB.schema, destination: sideA.schema, path: a.main.path)
        } catch let USMError.schemaMismatch(_, detail) {
            mergeProblem = detail
        }
        let queue = try StagedStore.open(scratch.url.appendingPathComponent("hashes.sqlite"))
        defer { try? queue.close() }
        do {
            return try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA temp_store = FILE")
                guard usm_register_digest(UnsafeMutableRawPointer(db.sqliteConnection)) == 0 else {
                    throw USMError.unexpected("cannot register the row hash function")
                }
                try UntrustedDatabase.attaching(db) {
                    try db.execute(sql: "ATTACH DATABASE ? AS a", arguments: [sideA.copy.path])
                }
                try UntrustedDatabase.attaching(db) {
                    try db.execute(sql: "ATTACH DATABASE ? AS b", arguments: [sideB.copy.path])
                }
                let columnsA = try attributeColumns(db, schema: sideA.schema, database: "a")
                let columnsB = try attributeColumns(db, schema: sideB.schema, database: "b")
                var objectsA: [String: Int] = [:]
                var objectsB: [String: Int] = [:]
                var missing: [String: Int] = [:]
                var present: [String: Int] = [:]
                let names = Set(sideA.schema.userEntities.map(\.name)).union(sideB.schema.userEntities.map(\.name))
                    .sorted()
                for name in names {
                    let entityA = sideA.schema.userEntities.first { $0.name == name }
                    let entityB = sideB.schema.userEntities.first { $0.name == name }
                    let shared = Set(entityA.flatMap { columnsA[$0.number] } ?? []).intersection(
                        entityB.flatMap { columnsB[$0.number] } ?? []
                    ).sorted()
                    try db.execute(sql: "DROP TABLE IF EXISTS temp.ha; DROP TABLE IF EXISTS temp.hb")
                    try makeHashes(db, "ha", database: "a", entity: entityA, columns: shared)
                    try makeHashes(db, "hb", database: "b", entity: entityB, columns: shared)
                    let counts = try Row.fetchOne(
                        db,
                        sql: """
                            SELECT (SELECT IFNULL(SUM(n), 0) FROM temp.ha) AS na, (SELECT IFNULL(SUM(n), 0) FROM temp.hb) AS nb,
                                   (SELECT IFNULL(SUM(MAX(ha.n - IFNULL(hb.n, 0), 0)), 0) FROM temp.ha LEFT JOIN temp.hb USING (h)) AS lost,
                                   (SELECT IFNULL(SUM(MIN(ha.n, hb.n)), 0) FROM temp.hb JOIN temp.ha USING (h)) AS both
                            """)
                    let na = counts.flatMap { Int.fromDatabaseValue($0["na"] as DatabaseValue) } ?? 0
                    let nb = counts.flatMap { Int.fromDatabaseValue($0["nb"] as DatabaseValue) } ?? 0
                    let lost = counts.flatMap { Int.fromDatabaseValue($0["lost"] as DatabaseValue) } ?? 0
                    let both = counts.flatMap { Int.fromDatabaseValue($0["both"] as DatabaseValue) } ?? 0
                    if entityA != nil { objectsA[name] = na }
                    if entityB != nil { objectsB[name] = nb }
                    if lost > 0 { missing[name] = lost }
                    if both > 0 { present[name] = both }
                }
                try db.execute(sql: "DROP TABLE IF EXISTS temp.ha; DROP TABLE IF EXISTS temp.hb")
                var matched: [String: Int] = [:]
                if matching {
                    let started = Date()
                    let identity = try ObjectIdentity.classify(
                        db,
                        sides: [
                            try .of(db, schema: sideA.schema, database: "a"),
                            try .of(db, schema: sideB.schema, database: "b"),
                        ], keys: try ObjectIdentity.constraintKeys(db, schema: sideA.schema, schemaName: "a"))
                    matched = try identity.matched(db, side: 1).filter { $0.value > 0 }
                    try identity.drop(db)
                    PhaseTimings.note(
                        "compare: objects matched by identity", seconds: Date().timeIntervalSince(started))
                }
                try db.execute(sql: "DETACH DATABASE a")
                try db.execute(sql: "DETACH DATABASE b")
                return StoreComparison(
                    objectsA: objectsA, objectsB: objectsB, missingFromB: missing, presentInA: present,
                    matchedInA: matched,
                    digestB: try digestJob.value(),
                    storeUUIDB: sideB.report.storeUUID, provenanceA: Provenance.entries(inPlist: sideA.plist),
                    mergeProblem: mergeProblem)
            }
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: scratch.url.appendingPathComponent("hashes.sqlite"))
        }
    }

    /// The attribute columns of every entity of `schema`, by `Z_ENT`.
    private static func attributeColumns(_ db: Database, schema: CoreDataSchema, database: String) throws -> [Int:
        [String]]
    {
        try db.execute(sql: "PRAGMA \(database).cache_size = -2048")
        let indexed = try SchemaFacts.indexedKeyColumns(db, schema: schema, schemaName: database)
        var columns: [Int: [String]] = [:]
        for entity in schema.userEntities {
            guard let table = entity.table else { continue }
            columns[entity.number] = SchemaFacts.attributeColumns(
                table, schema: schema, indexedKeys: indexed[table] ?? [])
        }
        return columns
    }

    /// `temp.<name>(h, n)`: how many objects of `entity` hold each value hash of `columns`.
    private static func makeHashes(
        _ db: Database, _ name: String, database: String, entity: CoreDataSchema.Entity?, columns: [String]
    ) throws {
        guard let entity, let table = entity.table else {
            try db.execute(sql: "CREATE TEMP TABLE \(name) (h INTEGER PRIMARY KEY, n INTEGER)")
            return
        }
        // SQLite functions take at most 127 arguments: wide tables are hashed in chunks.
        let chunks = stride(from: 0, to: columns.count, by: 100).map {
            Array(columns[$0..<min($0 + 100, columns.count)])
        }
        let hash =
            columns.isEmpty
            ? "0"
            : chunks.count == 1
                ? "usm_rowhash(" + columns.map(\.sqlIdentifier).joined(separator: ", ") + ")"
                : "usm_rowhash("
                    + chunks.map { "usm_rowhash(" + $0.map(\.sqlIdentifier).joined(separator: ", ") + ")" }.joined(
                        separator: ", ") + ")"
        try db.execute(
            sql: """
                CREATE TEMP TABLE \(name) AS SELECT h, COUNT(*) AS n FROM
                  (SELECT \(hash) AS h FROM \(database).\(table.sqlIdentifier) WHERE Z_ENT = \(entity.number)) GROUP BY h
                """)
        try db.execute(sql: "CREATE INDEX temp.\(name)_h ON \(name) (h)")
    }
}
