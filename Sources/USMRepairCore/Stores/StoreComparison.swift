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
                guard usm_register_digest(UnsafeMutableRawPointer(db.sqliteConnection)) == 0 else {
                    throw USMError.unexpected("cannot register the row hash function")
                }
                try attachCopies(db, a: sideA.copy, b: sideB.copy)
                let columnsA = try attributeColumns(db, schema: sideA.schema, database: "a")
                let columnsB = try attributeColumns(db, schema: sideB.schema, database: "b")
                var objectsA: [String: Int] = [:]
                var objectsB: [String: Int] = [:]
                var missing: [String: Int] = [:]
                var present: [String: Int] = [:]
                let names = Set(sideA.schema.userEntities.map(\.name)).union(sideB.schema.userEntities.map(\.name))
                    .sorted()
                var pairs: [Pair] = []
                for name in names {
                    let entityA = sideA.schema.userEntities.first { $0.name == name }
                    let entityB = sideB.schema.userEntities.first { $0.name == name }
                    let shared = Set(entityA.flatMap { columnsA[$0.number] } ?? []).intersection(
                        entityB.flatMap { columnsB[$0.number] } ?? []
                    ).sorted()
                    let na = try count(db, database: "a", entity: entityA)
                    let nb = try count(db, database: "b", entity: entityB)
                    if entityA != nil { objectsA[name] = na }
                    if entityB != nil { objectsB[name] = nb }
                    pairs.append(Pair(name: name, a: entityA, b: entityB, columns: shared, na: na, nb: nb))
                }
                // The entities hashed on two connections at once (the second core), each lane
                // given about half the objects to hash.
                let (here, there) = lanes(pairs)
                let second: Background<[String: Int]>? =
                    there.isEmpty
                    ? nil
                    : Background { [copyA = sideA.copy, copyB = sideB.copy, folder = scratch.url] in
                        try laneOnItsOwnConnection(
                            there, a: copyA, b: copyB, scratch: folder.appendingPathComponent("hashes-2.sqlite"))
                    }
                defer { _ = try? second?.value() }
                var shared = try countLane(db, here)
                if let second { shared.merge(try second.value()) { $1 } }
                for pair in pairs {
                    let both = shared[pair.name] ?? 0
                    let lost = pair.na - both
                    if lost > 0 { missing[pair.name] = lost }
                    if both > 0 { present[pair.name] = both }
                }
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
        let indexed = try SchemaFacts.indexedKeyColumns(db, schema: schema, schemaName: database)
        var columns: [Int: [String]] = [:]
        for entity in schema.userEntities {
            guard let table = entity.table else { continue }
            columns[entity.number] = SchemaFacts.attributeColumns(
                table, schema: schema, indexedKeys: indexed[table] ?? [])
        }
        return columns
    }

    /// One entity of both stores: its attribute columns both have, and its objects on each side.
    struct Pair: Sendable {
        let name: String
        let a: CoreDataSchema.Entity?
        let b: CoreDataSchema.Entity?
        let columns: [String]
        let na: Int
        let nb: Int
        /// The objects hashed for it (none when a side has none).
        var work: Int { a == nil || b == nil || na == 0 || nb == 0 ? 0 : na + nb }
    }

    /// The entities with objects to hash, split into two lanes of about equal work (the largest
    /// first, each to the lighter lane); the second is empty when there is one entity to hash.
    static func lanes(_ pairs: [Pair]) -> (here: [Pair], there: [Pair]) {
        var here: [Pair] = []
        var there: [Pair] = []
        var loads = (0, 0)
        for pair in pairs.filter({ $0.work > 0 }).sorted(by: { ($0.work, $0.name) > ($1.work, $1.name) }) {
            if loads.0 <= loads.1 {
                here.append(pair)
                loads.0 += pair.work
            } else {
                there.append(pair)
                loads.1 += pair.work
            }
        }
        return (here, there)
    }

    /// The objects of each pair that pair up (`countShared`), by entity name.
    private static func countLane(_ db: Database, _ pairs: [Pair]) throws -> [String: Int] {
        var both: [String: Int] = [:]
        for pair in pairs {
            both[pair.name] = try countShared(db, a: pair.a, b: pair.b, columns: pair.columns, na: pair.na, nb: pair.nb)
        }
        return both
    }

    /// Sets a scratch connection up for hashing: its temporary tables on disk, the private copies
    /// `a` and `b` attached as `a` and `b`, each with a 2 MiB page cache.
    private static func attachCopies(_ db: Database, a: URL, b: URL) throws {
        try db.execute(sql: "PRAGMA temp_store = FILE")
        for (name, copy) in [("a", a), ("b", b)] {
            try UntrustedDatabase.attaching(db) {
                try db.execute(sql: "ATTACH DATABASE ? AS \(name)", arguments: [copy.path])
            }
            try db.execute(sql: "PRAGMA \(name).cache_size = -2048")
        }
    }

    /// `countLane` on a connection of its own (a scratch database at `scratch`, the two private
    /// copies attached as on the first).
    private static func laneOnItsOwnConnection(_ pairs: [Pair], a: URL, b: URL, scratch: URL) throws -> [String: Int] {
        let queue = try StagedStore.open(scratch)
        defer { try? queue.close() }
        do {
            return try queue.writeWithoutTransaction { db in
                try attachCopies(db, a: a, b: b)
                defer {
                    try? db.execute(sql: "DETACH DATABASE a")
                    try? db.execute(sql: "DETACH DATABASE b")
                }
                return try countLane(db, pairs)
            }
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: scratch)
        }
    }

    /// How many of the `na` objects of `a` and `nb` of `b` pair up (equal values in `columns`,
    /// counted with multiplicity: `Σ min(na(h), nb(h))` over the value hashes `h`). The losses
    /// follow: `na − both` objects of A have no equal in B.
    ///
    /// One sort only, of the smaller side: its hashes are grouped into `temp.hs(h INTEGER PRIMARY
    /// KEY, n, m)` (the hash is the rowid, no second index), then the larger side is hashed in
    /// one pass and only its hashes that the smaller side holds are counted into `m`, with no sort.
    private static func countShared(
        _ db: Database, a: CoreDataSchema.Entity?, b: CoreDataSchema.Entity?, columns: [String], na: Int, nb: Int
    ) throws -> Int {
        guard let a, let b, let tableA = a.table, let tableB = b.table, na > 0, nb > 0 else { return 0 }
        let hash = rowHash(columns)
        let (small, large) =
            na <= nb
            ? (("a", tableA, a.number), ("b", tableB, b.number)) : (("b", tableB, b.number), ("a", tableA, a.number))
        try db.execute(sql: "DROP TABLE IF EXISTS temp.hs")
        defer { try? db.execute(sql: "DROP TABLE IF EXISTS temp.hs") }
        try db.execute(
            sql: "CREATE TEMP TABLE hs (h INTEGER PRIMARY KEY, n INTEGER NOT NULL, m INTEGER NOT NULL DEFAULT 0)")
        try db.execute(
            sql: """
                INSERT INTO temp.hs (h, n) SELECT h, COUNT(*) FROM
                  (SELECT \(hash) AS h FROM \(small.0).\(small.1.sqlIdentifier) WHERE Z_ENT = \(small.2)) GROUP BY h
                """)
        // Every row selected is already in hs (the IN): the upsert only counts.
        try db.execute(
            sql: """
                INSERT INTO temp.hs (h, n, m) SELECT h, 0, 1 FROM
                  (SELECT \(hash) AS h FROM \(large.0).\(large.1.sqlIdentifier) WHERE Z_ENT = \(large.2))
                  WHERE h IN (SELECT h FROM temp.hs)
                  ON CONFLICT (h) DO UPDATE SET m = m + 1
                """)
        return try Int.fetchOne(db, sql: "SELECT IFNULL(SUM(MIN(n, m)), 0) FROM temp.hs") ?? 0
    }

    /// Objects of `entity` in `database` (0 without the entity).
    private static func count(_ db: Database, database: String, entity: CoreDataSchema.Entity?) throws -> Int {
        guard let entity, let table = entity.table else { return 0 }
        return try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM \(database).\(table.sqlIdentifier) WHERE Z_ENT = \(entity.number)") ?? 0
    }

    /// The value hash of `columns` (`usm_rowhash`; 0 without columns: every object alike).
    private static func rowHash(_ columns: [String]) -> String {
        // SQLite functions take at most 127 arguments: wide tables are hashed in chunks.
        let chunks = stride(from: 0, to: columns.count, by: 100).map {
            Array(columns[$0..<min($0 + 100, columns.count)])
        }
        return columns.isEmpty
            ? "0"
            : chunks.count == 1
                ? "usm_rowhash(" + columns.map(\.sqlIdentifier).joined(separator: ", ") + ")"
                : "usm_rowhash("
                    + chunks.map { "usm_rowhash(" + $0.map(\.sqlIdentifier).joined(separator: ", ") + ")" }.joined(
                        separator: ", ") + ")"
    }
}
