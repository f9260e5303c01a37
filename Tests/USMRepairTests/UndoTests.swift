import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// `restore SNAPSHOT` without `--to`: every operation's snapshot puts the layout back byte for
/// byte (contents, modes, file times), removes what the operation created, leaves the next launch
/// as it was, and can itself be undone; it is journaled like an operation.
@Suite("undo: restore SNAPSHOT in place", .timed)
struct UndoTests {
    typealias Fixture = OperationTests.Fixture

    /// Every changing command, on a fixture where each one changes something.
    static let commands: [[String]] = [
        ["delete", "container"], ["delete", "container", "--local-only"], ["delete", "cloud-store"],
        ["delete", "cloud-store", "--local-only"], ["delete", "local-store"],
        ["rebuild", "--from", "local", "--discard-cloud"],
        ["rebuild", "--from", "local", "--discard-cloud", "--keep-old"],
        ["migrate", "local-to-cloud", "--discard-cloud"], ["rebuild", "--from", "cloud", "--in-app"],
        ["rebuild", "--from", "cloud", "--replace"], ["migrate", "cloud-to-local", "--replace"],
        ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"],
        ["migrate", "cloud-to-local", "--replace", "--strategy", "ios"], ["switch", "OLD"], ["cloud", "disable"],
        ["corruption", "clear"],
        ["corruption", "mark"],
    ]

    static func fixture() throws -> Fixture {
        try Fixture {
            $0.corruptedUUID = $0.oldUUID
            $0.local.walOnlyBooks = 2
        }
    }

    static func launch(_ f: Fixture) throws -> [String?] {
        let next = try f.status().nextLaunch
        return [next?.state, next?.outcome.rawValue, next?.store]
    }

    @Test(
        "restore <snapshot> gives back the original tree byte for byte, and the same next launch", arguments: commands)
    func undo(command: [String]) throws {
        let f = try Self.fixture()
        let command = command.map { $0 == "OLD" ? f.options.oldUUID! : $0 }
        let before = try f.snapshot()
        let launchBefore = try Self.launch(f)
        let json = try OperationTests.apply(f, command)
        #expect(json["noOp"] as? Bool == false, "\(command) changes something on this fixture")
        let snapshot = try #require(json["snapshot"] as? String)
        let changed = try f.snapshot()
        #expect(changed != before)

        // A dry run prints the plan and changes nothing.
        let dry = USM.run(["restore", snapshot, "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.json["dryRun"] as? Bool == true && dry.details["inPlace"] as? Bool == true)
        #expect(dry.details["undoes"] as? String == json["operation"] as? String)
        #expect(
            (dry.details["restored"] as? [String])?.isEmpty == false
                || (dry.details["removed"] as? [String])?.isEmpty == false)
        #expect(try f.snapshot() == changed, "\(command): the dry run changed nothing")

        // Without --yes and without a terminal: refused, nothing changed.
        let consent = USM.run(["restore", snapshot])
        #expect(consent.status == 3, "\(consent.stderr)")
        #expect(try f.snapshot() == changed)

        let undone = USM.run(["restore", snapshot, "--yes", "--json"])
        #expect(undone.status == 0, "\(command): \(undone.stderr)")
        let now = try f.snapshot()
        #expect(now == before, "\(command): \(zip(now, before).flatMap { $0.differences(from: $1) })")
        #expect(try Self.launch(f) == launchBefore)
        for folder in f.paths.folders {
            #expect(
                !(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") },
                "\(command): private folders removed")
        }

        // The undo's own snapshot redoes the operation, exactly.
        let redo = try #require(undone.json["snapshot"] as? String)
        #expect(!f.paths.folders.contains { Confinement.isInside(redo, $0.path) })
        let redone = USM.run(["restore", redo, "--yes"])
        #expect(redone.status == 0, "\(redone.stderr)")
        let again = try f.snapshot()
        #expect(again == changed, "\(command): \(zip(again, changed).flatMap { $0.differences(from: $1) })")
    }

    @Test(
        "a kill after any step of an undo: recover gives back the state before the undo, or the undone one once committed"
    )
    func crashDuringUndo() throws {
        let probe = try Self.fixture()
        let probeResult = try OperationTests.apply(probe, ["delete", "container"])
        let probeSnapshot = try #require(probeResult["snapshot"] as? String)
        let steps = try #require(
            USM.run(["restore", probeSnapshot, "--dry-run", "--json"]).json["steps"] as? [[String: Any]])
        let commitIndex = try #require(steps.firstIndex { $0["action"] as? String == "commit" })
        #expect(steps.contains { $0["action"] as? String == "extract" })
        for n in 0..<(steps.count - 1) {
            // Each kill on its own layout: a snapshot names the folders it was taken from.
            let f = try Self.fixture()
            let original = try f.snapshot()
            let result = try OperationTests.apply(f, ["delete", "container"])
            let snapshot = try #require(result["snapshot"] as? String)
            let changed = try f.snapshot()
            let killed = USM.run(["restore", snapshot, "--yes"], hooks: .interrupt(after: n))
            #expect(killed.status == PlanExecutor.Hooks.interruptedStatus, "step \(n): \(killed.stderr)")
            // The emptied ubiquity container is not found beside the download once the undo moved
            // the preferences aside: recovery refuses to work in a folder it was not given (exit 4)...
            let status = try f.run(["status", "--json"])
            let codes = ((status.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(codes.contains("interrupted-operation"), "step \(n): status reports it")
            #expect(
                USM.run(["restore", snapshot, "--dry-run"]).status == 7,
                "step \(n): a dry run refuses while one is pending")
            let withoutCloud = try f.run(["recover", "--json"])
            #expect([0, 4].contains(withoutCloud.status), "step \(n): \(withoutCloud.stderr)")
            // ...and recovers once it is named.
            let recovered =
                withoutCloud.status == 0
                ? withoutCloud : try f.run(["recover", "--json", "--cloud-dir", f.paths.cloudDir.path])
            #expect(recovered.status == 0, "\(recovered.stderr)")
            let outcome = (recovered.json["recovered"] as? [[String: Any]])?.first?["outcome"] as? String
            let state = try f.snapshot()
            if n < commitIndex {
                #expect(outcome == "undone", "step \(n)")
                #expect(state == changed, "step \(n): \(zip(state, changed).flatMap { $0.differences(from: $1) })")
            } else {
                #expect(outcome == "finished", "step \(n)")
                #expect(state == original, "step \(n): \(zip(state, original).flatMap { $0.differences(from: $1) })")
            }
            for folder in f.paths.folders {
                #expect(!(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") }, "step \(n)")
            }
        }
    }

    @Test("refusals: a bundle without --to, a folder that is gone, a store in use, another run; nothing changes")
    func refusals() throws {
        let f = try Self.fixture()
        // A bundle records no places to go back to.
        let bundle = f.tmp.path("case.tar.zst")
        #expect(try f.run(["archive", "-o", bundle.path]).status == 0)
        let notSnapshot = USM.run(["restore", bundle.path, "--yes", "--json"])
        #expect(notSnapshot.status == 64, "\(notSnapshot.stderr)")
        #expect(notSnapshot.stderr.contains("--to"))

        let result = try OperationTests.apply(f, ["rebuild", "--from", "local", "--discard-cloud"])
        let snapshot = try #require(result["snapshot"] as? String)
        let changed = try f.snapshot()

        // Another usm-repair run holds the layout.
        let lockFolder = f.paths.appDir.appendingPathComponent(".usm-repair")
        try FileManager.default.createDirectory(at: lockFolder, withIntermediateDirectories: true)
        let fd = open(lockFolder.appendingPathComponent("lock").path, O_RDWR | O_CREAT, 0o600)
        #expect(flock(fd, LOCK_EX) == 0)
        let busy = USM.run(["restore", snapshot, "--yes"])
        #expect(busy.status == 6, "\(busy.stderr)")
        close(fd)
        try FileManager.default.removeItem(at: lockFolder)
        #expect(try f.snapshot() == changed)

        // The local store open in another process: `HostileLayoutTests.copyInUse` (it needs a second process).

        // The folder it was taken from is gone.
        let moved = f.tmp.path("Moved.xcappdata")
        try FileManager.default.moveItem(at: f.paths.root, to: moved)
        let gone = USM.run(["restore", snapshot, "--yes", "--json"])
        #expect(gone.status == 8, "\(gone.stderr)")
        #expect((gone.json["error"] as? [String: Any])?["code"] as? String == "precondition-failed")
        try FileManager.default.moveItem(at: moved, to: f.paths.root)

        // A damaged snapshot is not planned from.
        let damaged = f.tmp.path("damaged.tar.zst")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: snapshot))
        bytes = bytes.prefix(bytes.count / 2)
        try bytes.write(to: damaged)
        let broken = USM.run(["restore", damaged.path, "--yes"])
        #expect(broken.status == 2, "\(broken.stderr)")
    }

    @Test("a snapshot of `restore --to` goes back in place too: the replaced folder returns whole")
    func restoreSnapshotInPlace() throws {
        let f = try Self.fixture()
        let bundle = f.tmp.path("case.tar.zst")
        #expect(try f.run(["archive", "-o", bundle.path]).status == 0)
        let target = f.tmp.path("cases")
        #expect(USM.run(["restore", bundle.path, "--to", target.path]).status == 0)
        let first = try TreeSnapshot(target)
        // Change the restored copy, then restore over it: the change is in the snapshot.
        let plist = try #require(
            FileManager.default.enumerator(atPath: target.path)?.compactMap { $0 as? String }.first {
                $0.hasSuffix(".plist")
            })
        try Data("edited".utf8).write(to: target.appendingPathComponent(plist))
        let root = try #require(try FileManager.default.contentsOfDirectory(atPath: target.path).sorted().first)
        try "x".write(
            to: target.appendingPathComponent(root).appendingPathComponent("added.txt"), atomically: true,
            encoding: .utf8)
        let edited = try TreeSnapshot(target)
        let over = USM.run(["restore", bundle.path, "--to", target.path, "--yes", "--json"])
        #expect(over.status == 0, "\(over.stderr)")
        #expect(over.details["inPlace"] as? Bool == false)
        #expect(try TreeSnapshot(target) == first)
        let snapshot = try #require(over.json["snapshot"] as? String)
        let undone = USM.run(["restore", snapshot, "--yes", "--json"])
        #expect(undone.status == 0, "\(undone.stderr)")
        #expect(try TreeSnapshot(target) == edited, "the edited copy is back, added.txt included")
    }

    @Test("restore --to --dry-run verifies and says what it would replace, writing nothing")
    func restoreToDryRun() throws {
        let f = try Self.fixture()
        let bundle = f.tmp.path("case.tar.zst")
        #expect(try f.run(["archive", "-o", bundle.path]).status == 0)
        let target = f.tmp.path("cases")
        let dry = USM.run(["restore", bundle.path, "--to", target.path, "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.json["dryRun"] as? Bool == true)
        #expect(FileStatus.lookup(target.path) == nil, "the target is not even created")
        #expect(((dry.details["roots"] as? [[String: Any]]) ?? []).allSatisfy { $0["replaced"] as? Bool == false })
        #expect(USM.run(["restore", bundle.path, "--to", target.path]).status == 0)
        let restored = try TreeSnapshot(target)
        let again = USM.run(["restore", bundle.path, "--to", target.path, "--dry-run"])
        #expect(again.status == 0)
        #expect(again.stdout.contains("Would replace"))
        #expect(try TreeSnapshot(target) == restored)
    }

    @Test(
        "a crafted snapshot cannot name paths outside its folders, nor a folder of /",
        arguments: [
            ("/", ["r/etc"], [String]()), ("SRC", ["r/../outside"], []), ("SRC", ["r/a"], ["q/b"]),
            ("SRC", ["r/./a"], []),
        ])
    func craftedSnapshots(source: String, items: [String], absent: [String]) throws {
        let tmp = try TempDir()
        let folder = tmp.path("src")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try "keep".write(to: folder.appendingPathComponent("a"), atomically: true, encoding: .utf8)
        let entries = [CraftedArchive.Entry("r/", .directory), CraftedArchive.Entry("r/a", data: Data("x".utf8))]
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: CraftedArchive.manifest(for: entries)) as? [String: Any])
        manifest["roots"] = [["name": "r", "source": source == "SRC" ? folder.path : source]]
        manifest["content"] = "snapshot"
        manifest["snapshot"] = ["operation": "delete container", "items": items, "absent": absent]
        let archive = tmp.path("crafted.tar.gz")
        try CraftedArchive.write(
            [
                CraftedArchive.Entry(
                    "manifest.json", data: try JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys]))
            ] + entries,
            to: archive)
        let before = try TreeSnapshot(tmp.url)
        let r = USM.run(["restore", archive.path, "--yes", "--json"])
        #expect(r.status == 3, "\(source) \(items) \(absent): \(r.status) \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "hostile-archive")
        #expect(try TreeSnapshot(tmp.url) == before)
    }
}
