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
}
