import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 19, the stores usm-repair writes: what Core Data would have written. Mirroring state kept
/// with the objects it names, metadata that describes the store's own model, identity kept where a
/// store is replaced or repaired, counters that never drop, and the files beside a store.
@Suite("fidelity: stores", .timed)
struct FidelityStoreTests {
    /// A store written by the fixture builder at `<tmp>/<name>.sqlite`.
    static func store(_ tmp: TempDir, _ name: String, _ configure: (inout FixtureStore.Options) -> Void = { _ in })
        throws -> URL
    {
        var o = FixtureStore.Options()
        configure(&o)
        let url = tmp.path("\(name)/\(name).sqlite")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FixtureStore.write(to: url, o)
        return url
    }

    /// One value of a store the test owns.
    static func value<T: DatabaseValueConvertible>(_ store: URL, _ sql: String, as: T.Type = Int64.self) throws -> T? {
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        return try queue.read { try T.fetchOne($0, sql: sql) }
    }

    /// `Z_UUID` and the metadata dictionary.
    static func metadata(_ store: URL) throws -> (uuid: String?, plist: [String: Any]) {
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        return try queue.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA")
            let data = row.flatMap { $0["Z_PLIST"] as Data? } ?? Data()
            let plist = (try? PropertyListSerialization.propertyList(from: data, format: nil)) as? [String: Any] ?? [:]
            return (row?["Z_UUID"] as String?, plist)
        }
    }

    /// Rewrites a store's metadata dictionary (a store the test owns).
    static func setMetadata(_ store: URL, _ edit: (inout [String: Any]) -> Void) throws {
        var plist = try metadata(store).plist
        edit(&plist)
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        let queue = try DatabaseQueue(path: store.path)
        try queue.write { try $0.execute(sql: "UPDATE Z_METADATA SET Z_PLIST = ?", arguments: [data]) }
        try queue.close()
    }

    static func counters(_ store: URL) throws -> [Int: Int64] {
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        return try queue.read { db in
            Dictionary(
                try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY").map {
                    ($0["Z_ENT"] as Int, $0["Z_MAX"] as Int64)
                },
                uniquingKeysWith: { a, _ in a })
        }
    }

    // MARK: - 4. CloudKit mirroring

    @Test(
        "copy-entities into a new store carries the ANSCK* rows with the keys of the objects they name, never 'holds no objects'"
    )
    func cloudKitCarried() throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, "Source") {
            $0.cloudKit = true
            $0.history = true
        }
        let rows = try #require(try Self.value(source, "SELECT COUNT(*) FROM ANSCKRECORDMETADATA"))
        #expect(rows > 0)
        let destination = tmp.path("New.sqlite")
        let r = USM.run(["migrate-store", source.path, destination.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("holds no objects"), "\(r.stdout)")
        #expect(try Self.value(destination, "SELECT COUNT(*) FROM ANSCKRECORDMETADATA") == rows)
        let named = try Self.value(
            destination,
            """
            SELECT COUNT(*) FROM ANSCKRECORDMETADATA m JOIN ZITEM i ON i.Z_PK = m.ZENTITYPK AND i.Z_ENT = m.ZENTITYID
            """)
        #expect(named == rows, "every mirroring row names an object of the result")
        for table in ["ANSCKDATABASEMETADATA", "ANSCKRECORDZONEMETADATA"] {
            #expect(try Self.value(destination, "SELECT COUNT(*) FROM \(table)") == 1)
        }
        let check = USM.run(["check", "--store", destination.path])
        #expect(check.status == 0, "\(check.stdout)")
    }

    @Test(
        "a merge whose source holds ANSCK* rows is refused (exit 8) unless --drop-cloudkit names the loss; strip-cloudkit empties them on purpose"
    )
    func cloudKitMergeRefused() throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, "Source") { $0.cloudKit = true }
        let destination = try Self.store(tmp, "Destination") {
            $0.seed = 5
            $0.storeUUID = "5D5D5D5D-5D5D-4D5D-8D5D-5D5D5D5D5D5D"
        }
        let before = try TreeSnapshot(destination.deletingLastPathComponent())
        for dry in [true, false] {
            let refused = USM.run(
                ["migrate-store", source.path, destination.path, "--into", "--json"] + (dry ? ["--dry-run"] : []))
            #expect(refused.status == 8, "dry run \(dry): \(refused.stdout)\(refused.stderr)")
            #expect(
                refused.stderr.contains("--drop-cloudkit") && refused.stderr.contains("ANSCKRECORDMETADATA"),
                "\(refused.stderr)")
        }
        #expect(try TreeSnapshot(destination.deletingLastPathComponent()) == before, "nothing changed")

        let merged = USM.run(["migrate-store", source.path, destination.path, "--into", "--drop-cloudkit", "--json"])
        #expect(merged.status == 0, "\(merged.stderr)")
        let leftOut = (merged.details["leftOut"] as? [String]) ?? []
        #expect(
            leftOut.contains { $0.contains("ANSCKRECORDMETADATA") && $0.contains("dropped (--drop-cloudkit)") },
            "\(leftOut)")
        #expect(!merged.stdout.contains("holds no objects"))

        let stripped = tmp.path("Stripped.sqlite")
        let strip = USM.run(["migrate-store", source.path, stripped.path, "--recipe", "strip-cloudkit", "--json"])
        #expect(strip.status == 0, "\(strip.stderr)")
        #expect(try Self.value(stripped, "SELECT COUNT(*) FROM ANSCKRECORDMETADATA") == 0)
    }

    @Test(
        "migrate cloud-to-local --merge from a cloud store holding ANSCK* rows is refused at planning without --drop-cloudkit"
    )
    func cloudKitMergeRefusedAtPlanning() throws {
        let f = try OperationTests.Fixture { $0.cloud.cloudKit = true }
        let before = try f.snapshot()
        let refused = try f.run(["migrate", "cloud-to-local", "--merge", "--allow-duplicates", "--dry-run"])
        #expect(refused.status == 8, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("--drop-cloudkit"))
        #expect(try f.snapshot() == before)
        let allowed = try f.run([
            "migrate", "cloud-to-local", "--merge", "--allow-duplicates", "--drop-cloudkit", "--dry-run",
        ])
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }

    // MARK: - 5. Versioning metadata in a merge

    @Test(
        "in a merge the versioning keys are the destination's alone: the source's checksum and framework version are not taken"
    )
    func mergeKeepsVersioningKeys() throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, "Source")
        let destination = try Self.store(tmp, "Destination") {
            $0.seed = 5
            $0.storeUUID = "5D5D5D5D-5D5D-4D5D-8D5D-5D5D5D5D5D5D"
        }
        try Self.setMetadata(source) {
            $0["NSPersistenceFrameworkVersion"] = 1333
            $0["NSStoreModelVersionChecksumKey"] = "bXkgY2hlY2tzdW0="
            $0["NSStoreModelVersionHashesDigest"] = "ZGlnZXN0"
            $0["_NSStoreAncillaryModelVersionHashes"] = ["x": Data([1])]
            $0["com.example.sourceOnly"] = "kept"
        }
        try Self.setMetadata(destination) {
            $0["NSPersistenceFrameworkVersion"] = 1251
            $0.removeValue(forKey: "_NSAutoVacuumLevel")
        }
        let hashes = try Self.metadata(destination).plist["NSStoreModelVersionHashes"] as? [String: Data]
        let r = USM.run(["migrate-store", source.path, destination.path, "--into", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let after = try Self.metadata(destination)
        #expect(after.uuid == "5D5D5D5D-5D5D-4D5D-8D5D-5D5D5D5D5D5D")
        #expect(after.plist["NSPersistenceFrameworkVersion"] as? Int == 1251)
        for key in [
            "NSStoreModelVersionChecksumKey", "NSStoreModelVersionHashesDigest", "_NSStoreAncillaryModelVersionHashes",
            "_NSAutoVacuumLevel",
        ] {
            #expect(after.plist[key] == nil, "\(key) is not taken from the source")
        }
        #expect(after.plist["NSStoreModelVersionHashes"] as? [String: Data] == hashes)
        #expect(after.plist["com.example.sourceOnly"] as? String == "kept", "the source's own keys still come along")
    }

    // MARK: - 6. Identity

    @Test(
        "--overwrite keeps the replaced store's Z_UUID (and NSStoreUUID), the in-place recipes keep the source's; --new-identity gives a new one"
    )
    func identityKept() throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, "Source") { $0.history = true }
        try Self.setMetadata(source) { $0["NSStoreUUID"] = "6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D" }
        let replaced = "5D5D5D5D-5D5D-4D5D-8D5D-5D5D5D5D5D5D"
        for strategy in ["copy-entities", "ios"] {
            let destination = try Self.store(tmp, "Overwritten-\(strategy)") {
                $0.seed = 5
                $0.storeUUID = replaced
            }
            let r = USM.run([
                "migrate-store", source.path, destination.path, "--strategy", strategy, "--overwrite", "--yes",
                "--json",
            ])
            #expect(r.status == 0, "\(r.stderr)")
            let after = try Self.metadata(destination)
            #expect(after.uuid == replaced, "\(strategy): the replaced store's identity")
            #expect(
                after.plist["NSStoreUUID"] as? String == replaced, "\(strategy): the metadata names the same identity")
            #expect(((r.json["notes"] as? [String]) ?? []).contains { $0.contains("kept from the store it replaces") })
            let fresh = USM.run([
                "migrate-store", source.path, destination.path, "--strategy", strategy, "--overwrite", "--new-identity",
                "--yes",
            ])
            #expect(fresh.status == 0, "\(fresh.stderr)")
            let renewed = try Self.metadata(destination)
            #expect(
                renewed.uuid != replaced && renewed.uuid != "6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D"
                    && renewed.uuid.flatMap(UUID.init) != nil)
            #expect(renewed.plist["NSStoreUUID"] as? String == renewed.uuid)
        }
        for recipe in ["fix-counters", "drop-history", "strip-ubiquity"] {
            let repaired = tmp.path("\(recipe).sqlite")
            let r = USM.run(["migrate-store", source.path, repaired.path, "--recipe", recipe])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(
                try Self.metadata(repaired).uuid == "6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D",
                "\(recipe) keeps the store's identity")
            let renamed = tmp.path("\(recipe)-new.sqlite")
            #expect(
                USM.run(["migrate-store", source.path, renamed.path, "--recipe", recipe, "--new-identity"]).status == 0)
            #expect(try Self.metadata(renamed).uuid != "6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D")
        }
        // A new store from another keeps making a new identity.
        let copy = tmp.path("Copy.sqlite")
        #expect(USM.run(["migrate-store", source.path, copy.path]).status == 0)
        #expect(try Self.metadata(copy).uuid != "6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D")
    }

    @Test("migrate cloud-to-local makes a local store of a new identity, and its provenance names the cloud store's")
    func cloudToLocalNewIdentity() throws {
        let f = try OperationTests.Fixture()
        let cloud = try Self.metadata(f.paths.cloudStore(f.options.activeUUID)).uuid
        let local = try Self.metadata(f.paths.localStore).uuid
        try OperationTests.apply(f, ["migrate", "cloud-to-local", "--replace"])
        let after = try Self.metadata(f.paths.localStore)
        #expect(after.uuid != cloud && after.uuid != local && after.uuid.flatMap(UUID.init) != nil)
        let provenance = try #require((after.plist[Provenance.metadataKey] as? [[String: String]])?.last)
        #expect(provenance["sourceStoreUUID"] == cloud)
    }

    // MARK: - 7. Counters

    @Test(
        "counters of entities whose rows are left out keep the source's Z_MAX",
        arguments: [
            ["--strategy", "copy-entities"], ["--strategy", "none"], ["--recipe", "drop-history"],
            ["--recipe", "strip-cloudkit"],
        ])
    func countersKept(strategy: [String]) throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, "Source") {
            $0.history = true
            $0.cloudKit = true
        }
        let before = try Self.counters(source)
        #expect([16001, 16002, 16003, 16004, 16005, 16006].allSatisfy { (before[$0] ?? 0) > 0 })
        let destination = tmp.path("Out.sqlite")
        let r = USM.run(["migrate-store", source.path, destination.path] + strategy)
        #expect(r.status == 0, "\(strategy): \(r.stderr)")
        let after = try Self.counters(destination)
        for (entity, max) in before {
            #expect((after[entity] ?? 0) >= max, "\(strategy): Z_MAX of \(entity) was \(max), is \(after[entity] ?? 0)")
        }
    }

    // MARK: - 8. Files beside the store

    @Test("file-backed futures (0x03 into _FBF) are checked by check and carried by every strategy that keeps rows")
    func fileBackedFutures() throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, "Source") { $0.fileBackedFutures = 2 }
        let files = StoreFileSet(main: source)
        let futures = try FileManager.default.contentsOfDirectory(atPath: files.fileBackedFuturesDirectory.path)
            .sorted()
        #expect(futures.count == 2)
        let good = USM.run(["check", "--store", source.path, "--json"])
        #expect(good.status == 0, "\(good.stdout)")
        #expect(((good.json["stores"] as? [[String: Any]])?.first?["externalDataFiles"] as? Int) == 4)

        for arguments in [["--strategy", "copy-entities"], ["--strategy", "ios"], ["--recipe", "fix-counters"]] {
            let destination = tmp.path("\(arguments[1])/Out.sqlite")
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            let r = USM.run(["migrate-store", source.path, destination.path] + arguments)
            #expect(r.status == 0, "\(arguments): \(r.stderr)")
            let out = StoreFileSet(main: destination)
            for name in futures {
                #expect(
                    FileManager.default.contentsEqual(
                        atPath: files.fileBackedFuturesDirectory.appendingPathComponent(name).path,
                        andPath: out.fileBackedFuturesDirectory.appendingPathComponent(name).path),
                    "\(arguments): \(name) carried")
            }
            #expect(USM.run(["check", "--store", destination.path]).status == 0, "\(arguments)")
        }

        // A file gone, a file of another size: both are errors check reports.
        try FileManager.default.removeItem(at: files.fileBackedFuturesDirectory.appendingPathComponent(futures[0]))
        try Data("short".utf8).write(to: files.fileBackedFuturesDirectory.appendingPathComponent(futures[1]))
        try Data("stray".utf8).write(
            to: files.fileBackedFuturesDirectory.appendingPathComponent("0D0D0D0D-0D0D-4D0D-8D0D-0D0D0D0D0D0D"))
        let bad = USM.run(["check", "--store", source.path])
        #expect(bad.status == 1, "\(bad.stdout)")
        #expect(bad.stdout.contains("external-data-missing") && bad.stdout.contains("_FBF"), "\(bad.stdout)")
        #expect(bad.stdout.contains("external-data-size"), "\(bad.stdout)")
        #expect(bad.stdout.contains("external-data-orphan"), "\(bad.stdout)")
    }

    @Test(
        "external-storage references are written as Core Data writes them (0x02, the UUID, a NUL) and read either way")
    func externalStorageReference() throws {
        let name = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"
        #expect(ExternalData.reference(Data([0x02]) + Data(name.utf8) + Data([0]))?.name == name)
        #expect(ExternalData.reference(Data([0x02]) + Data(name.utf8))?.name == name)
        let future = ExternalData.reference(FixtureStore.futureReference(uuid: name, size: 1234))
        #expect(future == ExternalData.Reference(kind: .fileBackedFuture, name: name, size: 1234))
        #expect(ExternalData.reference(Data([0x01]) + Data(name.utf8)) == nil, "0x01 is a value kept inline")
    }
}
