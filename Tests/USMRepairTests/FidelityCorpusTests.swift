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
    "fidelity: real corpus", .enabled(if: Corpus.directory != nil, "../shared/corpus/real is not beside this checkout"))
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

    @Test(
        "migrate-store on real stores: identity, counters and metadata as Core Data keeps them",
        arguments: Corpus.stores())
    func migrateStore(store: URL) throws {
        let tmp = try TempDir()
        let source = try Corpus.copy(store, into: tmp.url)
        let name = store.lastPathComponent
        let (sourceUUID, sourcePlist) = try Store.metadata(source)
        let sourceCounters = try Store.counters(source)
        for strategy in ["ios", "copy-entities", "none"] {
            let out = tmp.path("\(strategy)/\(name)")
            try FileManager.default.createDirectory(
                at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
            let r = USM.run(["migrate-store", source.path, out.path, "--strategy", strategy])
            #expect(r.status == 0, "\(name) \(strategy): \(r.stderr)")
            let (uuid, plist) = try Store.metadata(out)
            #expect(
                uuid != sourceUUID && uuid.flatMap(UUID.init) != nil, "\(name) \(strategy): a new store, a new identity"
            )
            #expect(
                Self.comparable(plist) == Self.comparable(sourcePlist), "\(name) \(strategy): the source's metadata")
            try Self.expectCounters(out, source: sourceCounters, "\(name) \(strategy)")
        }
        for recipe in ["fix-counters", "drop-history", "strip-ubiquity", "strip-cloudkit"] {
            let out = tmp.path("\(recipe)/\(name)")
            try FileManager.default.createDirectory(
                at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
            let r = USM.run(["migrate-store", source.path, out.path, "--recipe", recipe])
            #expect(r.status == 0, "\(name) \(recipe): \(r.stderr)")
            #expect(try Store.metadata(out).uuid == sourceUUID, "\(name) \(recipe): the same store, repaired")
            try Self.expectCounters(out, source: sourceCounters, "\(name) \(recipe)")
        }
        // Replacing a store keeps the replaced one's identity.
        let replaced = tmp.path("overwrite/\(name)")
        try FileManager.default.createDirectory(
            at: replaced.deletingLastPathComponent(), withIntermediateDirectories: true)
        #expect(USM.run(["migrate-store", source.path, replaced.path, "--strategy", "ios"]).status == 0)
        let replacedUUID = try Store.metadata(replaced).uuid
        let overwrite = USM.run(["migrate-store", source.path, replaced.path, "--overwrite", "--yes"])
        #expect(overwrite.status == 0, "\(name) --overwrite: \(overwrite.stderr)")
        #expect(
            try Store.metadata(replaced).uuid == replacedUUID,
            "\(name): --overwrite keeps the replaced store's identity")

        // A merge into a store of an older framework: its versioning keys stay its own.
        try Store.setMetadata(replaced) {
            $0["NSPersistenceFrameworkVersion"] = 1
            $0.removeValue(forKey: "NSStoreModelVersionChecksumKey")
            $0.removeValue(forKey: "NSStoreModelVersionHashesDigest")
        }
        let (_, destinationPlist) = try Store.metadata(replaced)
        let merge = USM.run([
            "migrate-store", source.path, replaced.path, "--into", "--on-conflict", "keep-destination",
        ])
        #expect(merge.status == 0, "\(name) --into: \(merge.stderr)")
        let (mergedUUID, mergedPlist) = try Store.metadata(replaced)
        #expect(mergedUUID == replacedUUID, "\(name): a merge keeps the destination's identity")
        for key in destinationPlist.keys.filter(StoreIdentity.isVersioningKey) {
            #expect(
                (mergedPlist[key] as? NSObject)?.isEqual(destinationPlist[key]) == true,
                "\(name): \(key) is the destination's")
        }
        for key in ["NSStoreModelVersionChecksumKey", "NSStoreModelVersionHashesDigest"] {
            #expect(mergedPlist[key] == nil, "\(name): \(key) not taken from the source")
        }
        try Self.expectCounters(replaced, source: sourceCounters, "\(name) --into")
    }

    @Test(
        "a real store as the active cloud store's copy: migrate cloud-to-local, then rebuild --from local, end as the app needs",
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
        let (cloudUUID, _) = try Store.metadata(copy.main)
        let cloudCounters = try Store.counters(copy.main)
        try FidelityLayoutTests.plantFailedSeeding(in: f.paths.appDir, name: "CopyMigrationStore.sqlite")

        let migrated = try OperationTests.apply(f, ["migrate", "cloud-to-local", "--replace"])
        #expect(OperationTests.state(migrated) == "E1", "\(name)")
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
