import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 31 item 8, the small ones: `restore --to` ends with the `status` command for what it
/// restored, `snapshots prune --group-by container`, `createdAt` an ISO date, a store another
/// process holds said by `status` and by a dry run, the redaction map beside a redacted bundle.
/// (Origin: issue 31 item 8; the file was SmallOnesTests.)
@Suite("report details: restore's next step, snapshots by container, a held store, the redaction map", .timed)
struct ReportDetailTests {
    @Test("restore --to ends with the status command for what it restored, and that command reads it")
    func restoreToStatus() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("dl/Notes.xcappdata"))
        let bundle = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", bundle.path]).status == 0)
        let to = tmp.path("restored")
        let dry = USM.run(["restore", bundle.path, "--to", to.path, "--dry-run"])
        #expect(
            dry.stdout.contains("Next: after it, see what was restored: usm-repair status --container "),
            "\(dry.stdout)")
        let r = USM.run(["restore", bundle.path, "--to", to.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let status = r.details["status"] as? [String] ?? []
        #expect(
            status == [
                "usm-repair", "status", "--container", to.appendingPathComponent("container").path, "--cloud-dir",
                to.appendingPathComponent("cloud").path,
            ], "\(status)")
        let text = USM.run(["restore", bundle.path, "--to", tmp.path("again").path])
        #expect(text.stdout.contains("Next: see what was restored: usm-repair status --container"), "\(text.stdout)")
        let rerun = USM.run(Array(status.dropFirst()) + ["--json"])
        #expect(rerun.status == 0, "the command reads what was restored: \(rerun.stdout.prefix(300))")
        #expect((rerun.json["stores"] as? [[String: Any]])?.count == 3)
        // A store's bundle: --store with the store's file.
        let store = tmp.path("s/Customer.sqlite")
        try FixtureStore.write(to: store)
        #expect(USM.run(["archive", "--store", store.path, "-o", tmp.path("s.tar.zst").path]).status == 0)
        let single = USM.run(["restore", tmp.path("s.tar.zst").path, "--to", tmp.path("rs").path, "--json"])
        #expect(
            single.details["status"] as? [String] == [
                "usm-repair", "status", "--store", tmp.path("rs/store/Customer.sqlite").path,
            ], "\(single.stdout.prefix(400))")
    }

    @Test("snapshots prune --keep N --group-by container keeps the newest N of each container; createdAt is ISO 8601")
    func pruneByContainer() throws {
        let tmp = try TempDir()
        let folder = tmp.path("snapshots")
        let a = try FixtureContainer.write(to: tmp.path("a/Alpha.xcappdata"))
        let b = try FixtureContainer.write(to: tmp.path("b/Beta.xcappdata"))
        for (container, command) in [(a, "disable"), (a, "enable"), (a, "disable"), (b, "disable")] {
            let r = USM.run([
                "cloud", command, "--container", container.root.path, "--snapshot-dir", folder.path, "--yes",
            ])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let list = USM.run(["snapshots", "--snapshot-dir", folder.path, "--json"])
        let entries = list.json["snapshots"] as? [[String: Any]] ?? []
        #expect(entries.count == 4)
        #expect(
            entries.allSatisfy {
                ($0["createdAt"] as? String ?? "").wholeMatch(
                    of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z/) != nil
            },
            "\(entries.map { $0["createdAt"] ?? "" })")
        let all = USM.run(["snapshots", "prune", "--keep", "1", "--snapshot-dir", folder.path, "--dry-run", "--json"])
        #expect((all.details["removed"] as? [[String: Any]])?.count == 3, "without grouping, Beta's pushes out Alpha's")
        let grouped = USM.run([
            "snapshots", "prune", "--keep", "1", "--group-by", "container", "--snapshot-dir", folder.path, "--yes",
            "--json",
        ])
        #expect(grouped.status == 0, "\(grouped.stderr)")
        let removed = (grouped.details["removed"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        #expect(removed.count == 2 && removed.allSatisfy { $0.contains("-Alpha.xcappdata-") }, "\(removed)")
        #expect(grouped.details["kept"] as? Int == 2)
        #expect(USM.run(["snapshots", "prune", "--group-by", "container", "--snapshot-dir", folder.path]).status == 64)
        #expect(USM.run(["snapshots", "prune", "--keep", "1", "--group-by", "host"]).status == 64)
    }

    @Test("a store another process holds: status warns store-in-use, a dry run says the run would refuse")
    func storeHeld() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"), BundleTests.inside)
        let free = USM.run(["status", "--container", paths.root.path, "--json"])
        #expect(!free.stdout.contains("store-in-use"))
        let holder = try SQLiteHolder(paths.localStore)
        defer { holder.stop() }
        let r = USM.run(["status", "--container", paths.root.path])
        #expect(r.stdout.contains("warning store-in-use [UbiquityStore.sqlite]"), "\(r.stdout)")
        #expect(r.stdout.contains("(process \(holder.process.processIdentifier))"), "\(r.stdout)")
        let dry = USM.run([
            "rebuild", "--from", "local", "--discard-cloud", "--container", paths.root.path, "--dry-run", "--json",
        ])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            (dry.json["notes"] as? [String] ?? []).contains {
                $0.contains("running this plan now would refuse (exit 5)")
            },
            "\(dry.stdout.prefix(2000))")
    }
}

extension ReportDetailTests {
    @Test("the redacted bundle is no larger than the full one; its redaction map is a private file beside it")
    func redactionMap() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c/Notes.xcappdata"))
        try FixtureStore.mutate(paths.localStore, "UPDATE ZAUTHOR SET ZNAME = 'Ada Lovelace' WHERE Z_PK IN (1, 2)")
        let full = USM.run(["archive", "--container", paths.root.path, "-o", tmp.path("full.tar.zst").path, "--json"])
        let red = USM.run([
            "archive", "--container", paths.root.path, "--redact", "-o", tmp.path("red.tar.zst").path, "--json",
        ])
        #expect(full.status == 0 && red.status == 0, "\(red.stderr)")
        let fullBytes = full.json["bytes"] as? Int ?? 0
        let redBytes = red.json["bytes"] as? Int ?? .max
        #expect(redBytes <= fullBytes, "redacted \(redBytes) bytes, full \(fullBytes)")
        #expect(full.json["redactionMap"] is NSNull)
        let mapPath = try #require(red.json["redactionMap"] as? String)
        #expect(mapPath == tmp.path("red.tar.zst").path + ".redaction-map.jsonl")
        let mode = try FileManager.default.attributesOfItem(atPath: mapPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // The engineer finds the token of the value the customer names, and it is what the bundle holds.
        let lines = try String(contentsOfFile: mapPath, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] ?? [:]
        }
        #expect(
            lines.first?["bundle"] == "red.tar.zst" && lines.first?["bundleSHA256"] == red.json["sha256"] as? String)
        let token = try #require(lines.first { $0["text"] == "Ada Lovelace" }?["token"])
        #expect(lines.filter { $0["text"] == "Ada Lovelace" }.count == 1, "one token for equal values")
        #expect(USM.run(["restore", tmp.path("red.tar.zst").path, "--to", tmp.path("back").path]).status == 0)
        let local = tmp.path("back/container/AppData/Library/Application Support/UbiquityStore.sqlite")
        let names = try DatabaseQueue(path: local.path).read { db in
            try String.fetchAll(db, sql: "SELECT ZNAME FROM ZAUTHOR WHERE Z_PK IN (1, 2)")
        }
        #expect(names == [token, token])
        #expect(try Data(contentsOf: tmp.path("red.tar.zst")).range(of: Data("Lovelace".utf8)) == nil)
        let text = USM.run([
            "archive", "--container", paths.root.path, "--redact", "-o", tmp.path("red2.tar.zst").path,
        ])
        #expect(text.stdout.contains("Redaction map (private, 0600; keep it, never send it): "), "\(text.stdout)")
    }
}
