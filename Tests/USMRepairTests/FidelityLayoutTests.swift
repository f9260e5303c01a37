import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Issue 19, the files a maintenance operation leaves around the stores: what UbiquityStoreManager
/// finds at its next launch (the seeding's temporary copy), who owns what was written, and the
/// counters of a whole-store copy that is installed.
@Suite("fidelity: layouts", .timed)
struct FidelityLayoutTests {
    typealias Fixture = OperationTests.Fixture

    /// A -wal (and its -shm) of another store, as a seeding that failed leaves beside the local
    /// store: UbiquityStoreManager deletes CopyMigrationStore.sqlite's main file only.
    static func plantFailedSeeding(in folder: URL, name: String) throws {
        let other = try TempDir()
        var o = FixtureStore.Options()
        o.seed = 77
        o.books = 30
        o.walOnlyBooks = 40
        o.storeUUID = "77777777-7777-4777-8777-777777777777"
        let store = other.path("Seed.sqlite")
        try FixtureStore.write(to: store, o)
        for suffix in ["-wal", "-shm"] {
            try FileManager.default.copyItem(
                atPath: store.path + suffix, toPath: folder.appendingPathComponent(name + suffix).path)
        }
    }

    /// What UbiquityStoreManager does when it seeds from the local store (usm-behaviour.md §1.2,
    /// `.m:1101-1117`): remove CopyMigrationStore.sqlite (the main file only), copy the local store's
    /// main file there, open it. Done in a scratch folder holding what the app folder holds of
    /// CopyMigrationStore.sqlite's file set (`leftovers: false`: none of it), so the layout is not
    /// touched. Returns what the copy opens as: its `integrity_check`, `Z_UUID` and counters (or
    /// the error SQLite gives).
    static func seedingCopy(_ paths: FixtureContainer.Paths, leftovers: Bool = true) -> String {
        do {
            let scratch = try TempDir()
            for suffix in ["-wal", "-shm", "-journal"] where leftovers {
                let leftover = paths.appDir.appendingPathComponent("CopyMigrationStore.sqlite" + suffix)
                if FileStatus.lookup(leftover.path) != nil {
                    try FileManager.default.copyItem(
                        at: leftover, to: scratch.path("CopyMigrationStore.sqlite" + suffix))
                }
            }
            let copy = scratch.path("CopyMigrationStore.sqlite")
            try FileManager.default.copyItem(at: paths.localStore, to: copy)
            let queue = try DatabaseQueue(path: copy.path)
            defer { try? queue.close() }
            return try queue.read { db in
                let check = try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
                let uuid = try String.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA") ?? "none"
                let counters =
                    try String.fetchOne(db, sql: "SELECT group_concat(Z_ENT || ':' || Z_MAX) FROM Z_PRIMARYKEY") ?? ""
                return "\(check); \(uuid); \(counters)"
            }
        } catch {
            return "\(error)"
        }
    }

    @Test(
        "a seeding plan retires CopyMigrationStore.sqlite* and MigrationSource.sqlite* as file sets; the seeding's copy then opens intact",
        arguments: [
            ["rebuild", "--from", "local", "--discard-cloud"], ["migrate", "local-to-cloud", "--discard-cloud"],
            ["rebuild", "--from", "cloud", "--replace"],
        ])
    func seedingRetiresLeftovers(command: [String]) throws {
        let f = try Fixture()
        try Self.plantFailedSeeding(in: f.paths.appDir, name: "CopyMigrationStore.sqlite")
        let cloudStore = f.paths.appDir.appendingPathComponent("CloudStore")
        try Data("stale copy".utf8).write(to: cloudStore.appendingPathComponent("MigrationSource.sqlite"))
        try Self.plantFailedSeeding(in: cloudStore, name: "MigrationSource.sqlite")
        let leftovers = [
            f.paths.appDir.appendingPathComponent("CopyMigrationStore.sqlite-wal"),
            f.paths.appDir.appendingPathComponent("CopyMigrationStore.sqlite-shm"),
            cloudStore.appendingPathComponent("MigrationSource.sqlite"),
            cloudStore.appendingPathComponent("MigrationSource.sqlite-wal"),
            cloudStore.appendingPathComponent("MigrationSource.sqlite-shm"),
        ]
        // The reproduction, on the layout as it is: SQLite replays the foreign -wal onto the
        // copy, which then is not the local store (damaged, or silently another store's pages).
        let intact = Self.seedingCopy(f.paths, leftovers: false)
        #expect(intact.hasPrefix("ok; "), "\(intact)")
        let bad = Self.seedingCopy(f.paths)
        #expect(bad != intact, "a foreign -wal beside the seeding's copy spoils it (\(bad))")

        let dry = try f.run(command + ["--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let retired = Set(
            ((dry.json["steps"] as? [[String: Any]]) ?? []).filter { $0["action"] as? String == "retire" }
                .compactMap { ($0["paths"] as? [String])?.first })
        for leftover in leftovers {
            #expect(retired.contains(leftover.path), "\(command): \(leftover.lastPathComponent) is retired")
        }
        let notes = (dry.json["notes"] as? [String]) ?? []
        #expect(notes.contains { $0.contains("CopyMigrationStore.sqlite") && $0.contains("-wal") }, "\(notes)")

        let json = try OperationTests.apply(f, command)
        #expect(OperationTests.state(json) == "E2")
        for leftover in leftovers { #expect(!f.exists(leftover), "\(leftover.lastPathComponent) is gone") }
        #expect(
            Self.seedingCopy(f.paths) == Self.seedingCopy(f.paths, leftovers: false),
            "the seeding's copy opens as the local store")
        #expect(Self.seedingCopy(f.paths).hasPrefix("ok; "))

        // In the snapshot: the undo puts them back.
        let snapshot = try #require(json["snapshot"] as? String)
        let undo = USM.run(["restore", snapshot, "--yes"])
        #expect(undo.status == 0, "\(undo.stderr)")
        for leftover in leftovers {
            #expect(f.exists(leftover), "\(leftover.lastPathComponent) is back after the undo")
        }
    }

    /// Every entry below `folder` whose owner is not `uid:gid`.
    static func foreignOwners(_ folder: URL, uid: UInt32, gid: UInt32) throws -> [String] {
        var found: [String] = []
        var stack = [folder.path]
        while let next = stack.popLast() {
            if let owner = Ownership.of(next), owner != Ownership(uid: uid, gid: gid) { found.append(next) }
            if FileStatus.lookup(next)?.kind == .directory {
                for name in try FileManager.default.contentsOfDirectory(atPath: next) {
                    stack.append(next + "/" + name)
                }
            }
        }
        return found
    }

    @Test(
        "run as root on another user's folders, every file written (stores, sidecars, external data, preferences, markers) keeps that user as owner",
        .enabled(if: geteuid() == 0, "needs root to give files to another user"))
    func ownersKept() throws {
        let nobody: UInt32 = 65534
        let f = try Fixture()
        // Given to `nobody` as `chown -R` would, in process: a process is not the point here.
        for folder in [f.paths.root, f.paths.cloudDir] {
            var stack = [folder.path]
            while let next = stack.popLast() {
                #expect(lchown(next, nobody, nobody) == 0, "\(next)")
                if FileStatus.lookup(next)?.kind == .directory {
                    stack += try FileManager.default.contentsOfDirectory(atPath: next).map { next + "/" + $0 }
                }
            }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: f.paths.prefs.path)
        #expect(try Self.foreignOwners(f.paths.root, uid: nobody, gid: nobody).isEmpty)

        // A new local store (main file, external data), the preferences rewritten.
        try OperationTests.apply(f, ["migrate", "cloud-to-local", "--replace"])
        let local = StoreFileSet(main: f.paths.localStore)
        #expect(f.exists(local.externalDataDirectory), "the cloud store's external data came along")
        // A new marker; then the local store checkpointed in place of the old one.
        try OperationTests.apply(f, ["corruption", "mark", f.options.activeUUID])
        try OperationTests.apply(f, ["rebuild", "--from", "local", "--discard-cloud"])
        for folder in [f.paths.root, f.paths.cloudDir] {
            let foreign = try Self.foreignOwners(folder, uid: nobody, gid: nobody)
            #expect(foreign.isEmpty, "owned by another user: \(foreign)")
        }
        let mode = try #require(FileStatus.lookup(f.paths.prefs.path)).mode
        #expect(mode == 0o600, "the preferences keep their mode")
    }

    @Test(
        "ios: an installed whole-store copy whose Z_MAX is behind its keys gets its counters raised, and the report says so"
    )
    func iosRaisesCounters() throws {
        let f = try Fixture()
        let cloud = f.paths.cloudStore(f.options.activeUUID)
        // Behind its keys, whatever block end the copy's counter sat at.
        try FixtureStore.mutate(
            cloud, "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZITEM) - 5 WHERE Z_ENT = 1")
        let keys = try DatabaseQueue(path: cloud.path).read {
            try Int64.fetchOne($0, sql: "SELECT MAX(Z_PK) FROM ZITEM") ?? 0
        }
        #expect(
            try f.status().stores.first { $0.path == cloud.path }?.problems.contains { $0.code == .zmaxBehind } == true)

        let json = try OperationTests.apply(f, ["migrate", "cloud-to-local", "--strategy", "ios", "--replace"])
        let notes = (json["notes"] as? [String]) ?? []
        #expect(notes.contains { $0.contains("Z_MAX of Item raised") && $0.contains("to \(keys)") }, "\(notes)")
        let check = USM.run(["check", "--store", f.paths.localStore.path, "--json"])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(!check.stdout.contains("zmax-behind"))
        let queue = try DatabaseQueue(
            path: f.paths.localStore.path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        let counters = try queue.read {
            try Int64.fetchAll($0, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT IN (1, 2, 3) ORDER BY Z_ENT")
        }
        #expect(
            counters == [keys, 0, 0],
            "the hierarchy's counter on its root's row, as Core Data keeps it: \(counters), keys up to \(keys)")
    }

    @Test(
        "status: a CopyMigrationStore.sqlite-wal beside the local store is a hazard to the predicted seeding, with advice that clears it"
    )
    func statusWarnsOfSeedingHazard() throws {
        let f = try Fixture {
            $0.markers = [:]
            $0.cache = .none
        }
        try Self.plantFailedSeeding(in: f.paths.appDir, name: "CopyMigrationStore.sqlite")
        let report = try f.status()
        #expect(report.nextLaunch?.outcome == .seedNewCloudStore)
        let hazard = try #require(
            report.problems.first { $0.code == .seedCopySidecar }, "\(report.problems.map(\.code))")
        #expect(hazard.severity == .warning)
        #expect(hazard.message.contains("CopyMigrationStore.sqlite-wal"))
        let text = try f.run(["status"])
        #expect(text.stdout.contains("seed-copy-sidecar"))
        #expect(text.stdout.contains("usm-repair rebuild --from local"), "advice: \(text.stdout)")
        // The advised command clears it and leaves the same next launch.
        try OperationTests.apply(f, ["rebuild", "--from", "local", "--keep-old"])
        #expect(!f.exists(f.paths.appDir.appendingPathComponent("CopyMigrationStore.sqlite-wal")))
        #expect(!(try f.status().problems.contains { $0.code == .seedCopySidecar }))

        // Not a hazard when the next launch does not seed from the local store.
        let g = try Fixture()
        try Self.plantFailedSeeding(in: g.paths.appDir, name: "CopyMigrationStore.sqlite")
        let other = try g.status()
        #expect(other.nextLaunch?.outcome == .openCloudStore)
        #expect(!other.problems.contains { $0.code == .seedCopySidecar })
        #expect(other.problems.contains { $0.code == .leftoverTempStore })
    }
}
