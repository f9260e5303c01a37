import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// `salvage SRC DST` as a user runs it: the healthy case is an exact copy, the source is never
/// changed, bad input and refusals have their exit codes, the JSON report its keys, and a kill
/// mid-run is undone by `recover`.
@Suite("salvage: command", .timed)
struct SalvageTests {
    @Test("a healthy store (rows only in its -wal, external data) salvages to an exact copy; SRC unchanged; exit 0")
    func healthy() throws {
        let tmp = try TempDir()
        var o = FixtureStore.Options()
        o.walOnlyBooks = 4
        o.history = true
        try FixtureStore.write(to: tmp.path("src/Library.sqlite"), o)
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        let before = try TreeSnapshot(tmp.path("src"))
        let r = USM.run(["salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try TreeSnapshot(tmp.path("src")).differences(from: before).isEmpty, "salvage changed its source")
        let original = try StoreRows.read(tmp.path("src/Library.sqlite"))
        let salvaged = try StoreRows.read(tmp.path("out/Library.sqlite"))
        for (table, rows) in original where table != "Z_METADATA" {
            #expect(salvaged[table] == rows, "\(table) differs")
        }
        #expect(USM.run(["check", "--store", tmp.path("out/Library.sqlite").path]).status == 0)
        let support = tmp.path("out/.Library_SUPPORT/_EXTERNAL_DATA")
        #expect(try FileManager.default.contentsOfDirectory(atPath: support.path).count == o.externalCovers)
        // Its identity is the damaged store's: object URIs name Z_UUID.
        #expect((r.details["destination"] as? [String: Any])?["storeUUID"] as? String == o.storeUUID)
        for key in ChangeEnvelopeTests.envelopeKeys {
            #expect(r.json.keys.contains(key), "key \(key)")
        }
        for key in [
            "source", "destination", "schema", "relationships", "metadata", "tables", "entities", "referencesCut",
            "countersRaised", "entitiesRestored", "damagedPages", "damagedPageCount", "unplacedPages", "unplacedRows",
            "unreadable", "verification", "durations",
        ] {
            #expect(r.details.keys.contains(key), "details key \(key)")
        }
        let source = try #require(r.details["source"] as? [String: Any])
        #expect(source["walFrames"] as? Int ?? 0 > 0)
        #expect((r.details["verification"] as? [String: Any])?["integrity"] as? String == "ok")
        let entities = Dictionary(
            uniqueKeysWithValues: (r.details["entities"] as? [[String: Any]] ?? []).map {
                ($0["name"] as? String ?? "", $0["rows"] as? Int ?? -1)
            })
        #expect(entities["Book"] == o.books + o.walOnlyBooks)
        // A second salvage into the same place is refused: DST exists.
        let again = USM.run(["salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path])
        #expect(again.status == 3)
    }

    @Test(
        "status advises salvage for a damaged store; the advised command runs as printed, a dry run that writes nothing"
    )
    func advisedByStatus() throws {
        let tmp = try TempDir()
        let store = try SalvageDamageTests.damaged(tmp) { copy, map in
            let page = try #require(map.interior["ZITEM"]?.first ?? map.leaves["ZITEM"]?.first?.page)
            try StoreDamage.zeroPageHeader(copy, page: page, pageSize: map.pageSize)
            return [page]
        }
        let before = try TreeSnapshot(tmp.path("damaged"))
        let status = USM.run(["status", "--store", store.damaged.path, "--json"])
        let advice = try #require(status.json["advice"] as? [String], "\(status.stdout)\(status.stderr)")
        let line = try #require(advice.first { $0.contains("usm-repair salvage") }, "\(advice)")
        let command = try #require(line.components(separatedBy: ": usm-repair ").last)
        let salvaged = tmp.path("damaged/Library-salvaged.sqlite").path
        #expect(command == "salvage \(store.damaged.path) \(salvaged) --dry-run", "\(command)")
        let run = USM.run(command.split(separator: " ").map(String.init))
        #expect([0, 1].contains(run.status), "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("Dry run"), "\(run.stdout)")
        #expect(
            try TreeSnapshot(tmp.path("damaged")).differences(from: before).isEmpty,
            "the advised dry run wrote beside the store")
    }

    @Test("--dry-run reads and reports, and writes nothing beside DST")
    func dryRun() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/Library.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        let r = USM.run([
            "salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path, "--dry-run",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("Dry run"))
        #expect(r.stdout.contains("ZITEM: 9 (0), 0, 0"), "\(r.stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path("out").path).isEmpty)
    }

    @Test(
        "bad input: not SQLite, empty, the same store twice, a missing source or folder; each its exit code, nothing written"
    )
    func badInput() throws {
        let tmp = try TempDir()
        var rng = SeededRandom(seed: 3)
        try Data((0..<40960).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(to: tmp.path("random.sqlite"))
        try Data().write(to: tmp.path("empty.sqlite"))
        try FixtureStore.write(to: tmp.path("ok/Library.sqlite"))
        let random = USM.run(["salvage", tmp.path("random.sqlite").path, tmp.path("a.sqlite").path])
        #expect(random.status == 2, "\(random.stderr)")
        #expect(USM.run(["salvage", tmp.path("empty.sqlite").path, tmp.path("b.sqlite").path]).status == 2)
        #expect(
            USM.run(["salvage", tmp.path("ok/Library.sqlite").path, tmp.path("ok/Library.sqlite").path]).status == 64)
        #expect(USM.run(["salvage", tmp.path("missing.sqlite").path, tmp.path("c.sqlite").path]).status == 66)
        #expect(
            USM.run(["salvage", tmp.path("ok/Library.sqlite").path, tmp.path("nowhere/d.sqlite").path]).status == 66)
        for name in ["a.sqlite", "b.sqlite", "c.sqlite"] {
            #expect(!FileManager.default.fileExists(atPath: tmp.path(name).path))
        }
        let plain = tmp.path("plain.sqlite")
        try FixtureStore.writePlainSQLite(to: plain)
        #expect(USM.run(["salvage", plain.path, tmp.path("e.sqlite").path]).status == 2)
    }

    @Test("counters behind the keys are raised, external-data references without a file cut, and both reported")
    func coreDataPass() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/Library.sqlite"))
        try FixtureStore.mutate(tmp.path("src/Library.sqlite"), "UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 4")
        let external = tmp.path("src/.Library_SUPPORT/_EXTERNAL_DATA")
        let first = try #require(try FileManager.default.contentsOfDirectory(atPath: external.path).sorted().first)
        try FileManager.default.removeItem(at: external.appendingPathComponent(first))
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        let r = USM.run(["salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path, "--json"])
        #expect(r.status == 1, "\(r.stderr)")
        #expect((r.details["countersRaised"] as? [String: Any])?["Author"] as? Int == 3)
        let cuts = r.details["referencesCut"] as? [[String: Any]] ?? []
        #expect(
            cuts.contains {
                $0["kind"] as? String == "external-data" && $0["column"] as? String == "ZCOVER"
                    && $0["rows"] as? Int == 1
            }, "\(cuts)")
        #expect(USM.run(["check", "--store", tmp.path("out/Library.sqlite").path]).status == 0)
    }

    @Test(
        "--overwrite without --yes is refused unattended; with it the old DST is snapshotted and restore puts it back")
    func overwrite() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/Library.sqlite"))
        var other = FixtureStore.Options()
        other.books = 1
        try FixtureStore.write(to: tmp.path("out/Library.sqlite"), other)
        let refused = USM.run([
            "salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path, "--overwrite",
        ])
        #expect(refused.status == 3)
        let r = USM.run([
            "salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path, "--overwrite", "--yes",
            "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let snapshot = try #require(r.json["snapshot"] as? String)
        #expect(FileManager.default.fileExists(atPath: snapshot))
        #expect(try StoreRows.read(tmp.path("out/Library.sqlite"))["ZITEM"]?.count == 9)
        let restored = USM.run(["restore", snapshot, "--yes"])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try StoreRows.read(tmp.path("out/Library.sqlite"))["ZITEM"]?.count == 4)
    }

    @Test("a kill after the build step is undone by recover: nothing at DST, no working files left")
    func killedAndRecovered() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/Library.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        let killed = USM.run(
            ["salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path],
            hooks: .interrupt(after: 0))
        #expect(killed.status == PlanExecutor.Hooks.interruptedStatus)
        #expect(FileManager.default.fileExists(atPath: tmp.path("out/.usm-repair").path))
        let recovered = USM.run(["recover", "--store", tmp.path("out/Library.sqlite").path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: tmp.path("out").path).filter { $0 != ".usm-repair" }
                .isEmpty)
        let again = USM.run(["salvage", tmp.path("src/Library.sqlite").path, tmp.path("out/Library.sqlite").path])
        #expect(again.status == 0, "\(again.stderr)")
    }
}
