import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 19's conventions checked on stores Core Data itself wrote (../shared/corpus/real): every
/// repair's result has a fitting identity, counters that never drop and never lag the keys, the
/// source's metadata (or, in a merge, the destination's versioning keys), and a seeding layout
/// built around a real store ends as the app needs it.
@Suite(
    "fidelity: real corpus", .timed,
    .enabled(if: Corpus.directory != nil, "../shared/corpus/real is not beside this checkout"))
struct FidelityCorpusTests {
    typealias Store = FidelityStoreTests

    /// The largest key of every entity table, with the entities (Z_ENT) stored there.
    static func keys(_ store: URL) throws -> [(members: [Int], root: Int?, key: Int64)] {
        let schema = try CoreDataSchema.load(from: store)
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        return try queue.read { db in
            try schema.entityTables.filter { schema.table($0, hasColumn: "Z_PK") }.map { table in
                (
                    schema.entityNumbers(inTable: table),
                    schema.entities.first { $0.table == table && $0.number == $0.rootNumber }?.number,
                    try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(Z_PK), 0) FROM \(table.sqlIdentifier)") ?? 0
                )
            }
        }
    }

    /// The metadata without what a migration changes on purpose.
    static func comparable(_ plist: [String: Any]) -> NSDictionary {
        NSDictionary(
            dictionary: plist.filter {
                !StoreMetadata.isUbiquityKey($0.key) && $0.key != Provenance.metadataKey && $0.key != "NSStoreUUID"
            })
    }

    /// Counters at least the source's and at least the keys in use.
    static func expectCounters(_ result: URL, source: [Int: Int64], _ label: String) throws {
        let after = try Store.counters(result)
        let keys = try Self.keys(result)
        for (entity, max) in source where after[entity] != nil {
            #expect(
                (after[entity] ?? 0) >= max, "\(label): Z_MAX of \(entity) dropped from \(max) to \(after[entity] ?? 0)"
            )
        }
        for (members, root, key) in keys {
            let counter = members.compactMap { after[$0] }.max() ?? 0
            #expect(counter >= key, "\(label): the counter of \(members) is \(counter), keys go to \(key)")
            // Core Data keeps a hierarchy's counter on its root's row, its sub-entities' at 0: a
            // row that was 0 in the source stays 0.
            for member in members where source[member] == 0 && member != root {
                #expect(
                    after[member] == 0,
                    "\(label): Z_MAX of sub-entity \(member) is \(after[member] ?? -1), Core Data leaves it 0")
            }
        }
    }

    // migrate-store's strategies, recipes, --overwrite and --into on every real store are checked
    // for identity, metadata and counters in MigrationCorpusTests.strategiesAndRecipes (one pass
    // makes each output once for the migration, fidelity and recipe checks).

    @Test(
        "a real store as the active cloud store's copy: migrate cloud-to-local keeps its rows, then rebuild --from local, end as the app needs",
        arguments: Corpus.stores())
    func operations(store: URL) throws {
        let f = try OperationTests.Fixture()
        let name = store.lastPathComponent
        let copy = StoreFileSet(main: f.paths.cloudStore(f.options.activeUUID))
        for member in copy.existingMembers() { try FileManager.default.removeItem(at: member) }
        let placed = try Corpus.copy(store, into: copy.directory)
        try FileManager.default.moveItem(at: placed, to: copy.main)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: placed.path + suffix) {
            try FileManager.default.moveItem(atPath: placed.path + suffix, toPath: copy.main.path + suffix)
        }
        // The rows the copy holds: the corpus store's, read once for the corpus suites.
        let source = try CorpusFixtures.check(store).report
        let (cloudUUID, _) = try Store.metadata(copy.main)
        let cloudCounters = try Store.counters(copy.main)
        try FidelityLayoutTests.plantFailedSeeding(in: f.paths.appDir, name: "CopyMigrationStore.sqlite")

        let migrated = try OperationTests.apply(f, ["migrate", "cloud-to-local", "--replace"])
        #expect(OperationTests.state(migrated) == "E1", "\(name)")
        // The local store keeps the copy's rows, entity by entity (once OperationTests.corpusCloudToLocal).
        let local = try #require(try f.status().stores.first { $0.role == .local })
        let user = { (report: StoreReport) in report.entities.filter { !$0.system }.map { ($0.name, $0.rows) } }
        #expect(
            user(local).map(\.0) == user(source).map(\.0) && user(local).map(\.1) == user(source).map(\.1), "\(name)")
        #expect(local.health == .ok, "\(name)")
        let check = USM.run(["check", "--store", f.paths.localStore.path])
        #expect(check.status == 0, "\(name): \(check.stdout)")
        let (localUUID, localPlist) = try Store.metadata(f.paths.localStore)
        #expect(
            localUUID != cloudUUID && localUUID.flatMap(UUID.init) != nil, "\(name): the local store is a new store")
        #expect(!localPlist.keys.contains(where: StoreMetadata.isUbiquityKey), "\(name)")
        try Self.expectCounters(f.paths.localStore, source: cloudCounters, "\(name) migrate cloud-to-local")

        let rebuilt = try OperationTests.apply(f, ["rebuild", "--from", "local", "--discard-cloud"])
        #expect(OperationTests.state(rebuilt) == "E2", "\(name)")
        #expect(
            !FileManager.default.fileExists(
                atPath: f.paths.appDir.appendingPathComponent("CopyMigrationStore.sqlite-wal").path))
        #expect(
            FidelityLayoutTests.seedingCopy(f.paths) == FidelityLayoutTests.seedingCopy(f.paths, leftovers: false),
            "\(name)")
    }
}
