import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair

/// Helpers shared by the migration tests.
enum Migrate {
    static let engine = MigrationEngine(registry: StrategyRegistry(builtInStrategies))

    /// The state folder the tests' runs use (snapshots, the record of operations).
    static var state: URL { CLI.stateHome.appendingPathComponent("usm-repair", isDirectory: true) }

    /// `migrate-store` through the core: the plan, run by the executor.
    static func run(
        _ source: URL, _ destination: URL, strategy: String = "copy-entities", mode: MigrationRequest.Mode = .create,
        options: MigrationOptions = MigrationOptions(), snapshots: URL? = nil, dryRun: Bool = false
    ) throws -> MigrationReport {
        let executor = PlanExecutor(
            snapshotDirectory: snapshots ?? state.appendingPathComponent("snapshots", isDirectory: true),
            records: OperationRecords(stateFolder: state))
        let change = MigrateStoreChange(
            request: MigrationRequest(
                source: StoreFileSet(main: source), destination: StoreFileSet(main: destination), strategy: strategy,
                mode: mode,
                options: options),
            engine: engine, executor: executor)
        return try ChangeRunner.run(change, dryRun: dryRun, detailedExitCode: false) { _, _ in }.details
    }

    /// Rows per entity name as a fresh `check` of the store counts them, and its error-level problems.
    static func check(_ store: URL) throws -> (rows: [String: Int], errors: [Problem], report: StoreReport) {
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = try #require(report.stores.first)
        return (
            Dictionary(s.entities.map { ($0.name, $0.rows) }, uniquingKeysWith: +),
            s.problems.filter { $0.severity == .error }, s
        )
    }

    /// What SQLite itself says, opening the store as the sqlite3 shell does (read-write, then
    /// closed): the journal mode and the integrity check (a clean WAL store then leaves no sidecar).
    static func sqlite3(_ store: URL) throws -> (journalMode: String, integrity: String) {
        let queue = try DatabaseQueue(path: store.path)
        let result = try queue.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "",
                try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: ";")
            )
        }
        try queue.close()
        return result
    }

    static func sidecars(_ store: URL) -> [String] {
        ["-wal", "-shm", "-journal"].filter { FileManager.default.fileExists(atPath: store.path + $0) }
    }

    /// What an operation of ours left in `folder` (nothing after a run, whatever its outcome).
    static func staging(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
            $0.hasPrefix(".usm-repair")
        }
    }

    static func uuidAndKeys(_ store: URL) throws -> (uuid: String?, keys: [String]) {
        let queue = try DatabaseQueue(
            path: store.path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        return try queue.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA")
            let plist = row.flatMap { $0["Z_PLIST"] as Data? }.flatMap {
                try? PropertyListSerialization.propertyList(from: $0, format: nil) as? [String: Any]
            }
            return (row?["Z_UUID"] as String?, (plist?.keys).map { Array($0).sorted() } ?? [])
        }
    }
}

@Suite("migration: strategies on fixture stores", .timed)
struct MigrationTests {
    @Test(
        "external data copied beside the strategy: not copied twice, and a file the result no longer refers to is not carried"
    )
    func externalDataPrefetch() throws {
        let tmp = try TempDir()
        var o = FixtureStore.Options()
        o.externalCovers = 3
        let source = StoreFileSet(main: tmp.path("src/S.sqlite"))
        try FixtureStore.write(to: source.main, o)
        let staged = StoreFileSet(main: tmp.path("staged/S.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("staged"), withIntermediateDirectories: true)
        try StagedStore.copyWhole(from: source.main, to: staged.main)
        let schema = try CoreDataSchema.load(from: source.main)
        let prefetched = try ExternalDataCopy.prefetch(
            staged: staged, copy: source.main, schema: schema, from: source)
        #expect(prefetched[.externalStorage]?.count == 3)
        // The result refers to two of the three files (a row's cover now held inline).
        try FixtureStore.mutate(
            staged.main,
            "UPDATE ZITEM SET ZCOVER = x'0100' WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM WHERE substr(ZCOVER, 1, 1) = x'02')"
        )
        // A second copy of a prefetched file would fail (files are created, never overwritten).
        let copied = try ExternalDataCopy.run(
            staged: staged, schema: schema, from: [source], prefetched: prefetched)
        #expect(copied == 2)
        let names = try FileManager.default.contentsOfDirectory(atPath: staged.externalDataDirectory.path)
        #expect(names.count == 2)
        for name in names {
            #expect(
                try Data(contentsOf: staged.externalDataDirectory.appendingPathComponent(name))
                    == Data(contentsOf: source.externalDataDirectory.appendingPathComponent(name)))
        }
    }

    @Test("the registry holds exactly the four strategies of product.md, each documented")
    func registry() throws {
        let registry = StrategyRegistry(builtInStrategies)
        #expect(registry.ids == ["ios", "copy-entities", "manual", "none"])
        let readme = try Documentation.text()
        for id in registry.ids { #expect(readme.contains("`\(id)`"), "README documents \(id)") }
        #expect(throws: USMError.unknownStrategy("cp", known: registry.ids)) { try registry.strategy("cp") }
    }

    @Test(
        "ios, copy-entities and none: WAL-only rows, inheritance, external data, history, ubiquity metadata",
        arguments: ["ios", "copy-entities", "none"])
    func newStore(strategy: String) throws {
        let tmp = try TempDir()
        var o = FixtureStore.Options()
        o.walOnlyBooks = 3
        o.ubiquityMetadata = true
        o.history = true
        let source = tmp.path("src/S.sqlite")
        try FixtureStore.write(to: source, o)
        let before = try TreeSnapshot(tmp.path("src"))
        let destination = tmp.path("dst/D.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("dst"), withIntermediateDirectories: true)

        let report = try Migrate.run(source, destination, strategy: strategy)
        #expect(try TreeSnapshot(tmp.path("src")) == before, "the source's file set is byte-identical")
        let (rows, errors, _) = try Migrate.check(destination)
        #expect(errors.isEmpty, "\(errors)")
        var expected = FixtureStore.expectedRows(o)
        if strategy == "none" { expected = expected.mapValues { _ in 0 } }
        for (name, n) in expected { #expect(rows[name] == n, "\(strategy) \(name)") }
        let history = rows["CHANGE"] ?? -1
        #expect(history == (strategy == "ios" ? o.books + o.magazines : 0), "history copied by ios only")
        #expect(Migrate.sidecars(destination).isEmpty)
        #expect(Migrate.staging(in: tmp.path("dst")).isEmpty)
        let sqlite = try Migrate.sqlite3(destination)
        #expect(sqlite.journalMode == "wal")
        #expect(sqlite.integrity == "ok")
        #expect(Migrate.sidecars(destination).isEmpty, "sqlite3 left nothing behind")
        let identity = try Migrate.uuidAndKeys(destination)
        #expect(identity.uuid != o.storeUUID && identity.uuid?.count == 36, "a fresh store UUID")
        #expect(!identity.keys.contains { $0.hasPrefix("com.apple.coredata.ubiquity") })
        #expect(identity.keys.contains("NSStoreModelVersionHashes"))
        // External data: every surviving reference with its file, byte for byte, and no others.
        let copied = StoreFileSet(main: destination).externalDataDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: copied.path)) ?? []
        #expect(names.count == (strategy == "none" ? 0 : o.externalCovers))
        for name in names {
            let original = StoreFileSet(main: source).externalDataDirectory.appendingPathComponent(name)
            #expect(try Data(contentsOf: copied.appendingPathComponent(name)) == Data(contentsOf: original))
        }
        if strategy != "none" { #expect(report.verification.digestsCompared >= 5, "content digests compared") }
        #expect(report.verification.rows == "equal")
    }

    @Test("--keep-ubiquity-metadata keeps the ubiquity keys")
    func keepUbiquity() throws {
        let tmp = try TempDir()
        var o = FixtureStore.Options()
        o.ubiquityMetadata = true
        try FixtureStore.write(to: tmp.path("S.sqlite"), o)
        _ = try Migrate.run(
            tmp.path("S.sqlite"), tmp.path("D.sqlite"), strategy: "ios",
            options: MigrationOptions(keepUbiquityMetadata: true))
        #expect(try Migrate.uuidAndKeys(tmp.path("D.sqlite")).keys.contains("com.apple.coredata.ubiquity.ubiquitized"))
    }

    @Test("copy-entities into an empty store keeps keys, every relationship kind and the uniqueness index")
    func copyKeepsKeys() throws {
        let tmp = try TempDir()
        try MergeFixture.write(to: tmp.path("A.sqlite"), .a, prefix: "src")
        _ = try Migrate.run(tmp.path("A.sqlite"), tmp.path("D.sqlite"))
        #expect(
            try MergeFixture.relationships(tmp.path("D.sqlite")) == MergeFixture.relationships(tmp.path("A.sqlite")))
        let queue = try DatabaseQueue(path: tmp.path("D.sqlite").path)
        defer { try? queue.close() }
        try queue.read { db in
            let pks = try Int.fetchAll(db, sql: "SELECT Z_PK FROM ZITEM ORDER BY Z_PK")
            #expect(pks.first ?? 0 > 1, "keys kept as they were (the fixture does not start at 1)")
            #expect(
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master WHERE name = 'Z_Item_UNIQUE_code'") == 1)
        }
    }

    @Test("a merge remaps Z_ENT numbers, keys, the polymorphic entity column, join-table names and ordered positions")
    func mergeRemaps() throws {
        let tmp = try TempDir()
        let source = tmp.path("A.sqlite")
        let destination = tmp.path("d/B.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("d"), withIntermediateDirectories: true)
        try MergeFixture.write(to: source, .a, prefix: "src")
        try MergeFixture.write(to: destination, .b, prefix: "dst")
        let expected = (try MergeFixture.relationships(source) + MergeFixture.relationships(destination)).sorted()
        let uuidBefore = try Migrate.uuidAndKeys(destination).uuid
        let report = try Migrate.run(source, destination, mode: .merge, snapshots: tmp.path("snapshots"))
        #expect(try MergeFixture.relationships(destination) == expected)
        let (rows, errors, _) = try Migrate.check(destination)
        #expect(errors.isEmpty, "\(errors)")
        #expect(rows["Book"] == 10 && rows["Magazine"] == 4 && rows["Author"] == 6 && rows["Tag"] == 6)
        #expect(try Migrate.uuidAndKeys(destination).uuid == uuidBefore, "a merge keeps the destination's identity")
        #expect(try Migrate.uuidAndKeys(destination).keys.contains("owner"), "metadata merged")
        #expect(report.notes.contains { $0.contains("ZITEM.ZISSUE exists only in the source") })
        #expect(report.notes.contains { $0.contains("ZITEM.ZRATING exists only in the destination") })
        #expect(report.snapshot != nil && FileManager.default.fileExists(atPath: report.snapshot ?? ""))
        let queue = try DatabaseQueue(path: destination.path)
        defer { try? queue.close() }
        try queue.read { db in
            #expect(
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE ZTITLE LIKE 'src%' AND ZRATING IS NOT NULL")
                    == 0)
            #expect(
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE ZTITLE LIKE 'dst%' AND ZRATING IS NOT NULL")
                    == 7)
            let zmax = try Int.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'") ?? 0
            #expect(zmax == (try Int.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM ZITEM") ?? -1))
        }
        // The old destination comes back with restore.
        let restored = tmp.path("restored")
        #expect(USM.run(["restore", report.snapshot ?? "", "--to", restored.path, "-q"]).status == 0)
        #expect(
            try MergeFixture.relationships(restored.appendingPathComponent("d/B.sqlite")).count == expected.count
                - MergeFixture.relationships(source).count)
    }

    @Test(
        "uniqueness conflicts: refused by default with nothing changed; keep-destination and keep-source move relationships"
    )
    func conflicts() throws {
        let tmp = try TempDir()
        let source = tmp.path("A.sqlite")
        try MergeFixture.write(to: source, .a, prefix: "same")
        for policy in ConflictPolicy.allCases {
            let folder = tmp.path(policy.rawValue)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let destination = folder.appendingPathComponent("B.sqlite")
            try MergeFixture.write(to: destination, .b, prefix: "same")
            let destinationRelationships = try MergeFixture.relationships(destination)
            let before = try TreeSnapshot(folder)
            // Equal objects are matched by identity unless duplicates are allowed: the constraint decides here.
            var options = MigrationOptions(onConflict: policy)
            options.allowDuplicates = true
            if policy == .refuse {
                #expect(throws: USMError.self) {
                    try Migrate.run(source, destination, mode: .merge, options: options, snapshots: tmp.path("s"))
                }
                do {
                    _ = try Migrate.run(source, destination, mode: .merge, options: options, snapshots: tmp.path("s"))
                } catch let error as USMError {
                    #expect(error.code == "merge-conflict")
                    #expect(error.exitStatus == .refused)
                    #expect(error.message.contains("Book/Magazine") || error.message.contains("Item"))
                    #expect(error.message.contains("code-same-1"))
                }
                #expect(try TreeSnapshot(folder) == before, "nothing changed, no staging left")
                continue
            }
            let report = try Migrate.run(source, destination, mode: .merge, options: options, snapshots: tmp.path("s"))
            let (rows, errors, _) = try Migrate.check(destination)
            #expect(errors.isEmpty, "\(policy): \(errors)")
            #expect(rows["Book"] == 5 && rows["Magazine"] == 2, "\(policy): items not duplicated")
            #expect(rows["Author"] == 6 && rows["Tag"] == 6, "\(policy): unconstrained entities doubled")
            #expect(report.deduplicated["Book"] == 5 && report.deduplicated["Magazine"] == 2)
            let after = try MergeFixture.relationships(destination)
            // Every author (both copies) still names its favorite magazine, with the right entity.
            #expect(
                after.filter { $0.contains("→ favorite same item") && $0.contains("(says Magazine, is Magazine)") }
                    .count == 6, "\(policy): \(after)")
            // Every item keeps its author and tags from both sides, by name.
            #expect(
                after.filter { $0.contains("→ tag") }.count == 2
                    * destinationRelationships.filter { $0.contains("→ tag") }.count)
            let queue = try DatabaseQueue(path: destination.path)
            try queue.read { db in
                let dst = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE ZRATING IS NOT NULL") ?? -1
                #expect(dst == (policy == .keepDestination ? 7 : 0), "\(policy): which rows were kept")
            }
            try queue.close()
        }
    }

    @Test(
        "build: the core entry point for plans builds a verified store at a staged path, merged or new, and installs nothing"
    )
    func buildAPI() throws {
        let tmp = try TempDir()
        try MergeFixture.write(to: tmp.path("A.sqlite"), .a, prefix: "src")
        for folder in ["live", "staging"] {
            try FileManager.default.createDirectory(at: tmp.path(folder), withIntermediateDirectories: true)
        }
        try MergeFixture.write(to: tmp.path("live/B.sqlite"), .b, prefix: "dst")
        let liveBefore = try TreeSnapshot(tmp.path("live"))
        let report = try Migrate.engine.build(
            source: StoreFileSet(main: tmp.path("A.sqlite")), staged: tmp.path("staging/B.sqlite"),
            mergeInto: StoreFileSet(main: tmp.path("live/B.sqlite")))
        #expect(try TreeSnapshot(tmp.path("live")) == liveBefore, "the store merged into is only read")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path("staging").path) == ["B.sqlite"])
        #expect(report.entities.first { $0.name == "Book" }?.after == 10)
        #expect(
            try MergeFixture.relationships(tmp.path("staging/B.sqlite")).count
                == (try MergeFixture.relationships(tmp.path("A.sqlite")).count
                    + MergeFixture.relationships(tmp.path("live/B.sqlite")).count))
        // A failing build leaves nothing at the staged path.
        try FixtureStore.mutate(
            tmp.path("live/B.sqlite"), "DROP TABLE ZTAG; DELETE FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'")
        #expect(throws: USMError.self) {
            try Migrate.engine.build(
                source: StoreFileSet(main: tmp.path("A.sqlite")), staged: tmp.path("staging/C.sqlite"),
                mergeInto: StoreFileSet(main: tmp.path("live/B.sqlite")))
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: tmp.path("staging").path).filter { $0.contains("C") }
                .isEmpty)
    }

    @Test("a merge into a store without one of the source's entities is refused and changes nothing")
    func schemaMismatch() throws {
        let tmp = try TempDir()
        try MergeFixture.write(to: tmp.path("A.sqlite"), .a, prefix: "src")
        try FixtureStore.write(to: tmp.path("d/B.sqlite"))
        try FixtureStore.mutate(
            tmp.path("d/B.sqlite"),
            "DELETE FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'; DROP TABLE ZTAG; DROP TABLE Z_1TAGS;")
        let before = try TreeSnapshot(tmp.path("d"))
        let r = USM.run(["migrate-store", tmp.path("A.sqlite").path, tmp.path("d/B.sqlite").path, "--into", "--json"])
        #expect(r.status == 2, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "schema-mismatch")
        #expect(r.stderr.contains(tmp.path("d/B.sqlite").path))
        #expect(try TreeSnapshot(tmp.path("d")) == before)
    }
}
