import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
import Glibc
#endif

/// No room to write is one documented error (exit 75, `out-of-space`): under `ulimit -f` (EFBIG;
/// SIGXFSZ no longer kills the process) and on a full file system (ENOSPC). Nothing is left behind.
@Suite("out of space")
struct OutOfSpaceTests {
    static func quoted(_ path: String) -> String { "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test("ulimit -f: archive and status exit 75 with a sentence, no partial file, not killed by SIGXFSZ")
    func fileSizeLimit() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let out = tmp.path("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        // 40 blocks of 512 bytes: the stores' private copies pass it.
        let a = try CLI.shell("ulimit -f 40; usm-repair archive --container \(Self.quoted(paths.root.path)) -o \(Self.quoted(out.path))/b.tar.zst --json",
                              in: tmp.url)
        #expect(a.status == 75, "\(a.stdout)\(a.stderr)")
        #expect(a.stderr.contains("usm-repair: error: out of space writing "), "\(a.stderr)")
        #expect((a.json["error"] as? [String: Any])?["code"] as? String == "out-of-space")
        #expect(a.json["exitStatus"] as? String == "out-of-space")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "no partial file left")

        let s = try CLI.shell("ulimit -f 8; usm-repair status --store \(Self.quoted(paths.localStore.path)) --json", in: tmp.url)
        #expect(s.status == 75, "\(s.stdout)\(s.stderr)")
        let store = (s.json["stores"] as? [[String: Any]])?.first
        let problem = (store?["problems"] as? [[String: Any]])?.first
        #expect(problem?["code"] as? String == "write-failed")
        #expect((problem?["message"] as? String)?.contains("out of space") == true, "\(String(describing: problem))")
    }

    @Test("ulimit -f: an operation and its undo exit 75 or finish; out of room, nothing changed and nothing of ours left")
    func operationsUnderFileSizeLimit() throws {
        var failures = 0
        // Limits from below the snapshot's size to above the store's copy: each run stops at another step.
        for blocks in [8, 32, 64, 128, 256, 100_000] {
            let f = try OperationTests.Fixture { $0.local.walOnlyBooks = 2; $0.corruptedUUID = $0.oldUUID }
            let before = try f.snapshot()
            let r = try CLI.shell(
                "ulimit -f \(blocks); usm-repair rebuild --from local --container \(Self.quoted(f.paths.root.path)) --yes --json", in: f.tmp.url)
            #expect([0, 75].contains(r.status), "limit \(blocks): \(r.status) \(r.stderr)")
            if r.status == 75 {
                failures += 1
                #expect((r.json["error"] as? [String: Any])?["code"] as? String == "out-of-space", "limit \(blocks)")
                #expect(try f.snapshot() == before, "limit \(blocks): nothing changed")
            }
            for folder in f.paths.folders {
                #expect(!(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") }, "limit \(blocks): nothing of ours left")
            }
            guard r.status == 0, let snapshot = r.json["snapshot"] as? String else { continue }
            // The undo under the same limit: back to the state before, or exit 75 with the operation's state kept.
            let changed = try f.snapshot()
            let u = try CLI.shell("ulimit -f \(blocks); usm-repair restore \(Self.quoted(snapshot)) --yes --json", in: f.tmp.url)
            #expect([0, 75].contains(u.status), "undo, limit \(blocks): \(u.status) \(u.stderr)")
            #expect(try f.snapshot() == (u.status == 0 ? before : changed), "undo, limit \(blocks)")
            if u.status == 75 { failures += 1 }
        }
        #expect(failures > 0, "at least one limit was too small")
    }

    @Test("a full file system: archive exits 75 and leaves nothing", .enabled(if: geteuid() == 0, "mounting a small file system needs root"))
    func fullFileSystem() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        var rng = SeededRandom(seed: 7)
        try Data((0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(to: paths.logs.appendingPathComponent("random.cdt"))
        let small = tmp.path("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let mount = try BundleTests.run("/bin/sh", ["-c", "mount -t tmpfs -o size=256k tmpfs \(Self.quoted(small.path)) 2>&1 && echo mounted"])
        try #require(mount.contains("mounted"), "cannot mount a tmpfs here: \(mount)")
        defer { _ = try? BundleTests.run("/bin/umount", [small.path]) }
        let r = try CLI.run(["archive", "--container", paths.root.path, "-o", small.appendingPathComponent("b.tar.zst").path])
        #expect(r.status == 75, "\(r.stderr)")
        #expect(r.stderr.contains("out of space writing \(small.path)/"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: small.path).isEmpty, "no partial file left")
    }

    @Test("a full file system under the layout: the operation's staging runs out of room, exit 75, the layout as it was",
          .enabled(if: geteuid() == 0, "mounting a small file system needs root"))
    func operationOnFullFileSystem() throws {
        let tmp = try TempDir()
        let small = tmp.path("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let mount = try BundleTests.run("/bin/sh", ["-c", "mount -t tmpfs -o size=4m tmpfs \(Self.quoted(small.path)) 2>&1 && echo mounted"])
        try #require(mount.contains("mounted"), "cannot mount a tmpfs here: \(mount)")
        defer { _ = try? BundleTests.run("/bin/umount", [small.path]) }
        var o = FixtureContainer.Options()
        o.local.walOnlyBooks = 2
        let paths = try FixtureContainer.write(to: small.appendingPathComponent("Notes.xcappdata"), o)
        // Fill the file system but for less than the local store's size: its merged copy cannot be made.
        let storeSize = try #require(FileStatus.lookup(paths.localStore.path)?.size)
        var stat = statvfs()
        #expect(statvfs(small.path, &stat) == 0)
        let free = Int64(stat.f_bavail) * Int64(stat.f_frsize)
        let filler = small.appendingPathComponent("filler")
        try Data(count: Int(max(0, free - storeSize / 2))).write(to: filler)
        let before = try paths.folders.map(TreeSnapshot.init)
        let r = try CLI.run(["rebuild", "--from", "local", "--container", paths.root.path, "--yes", "--json"])
        #expect(r.status == 75, "\(r.status): \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "out-of-space")
        #expect(try paths.folders.map(TreeSnapshot.init) == before, "the layout as it was")
        for folder in paths.folders {
            #expect(!(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") }, "nothing of ours left")
        }
    }
}
