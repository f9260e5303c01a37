import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Recovery never deletes an item it did not put back, puts a store's file set back whole or not
/// at all, and puts back only what the operation moved aside: whatever the journal says (emptied,
/// cut short, replaced, deleted), whatever was planted in the trash meanwhile.
@Suite("recovery and the trash: nothing lost, nothing foreign put back", .timed)
struct RecoveryTrashTests {
    typealias Fixture = OperationTests.Fixture

    /// Runs `delete local-store --yes` stopped (as a kill would) right after its last retire step:
    /// the whole file set is in the trash. Returns the operation folder and the layout as it was before.
    static func interruptedDelete(_ f: Fixture) throws -> (folder: URL, before: [TreeSnapshot]) {
        let before = try f.snapshot()
        let steps = try #require(
            try f.run(["delete", "local-store", "--dry-run", "--json"]).json["steps"] as? [[String: Any]])
        let retire = try #require(steps.lastIndex { $0["action"] as? String == "retire" })
        #expect(
            try f.run(["delete", "local-store", "--yes"], hooks: .interrupt(after: retire)).status
                == PlanExecutor.Hooks.interruptedStatus)
        #expect(!f.exists(f.paths.localStore))
        let folder = try #require(PlanExecutor.pending(in: [HostileLayoutTests.appRoot(f)]).first)
        return (folder, before)
    }

    static func trashItem(_ folder: URL, named name: String) throws -> URL {
        let trash = folder.appendingPathComponent("trash")
        for slot in try FileManager.default.contentsOfDirectory(atPath: trash.path) {
            let item = trash.appendingPathComponent("\(slot)/\(name)")
            if FileStatus.lookup(item.path) != nil { return item }
        }
        throw USMError.notFound(path: trash.appendingPathComponent("*/\(name)").path, what: "the retired item")
    }

    @Test(
        "a journal emptied, cut short, replaced by a FIFO or a link, or deleted: the retired store is put back from the plan, never purged",
        arguments: ["emptied", "cut short", "fifo", "symlink", "deleted"])
    func damagedJournal(damage: String) throws {
        let f = try Fixture()
        let (folder, before) = try Self.interruptedDelete(f)
        let journal = folder.appendingPathComponent("journal.jsonl")
        switch damage {
        case "emptied":
            try Data().write(to: journal)
        case "cut short":
            // Only the snapshot's events stay: no retire step is said to have begun.
            let lines = try String(contentsOf: journal, encoding: .utf8).split(separator: "\n").prefix(2)
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: journal)
        case "fifo":
            try FileManager.default.removeItem(at: journal)
            #expect(mkfifo(journal.path, 0o600) == 0)
        case "symlink":
            try FileManager.default.removeItem(at: journal)
            try Data().write(to: f.tmp.path("elsewhere.jsonl"))
            try FileManager.default.createSymbolicLink(at: journal, withDestinationURL: f.tmp.path("elsewhere.jsonl"))
        default:
            try FileManager.default.removeItem(at: journal)
        }
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((r.json["recovered"] as? [[String: Any]])?.first?["outcome"] as? String == "undone", "\(r.stdout)")
        #expect(try f.snapshot() == before, "every item of the file set is back, byte for byte")
        #expect(PlanExecutor.pending(in: [HostileLayoutTests.appRoot(f)]).isEmpty)
    }

    @Test("an item in the trash that no step puts back: recover refuses (3), keeps the folder and the item")
    func unexplainedTrashItem() throws {
        let f = try Fixture()
        let (folder, _) = try Self.interruptedDelete(f)
        let stray = folder.appendingPathComponent("trash/99/Other.sqlite")
        try FileManager.default.createDirectory(
            at: stray.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("someone's store".utf8).write(to: stray)
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "recovery-conflict")
        #expect(r.stderr.contains(stray.path) || r.stdout.contains(stray.path), "the item is named")
        #expect(!r.stdout.contains("undone"))
        #expect(try Data(contentsOf: stray) == Data("someone's store".utf8))
        #expect(PlanExecutor.pending(in: [HostileLayoutTests.appRoot(f)]).first == folder)
        // The next changing command recovers first: it refuses the same way, nothing discarded.
        let next = try f.run(["delete", "local-store", "--yes", "--json"])
        #expect(next.status == 3, "\(next.stderr)")
        #expect(FileStatus.lookup(stray.path) != nil)
        // Once the item is taken away, the operation is undone.
        try FileManager.default.removeItem(at: stray.deletingLastPathComponent())
        #expect(try f.run(["recover"]).status == 0)
        #expect(PlanExecutor.pending(in: [HostileLayoutTests.appRoot(f)]).isEmpty)
    }

    @Test("a newcomer at the store's path: recovery-conflict puts no member of the old file set back (no stale -wal)")
    func conflictMovesNothing() throws {
        let f = try Fixture()
        let wal = f.paths.localStore.path + "-wal"
        let shm = f.paths.localStore.path + "-shm"
        #expect(FileStatus.lookup(wal) != nil && FileStatus.lookup(shm) != nil, "the fixture's store has a -wal, -shm")
        let oldWAL = try Data(contentsOf: URL(fileURLWithPath: wal))
        let (folder, _) = try Self.interruptedDelete(f)
        try Data("new empty store".utf8).write(to: f.paths.localStore)
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "recovery-conflict")
        #expect(FileStatus.lookup(wal) == nil, "the old -wal is not put back beside the newcomer")
        #expect(FileStatus.lookup(shm) == nil)
        #expect(try Data(contentsOf: f.paths.localStore) == Data("new empty store".utf8))
        #expect(try Data(contentsOf: try Self.trashItem(folder, named: "UbiquityStore.sqlite-wal")) == oldWAL)
        #expect(PlanExecutor.pending(in: [HostileLayoutTests.appRoot(f)]).first == folder)
    }

    @Test(
        "a symlink or a hard link planted in the trash for the retired store: recover refuses (3), installs nothing",
        arguments: ["symlink", "hard link"])
    func foreignTrashItem(kind: String) throws {
        let f = try Fixture()
        let (dir, secret) = try HostileLayoutTests.outside(f)
        let outsideBefore = try TreeSnapshot(dir)
        let (folder, _) = try Self.interruptedDelete(f)
        let item = try Self.trashItem(folder, named: "UbiquityStore.sqlite")
        try FileManager.default.removeItem(at: item)
        if kind == "symlink" {
            try FileManager.default.createSymbolicLink(at: item, withDestinationURL: secret)
        } else {
            try FileManager.default.linkItem(at: secret, to: item)
        }
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "recovery-conflict")
        #expect(r.stderr.contains(item.path) || r.stdout.contains(item.path), "the item is named")
        #expect(FileStatus.lookup(f.paths.localStore.path) == nil, "nothing installed at the store's path")
        #expect(FileStatus.lookup(f.paths.localStore.path + "-wal") == nil, "nothing of the set moved")
        #expect(PlanExecutor.pending(in: [HostileLayoutTests.appRoot(f)]).first == folder)
        #expect(try TreeSnapshot(dir) == outsideBefore)
    }

    @Test("the trash swapped for a link during a run: no folder is made outside, the operation stays for recover")
    func trashSwappedDuringRun() throws {
        let f = try Fixture()
        let (dir, _) = try HostileLayoutTests.outside(f)
        let outsideBefore = try TreeSnapshot(dir)
        let before = try f.snapshot()
        let steps = try #require(
            try f.run(["delete", "local-store", "--dry-run", "--json"]).json["steps"] as? [[String: Any]])
        let retire = try #require(steps.firstIndex { $0["action"] as? String == "retire" })
        let root = HostileLayoutTests.appRoot(f)
        let target = dir
        // After the first retire, the trash is renamed away and a link to the outside put there.
        let hooks = PlanExecutor.Hooks(afterStep: { index in
            guard index == retire, let folder = PlanExecutor.pending(in: [root]).first else { return }
            let trash = folder.appendingPathComponent("trash")
            try FileManager.default.moveItem(at: trash, to: folder.appendingPathComponent("trash.gone"))
            try FileManager.default.createSymbolicLink(at: trash, withDestinationURL: target)
        })
        let r = try f.run(["delete", "local-store", "--yes", "--json"], hooks: hooks)
        #expect(r.status == 3, "\(r.stderr)")
        #expect(try TreeSnapshot(dir) == outsideBefore, "no folder made through the link")
        let folder = try #require(PlanExecutor.pending(in: [root]).first, "the operation stays pending")
        #expect(FileStatus.lookup(folder.appendingPathComponent("trash.gone").path) != nil)
        // The way back is named: the snapshot taken before the run, which is there.
        let named = try #require(
            r.stderr.range(of: "the snapshot taken before it, ").map { r.stderr[$0.upperBound...] }, "\(r.stderr)")
        let snapshot = String(named.prefix { $0 != "," })
        #expect(FileStatus.lookup(snapshot)?.kind == .file, "the snapshot named is there: \(snapshot)")
        #expect(r.stderr.contains("usm-repair restore \(snapshot) --yes"), "\(r.stderr)")
        // recover refuses while the items are not where the plan put them, discards nothing, and
        // names the snapshot too.
        let refused = try f.run(["recover"])
        #expect(refused.status == 3)
        #expect(
            refused.stderr.contains("usm-repair restore ") && refused.stderr.contains(snapshot), "\(refused.stderr)")
        #expect(FileStatus.lookup(folder.appendingPathComponent("trash.gone").path) != nil)
        // With the trash back in its place, recover undoes the operation.
        try FileManager.default.removeItem(at: folder.appendingPathComponent("trash"))
        try FileManager.default.moveItem(
            at: folder.appendingPathComponent("trash.gone"), to: folder.appendingPathComponent("trash"))
        let again = try f.run(["recover", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try f.snapshot() == before)
    }
}
