import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// No room to write is one documented error (exit 75, `out-of-space`): under `ulimit -f` (EFBIG;
/// SIGXFSZ no longer kills the process) and on a full file system (ENOSPC). Nothing is left behind.
@Suite("out of space", .timed)
struct OutOfSpaceTests {
    static func quoted(_ path: String) -> String { "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test(
        "ulimit -f (a real process): archive and status exit 75 with a sentence, no partial file, not killed by SIGXFSZ; an operation and its undo exit 75 or finish, out of room nothing changed and nothing of ours left"
    )
    func fileSizeLimit() throws {
        try Self.archiveAndStatusUnderFileSizeLimit()
        try Self.operationsUnderFileSizeLimit()
    }

    /// archive and status under `ulimit -f`: exit 75 with a sentence, no partial file, not killed
    /// by SIGXFSZ.
    static func archiveAndStatusUnderFileSizeLimit() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let out = tmp.path("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        // 40 blocks of 512 bytes: the stores' private copies pass it.
        let a = try CLI.shell(
            "ulimit -f 40; usm-repair archive --container \(Self.quoted(paths.root.path)) -o \(Self.quoted(out.path))/b.tar.zst --json",
            in: tmp.url)
        #expect(a.status == 75, "\(a.stdout)\(a.stderr)")
        #expect(a.stderr.contains("usm-repair: error: out of space writing "), "\(a.stderr)")
        #expect((a.json["error"] as? [String: Any])?["code"] as? String == "out-of-space")
        #expect(a.json["exitStatus"] as? String == "out-of-space")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "no partial file left")

        let s = try CLI.shell(
            "ulimit -f 8; usm-repair status --store \(Self.quoted(paths.localStore.path)) --json", in: tmp.url)
        #expect(s.status == 75, "\(s.stdout)\(s.stderr)")
        let store = (s.json["stores"] as? [[String: Any]])?.first
        let problem = (store?["problems"] as? [[String: Any]])?.first
        #expect(problem?["code"] as? String == "write-failed")
        #expect((problem?["message"] as? String)?.contains("out of space") == true, "\(String(describing: problem))")
    }

    /// An operation and its undo under `ulimit -f`: exit 75 or finish; out of room, nothing
    /// changed and nothing of ours left.
    static func operationsUnderFileSizeLimit() throws {
        var failures = 0
        // Limits from below the snapshot's size to above the store's copy: each run stops at another step.
        for blocks in [8, 32, 64, 128, 256, 100_000] {
            let f = try OperationTests.Fixture {
                $0.local.walOnlyBooks = 2
                $0.corruptedUUID = $0.oldUUID
            }
            let before = try f.snapshot()
            let r = try CLI.shell(
                "ulimit -f \(blocks); usm-repair rebuild --from local --discard-cloud --container \(Self.quoted(f.paths.root.path)) --yes --json",
                in: f.tmp.url)
            #expect([0, 75].contains(r.status), "limit \(blocks): \(r.status) \(r.stderr)")
            if r.status == 75 {
                failures += 1
                #expect((r.json["error"] as? [String: Any])?["code"] as? String == "out-of-space", "limit \(blocks)")
                #expect(try f.snapshot() == before, "limit \(blocks): nothing changed")
            }
            for folder in f.paths.folders {
                #expect(
                    !(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") },
                    "limit \(blocks): nothing of ours left")
            }
            guard r.status == 0, let snapshot = r.json["snapshot"] as? String else { continue }
            // The undo under the same limit: back to the state before, or exit 75 with the operation's state kept.
            let changed = try f.snapshot()
            let u = try CLI.shell(
                "ulimit -f \(blocks); usm-repair restore \(Self.quoted(snapshot)) --yes --json", in: f.tmp.url)
            #expect([0, 75].contains(u.status), "undo, limit \(blocks): \(u.status) \(u.stderr)")
            #expect(try f.snapshot() == (u.status == 0 ? before : changed), "undo, limit \(blocks)")
            if u.status == 75 { failures += 1 }
        }
        #expect(failures > 0, "at least one limit was too small")
    }

    @Test(
        "a full file system: archive exits 75 and leaves nothing",
        .enabled(if: geteuid() == 0, "mounting a small file system needs root"))
    func fullFileSystem() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        var rng = SeededRandom(seed: 7)
        try Data((0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(
            to: paths.logs.appendingPathComponent("random.cdt"))
        let small = tmp.path("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let tmpfs = try TestMount(tmpfsAt: small, size: 256 << 10)
        defer {
            tmpfs.unmount()
            withExtendedLifetime(tmp) {}
        }
        let r = USM.run([
            "archive", "--container", paths.root.path, "-o", small.appendingPathComponent("b.tar.zst").path,
        ])
        #expect(r.status == 75, "\(r.stderr)")
        #expect(r.stderr.contains("out of space writing \(small.path)/"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: small.path).isEmpty, "no partial file left")
    }

    @Test(
        "a full file system under the layout: the operation's staging runs out of room, exit 75, the layout as it was",
        .enabled(if: geteuid() == 0, "mounting a small file system needs root"))
    func operationOnFullFileSystem() throws {
        let tmp = try TempDir()
        let small = tmp.path("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let tmpfs = try TestMount(tmpfsAt: small, size: 4 << 20)
        defer {
            tmpfs.unmount()
            withExtendedLifetime(tmp) {}
        }
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
        let r = USM.run([
            "rebuild", "--from", "local", "--discard-cloud", "--container", paths.root.path, "--yes", "--json",
        ])
        #expect(r.status == 75, "\(r.status): \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "out-of-space")
        #expect(try paths.folders.map(TreeSnapshot.init) == before, "the layout as it was")
        for folder in paths.folders {
            #expect(
                !(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") }, "nothing of ours left"
            )
        }
    }

    @Test(
        "a full file system under the layout, every operation, the file system filled to several levels: exit 0 or 75 naming a folder of the layout, never 2 or 74; the layout as it was",
        .enabled(if: geteuid() == 0, "mounting a small file system needs root"))
    func everyOperationOnFullFileSystem() throws {
        let tmp = try TempDir()
        let small = tmp.path("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let tmpfs = try TestMount(tmpfsAt: small, size: 8 << 20)
        defer {
            tmpfs.unmount()
            withExtendedLifetime(tmp) {}
        }
        var o = FixtureContainer.Options()
        o.local.walOnlyBooks = 2
        o.local.books = 400
        o.cloud.books = 600
        let template = tmp.path("template")
        let templatePaths = try FixtureContainer.write(to: template.appendingPathComponent("Notes.xcappdata"), o)
        let commands: [[String]] = [
            ["migrate", "cloud-to-local", "--replace"], ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"],
            ["rebuild", "--from", "cloud", "--replace"], ["rebuild", "--from", "local", "--discard-cloud"],
            ["delete", "container"], ["cloud", "disable"], ["corruption", "mark"], ["switch", o.oldUUID!],
            ["delete", "local-store"],
        ]
        let storeSize = try #require(FileStatus.lookup(templatePaths.localStore.path)?.size)
        for command in commands {
            for left in [Int64(0), 4096, 20_000, storeSize / 2, storeSize * 3 / 2] {
                let work = small.appendingPathComponent("w")
                _ = try? FileManager.default.removeItem(at: work)
                try FileManager.default.copyItem(at: template, to: work)
                let paths = FixtureContainer.paths(work.appendingPathComponent("Notes.xcappdata"), o)
                var stat = statvfs()
                #expect(statvfs(small.path, &stat) == 0)
                let free = Int64(stat.f_bavail) * Int64(stat.f_frsize)
                let filler = small.appendingPathComponent("filler")
                try Data(count: Int(max(0, free - left))).write(to: filler)
                defer { try? FileManager.default.removeItem(at: filler) }
                let before = try paths.folders.map(TreeSnapshot.init)
                let r = USM.run(command + ["--container", paths.root.path, "--yes", "--json"])
                let label = "\(command) with \(left) bytes left"
                #expect([0, 75].contains(r.status), "\(label): \(r.status) \(r.stderr)")
                if r.status == 75 {
                    #expect(r.stderr.contains("out of space writing \(work.path)"), "\(label): \(r.stderr)")
                    #expect(try paths.folders.map(TreeSnapshot.init) == before, "\(label): the layout as it was")
                }
                for folder in paths.folders {
                    #expect(
                        !(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") },
                        "\(label): nothing of ours left")
                }
            }
        }
    }
}

/// stdout that cannot be written is an answer, never a crash.
@Suite("output that cannot be written", .timed)
struct OutputFailureTests {
    @Test(
        "stdout on a full device: exit 75 with a sentence on stderr, after the work; a reader that went away: the command's own exit code"
    )
    func fullAndClosedStdout() throws {
        let f = try OperationTests.Fixture()
        let flags = f.flags.map(OutOfSpaceTests.quoted).joined(separator: " ")
        let normal = try f.run(["status", "--json"]).status
        let full = try CLI.shell("usm-repair status --json \(flags) > /dev/full", in: f.tmp.url)
        #expect(full.status == 75, "\(full.status) \(full.stderr)")
        #expect(full.stderr.contains("cannot write the output"), "\(full.stderr)")
        #expect(!full.stderr.contains("Fatal error"))
        // The reader closes after one byte: printing stops, the exit code is status's.
        let closed = try CLI.shell(
            "( usm-repair status --verbose \(flags); echo $? > code ) | head -c 1 > /dev/null; cat code", in: f.tmp.url)
        #expect(
            closed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(normal)",
            "\(closed.stdout) \(closed.stderr)")
        // A changing command whose report cannot be written: the change landed, exit 75.
        let op = try CLI.shell("usm-repair cloud disable --yes --json \(flags) > /dev/full", in: f.tmp.url)
        #expect(op.status == 75, "\(op.stderr)")
        #expect(try f.preferences()["USMCloudEnabledKey"] as? Bool == false)
        // In process, with the failure injected.
        let injected = USM.run(
            ["status"] + f.flags, outputFailure: .outOfSpace(path: "(standard output)", reason: "no room"))
        #expect(injected.status == 75)
    }
}
