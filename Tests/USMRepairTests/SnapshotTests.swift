import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `Snapshot.take`: chosen items under named roots, absences recorded, written outside the
/// folders a change touches, and verified before it is returned.
@Suite("snapshots", .timed)
struct SnapshotTests {
    @Test("items and absences are recorded; the archive verifies and restores the items")
    func itemsAndAbsences() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        let local = StoreFileSet(main: paths.localStore)
        let created = paths.appDir.appendingPathComponent("New.sqlite")
        let request = Snapshot.Request(
            roots: [("app", paths.appDir), ("cloud", paths.cloudDir)],
            items: local.allMembers + [paths.logs.appendingPathComponent("StoreUUID+"), created],
            operation: "delete local-store", commandLine: ["test"])
        let before = try TreeSnapshot(paths.root)
        let file = try Snapshot.take(request, into: tmp.path("snaps"), protected: [])
        #expect(try TreeSnapshot(paths.root) == before, "taking a snapshot changes nothing")
        #expect(file.lastPathComponent.hasPrefix("delete-local-store-"))
        #expect(try BundleVerifier.verify(file).ok)
        let manifest = try BundleTests.manifest(file)
        let record = try #require(manifest["snapshot"] as? [String: Any])
        let items = record["items"] as? [String] ?? []
        let absent = record["absent"] as? [String] ?? []
        #expect(record["operation"] as? String == "delete local-store")
        #expect(items.contains("app/UbiquityStore.sqlite"))
        #expect(items.contains("app/UbiquityStore.sqlite-wal"))
        #expect(items.contains("cloud/CloudLogs/StoreUUID+"))
        #expect(absent.contains("app/New.sqlite"))
        #expect(absent.contains("app/UbiquityStore.sqlite-journal"), "a member that did not exist is recorded")
        let files = manifest["files"] as? [[String: Any]] ?? []
        #expect(!files.isEmpty)
        #expect(
            !files.contains { ($0["path"] as? String)?.contains("CloudStore") == true }, "only the items are captured")

        // Written at zstd level 1 (a short-lived safety copy; a bundle for people keeps level 3), and
        // `restore` reads it back.
        #expect(Snapshot.zstdLevel == 1)
        #expect(BundleWriter.zstdLevel(content: .full, contentBytes: 1 << 30) == 3)
        let back = tmp.path("back")
        #expect(USM.run(["restore", file.path, "--to", back.path]).status == 0)
        for suffix in ["", "-wal", "-shm"] {
            #expect(
                try Data(contentsOf: back.appendingPathComponent("app/UbiquityStore.sqlite\(suffix)"))
                    == Data(contentsOf: URL(fileURLWithPath: paths.localStore.path + suffix)))
        }
    }

    @Test(
        "a snapshot that does not read back stops the run before the first change: the layout as it was, nothing pending"
    )
    func unreadableSnapshotStopsTheRun() throws {
        let f = try OperationTests.Fixture()
        let before = try f.snapshot()
        let snaps = f.tmp.path("snaps")
        // Bytes in the middle of the archive overwritten once it is written, before its read-back
        // (which runs beside the build and is waited for before anything is retired).
        let hooks = PlanExecutor.Hooks(snapshotWritten: { file in
            guard let handle = try? FileHandle(forUpdating: file), let size = try? handle.seekToEnd() else { return }
            try? handle.seek(toOffset: size / 2)
            try? handle.write(contentsOf: Data(repeating: 0x5A, count: 256))
            try? handle.close()
        })
        let r = try f.run(
            ["migrate", "cloud-to-local", "--replace", "--yes", "--json", "--snapshot-dir", snaps.path], hooks: hooks)
        #expect(r.status != 0 && r.status != PlanExecutor.Hooks.interruptedStatus, "\(r.stdout)\(r.stderr)")
        #expect(
            (r.json["error"] as? [String: Any])?["message"].map { "\($0)".contains(snaps.path) } == true, "\(r.stdout)")
        #expect(try f.snapshot() == before, "nothing retired or installed on a snapshot that does not read back")
        let status = try f.run(["status", "--json"])
        let codes = ((status.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
        #expect(!codes.contains("interrupted-operation"))
        // The same run without the damage goes through (the fixture allows it).
        let ok = try f.run(["migrate", "cloud-to-local", "--replace", "--yes", "--json", "--snapshot-dir", snaps.path])
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    @Test("a snapshot folder inside a folder the change touches is refused, nothing written")
    func protectedFolder() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        let request = Snapshot.Request(roots: [("app", paths.appDir)], items: [paths.localStore], operation: "x")
        #expect(throws: USMError.self) {
            try Snapshot.take(request, into: paths.appDir.appendingPathComponent("snaps"), protected: [])
        }
        // Through a symlink too.
        try FileManager.default.createSymbolicLink(at: tmp.path("link"), withDestinationURL: paths.cloudDir)
        #expect(throws: USMError.self) {
            try Snapshot.take(request, into: tmp.path("link/snaps"), protected: [paths.cloudDir])
        }
        #expect(!FileManager.default.fileExists(atPath: paths.appDir.appendingPathComponent("snaps").path))
    }

    @Test("the default folder follows XDG_STATE_HOME, else ~/.local/state")
    func defaultFolder() {
        #expect(
            Snapshot.defaultDirectory(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/h"]).path
                == "/x/state/usm-repair/snapshots")
        #expect(
            Snapshot.defaultDirectory(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"]).path
                == "/h/.local/state/usm-repair/snapshots")
        #expect(Snapshot.defaultDirectory(environment: ["HOME": "/h"]).path == "/h/.local/state/usm-repair/snapshots")
    }
}
