import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Symlinks are judged by where they lead once every link on the way is followed, not by their text.
@Suite("links", .timed)
struct BundleLinkTests {
    typealias E = CraftedArchive.Entry

    @Test("archive leaves out a link that escapes through another link")
    func archiveChained() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        try Data("secret".utf8).write(to: tmp.path("victim"))
        // d leads to the container's root (inside); e reads as inside but goes three levels above d's target.
        try FileManager.default.createSymbolicLink(
            atPath: paths.logs.appendingPathComponent("d").path, withDestinationPath: "../..")
        try FileManager.default.createSymbolicLink(
            atPath: paths.logs.appendingPathComponent("e").path, withDestinationPath: "d/../../../victim")
        try FileManager.default.createSymbolicLink(
            atPath: paths.logs.appendingPathComponent("ok").path, withDestinationPath: "d/AppData")
        try FileManager.default.createSymbolicLink(
            atPath: paths.logs.appendingPathComponent("loop").path, withDestinationPath: "loop")
        let archive = tmp.path("b.tar.zst")
        let a = USM.run(["archive", "--container", paths.root.path, "-o", archive.path])
        #expect(a.status == 0, "\(a.stderr)")
        let skipped = try #require(try BundleTests.manifest(archive)["skipped"] as? [[String: Any]])
        let reasons = Dictionary(
            skipped.map { (($0["path"] as? String) ?? "", ($0["reason"] as? String) ?? "") },
            uniquingKeysWith: { a, _ in a })
        #expect(reasons["container/iCloud/CloudLogs/e"]?.contains("points outside") == true, "\(reasons)")
        #expect(reasons["container/iCloud/CloudLogs/loop"]?.contains("does not resolve within") == true, "\(reasons)")
        #expect(reasons["container/iCloud/CloudLogs/d"] == nil && reasons["container/iCloud/CloudLogs/ok"] == nil)
        let back = tmp.path("back")
        #expect(USM.run(["restore", archive.path, "--to", back.path]).status == 0)
        let logs = back.appendingPathComponent("container/iCloud/CloudLogs")
        #expect(FileStatus.lookup(logs.appendingPathComponent("e").path) == nil)
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: logs.appendingPathComponent("d").path) == "../..")
    }

    /// Restore and verify both refuse the archive with exit 3, and nothing is written.
    func expectRefused(_ entries: [E], message: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let tmp = try TempDir()
        let archive = tmp.path("evil.tar.gz")
        try CraftedArchive.write(
            [E("manifest.json", data: CraftedArchive.manifest(for: entries))] + entries, to: archive)
        let target = tmp.path("target")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let before = try TreeSnapshot(tmp.url)
        let r = USM.run(["restore", archive.path, "--to", target.path])
        #expect(r.status == 3, "\(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains(message), "\(r.stderr)", sourceLocation: sourceLocation)
        #expect(try TreeSnapshot(tmp.url) == before, "nothing written", sourceLocation: sourceLocation)
        let v = USM.run(["bundle", "verify", archive.path])
        #expect(v.status == 3, "\(v.stdout)\(v.stderr)", sourceLocation: sourceLocation)
    }

    @Test("restore refuses a link that escapes through the bundle's own links, before writing anything")
    func restoreChained() throws {
        let dir = E("container/a/b", .directory, mode: 0o755)
        let d = E("container/a/b/d", .symlink, linkTarget: "../..")
        let e = E("container/a/b/e", .symlink, linkTarget: "d/../../../victim")
        try expectRefused(
            [E("container/a", .directory, mode: 0o755), dir, d, e], message: "symlink pointing outside its root")
        // The same when the link it passes through comes later in the archive.
        try expectRefused(
            [E("container/a", .directory, mode: 0o755), dir, e, d], message: "symlink pointing outside its root")
    }

    @Test("a combining mark after a slash does not hide a '..' from the check")
    func combiningMark() throws {
        try expectRefused(
            [E("container/l", .symlink, linkTarget: "../\u{301}x")], message: "symlink pointing outside its root")
        try expectRefused(
            [E("container/l", .symlink, linkTarget: "/\u{301}etc")], message: "symlink pointing outside its root")
    }

    @Test("links that never resolve (a loop) are refused")
    func loop() throws {
        try expectRefused(
            [E("container/l1", .symlink, linkTarget: "l2"), E("container/l2", .symlink, linkTarget: "l1")],
            message: "does not resolve within")
    }
}
