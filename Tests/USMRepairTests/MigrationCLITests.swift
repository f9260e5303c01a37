import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// `migrate-store` and `strategies` as a user runs them: exit codes, messages, nothing left behind.
@Suite("migration: command line", .timed)
struct MigrationCLITests {
    @Test("strategies --json lists the four strategies, the shipped recipes and plugins on PATH")
    func strategies() throws {
        let tmp = try TempDir()
        let plugin = tmp.path("usm-repair-strategy-demo")
        try ExecutableFile.write("#!/bin/sh\nexit 0\n", to: plugin)
        let r = USM.run(["strategies", "--json"], environment: ["PATH": tmp.url.path + ":/usr/bin:/bin"])
        #expect(r.status == 0, "\(r.stderr)")
        let ids = (r.json["strategies"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        #expect(ids == ["ios", "copy-entities", "manual", "none"])
        #expect(r.json["defaultStrategy"] as? String == "copy-entities")
        let plugins = (r.json["plugins"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(plugins == ["demo"])
        let recipes = Set((r.json["recipes"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? [])
        #expect(
            recipes.isSuperset(of: [
                "rename-entity", "drop-history", "fix-counters", "strip-cloudkit", "strip-ubiquity",
            ]))
        let text = USM.run(["strategies"])
        #expect(text.stdout.contains("copy-entities (default of migrate-store)"))
    }

    @Test("migrate-store --json: the report's keys; the text names what moved")
    func report() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        let r = USM.run(["migrate-store", tmp.path("S.sqlite").path, tmp.path("D.sqlite").path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        for key in ChangeEnvelopeTests.envelopeKeys {
            #expect(r.json.keys.contains(key), "key \(key)")
        }
        for key in [
            "strategy", "mode", "source", "destination", "recipe", "recipeSHA256", "plugin", "steps", "entities",
            "deduplicated", "leftOut", "verification", "durations",
        ] {
            #expect(r.details.keys.contains(key), "details key \(key)")
        }
        #expect(r.details["strategy"] as? String == "copy-entities")
        #expect(r.json["snapshot"] is NSNull)
        let verification = try #require(r.details["verification"] as? [String: Any])
        #expect(verification["integrity"] as? String == "ok")
        #expect(verification["rows"] as? String == "equal")
        let text = USM.run(["migrate-store", tmp.path("S.sqlite").path, tmp.path("E.sqlite").path, "--strategy", "ios"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("with ios (create)"))
        #expect(text.stdout.contains("Book: 6, 0 -> 6"))
    }

    @Test("--dry-run prints the plan with its SQL and creates nothing")
    func dryRun() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        try FixtureStore.write(to: tmp.path("dst/D.sqlite"))
        let before = try TreeSnapshot(tmp.url)
        let r = USM.run([
            "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--into", "--dry-run",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("nothing was changed"))
        #expect(r.stdout.contains("snapshot"))
        let recipe = USM.run([
            "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/N.sqlite").path, "--recipe", "drop-history",
            "--dry-run",
        ])
        #expect(recipe.status == 0, "\(recipe.stderr)")
        #expect(recipe.stdout.contains("SQL:") || recipe.stdout.contains("empty"))
        #expect(try TreeSnapshot(tmp.url) == before)
    }

    @Test(
        "bad input: a clear error, its exit code, nothing at the destination",
        arguments: [
            ("plain", ["--strategy", "ios"], 2, "not-core-data"),
            ("damaged", ["--strategy", "copy-entities"], 2, "source-damaged"),
            ("fixture", ["--strategy", "cp"], 64, "unknown-strategy"),
            ("fixture", ["--strategy", "ios", "--into"], 64, "usage"),
            ("fixture", ["--recipe", "no-such-recipe"], 66, "not-found"),
            ("fixture", ["--plugin", "no-such-plugin"], 66, "not-found"),
            ("missing", [], 66, "not-found"),
        ])
    func badInput(kind: String, flags: [String], status: Int32, code: String) throws {
        let tmp = try TempDir()
        let source = tmp.path("src/S.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("src"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: tmp.path("dst"), withIntermediateDirectories: true)
        switch kind {
        case "plain": try FixtureStore.writePlainSQLite(to: source)
        case "damaged":
            try FixtureStore.write(to: source)
            let queue = try DatabaseQueue(path: source.path)
            try queue.writeWithoutTransaction { db in _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE") }
            try queue.close()
            try? FileManager.default.removeItem(atPath: source.path + "-shm")
            // Every page but the first overwritten: the header still says SQLite, the B-trees are garbage.
            let size = try FileManager.default.attributesOfItem(atPath: source.path)[.size] as? Int ?? 0
            let handle = try FileHandle(forUpdating: source)
            try handle.seek(toOffset: 4096)
            try handle.write(contentsOf: Data(repeating: 0xA5, count: max(size - 4096, 4096)))
            try handle.close()
        case "fixture": try FixtureStore.write(to: source)
        default: break
        }
        let destination = flags.contains("--into") ? tmp.path("dst/D.sqlite") : tmp.path("dst/N.sqlite")
        if flags.contains("--into") { try FixtureStore.write(to: destination) }
        let before = try TreeSnapshot(tmp.path("dst"))
        let r = USM.run(["migrate-store", source.path, destination.path, "--json"] + flags)
        #expect(r.status == status, "\(kind) \(flags): \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == code, "\(r.stdout)")
        #expect(r.stderr.hasPrefix("usm-repair: error: "))
        #expect(try TreeSnapshot(tmp.path("dst")) == before, "nothing left at the destination")
    }

    @Test(
        "an existing destination: refused without --into or --overwrite; --overwrite needs --yes; then it is snapshotted and restore brings it back"
    )
    func overwrite() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        var o = FixtureStore.Options()
        o.books = 1
        o.storeUUID = "11111111-2222-3333-4444-555555555555"
        try FixtureStore.write(to: tmp.path("dst/D.sqlite"), o)
        let before = try TreeSnapshot(tmp.path("dst"))
        let refused = USM.run(["migrate-store", tmp.path("S.sqlite").path, tmp.path("dst/D.sqlite").path, "--json"])
        #expect(refused.status == 3)
        #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "destination-exists")
        let noYes = USM.run(["migrate-store", tmp.path("S.sqlite").path, tmp.path("dst/D.sqlite").path, "--overwrite"])
        #expect(noYes.status == 3)
        #expect(try TreeSnapshot(tmp.path("dst")) == before)
        let snapshots = tmp.path("snapshots")
        let r = USM.run([
            "migrate-store", tmp.path("S.sqlite").path, tmp.path("dst/D.sqlite").path, "--overwrite", "--yes",
            "--snapshot-dir", snapshots.path, "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let snapshot = try #require(r.json["snapshot"] as? String)
        #expect(Migrate.sidecars(tmp.path("dst/D.sqlite")).isEmpty, "the old -wal and -shm are gone with the old store")
        #expect(try Migrate.check(tmp.path("dst/D.sqlite")).rows["Book"] == 6)
        #expect(USM.run(["restore", snapshot, "--to", tmp.path("back").path, "-q"]).status == 0)
        #expect(try TreeSnapshot(tmp.path("back/dst")) == before, "the old file set, byte for byte")
        // In place: the old file set back where it was, the new members it did not have removed.
        let undone = USM.run(["restore", snapshot, "--yes", "--snapshot-dir", snapshots.path, "--json"])
        #expect(undone.status == 0, "\(undone.stderr)")
        #expect(undone.details["undoes"] as? String == "migrate-store")
        #expect(try TreeSnapshot(tmp.path("dst")) == before, "the old file set in place, byte for byte")
    }

    @Test("a read-only destination folder: exit 74, nothing left")
    func readOnlyFolder() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("ro"), withIntermediateDirectories: true)
        let readOnly = try TestMount(readOnly: tmp.path("ro"))
        defer {
            readOnly.unmount()
            withExtendedLifetime(tmp) {}
        }
        let r = USM.run(["migrate-store", tmp.path("src/S.sqlite").path, tmp.path("ro/D.sqlite").path, "--json"])
        #expect(r.status == 74, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "write-failed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path("ro").path).isEmpty)
    }
}
