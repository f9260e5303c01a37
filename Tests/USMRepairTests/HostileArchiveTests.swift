import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Hostile and broken archives: a clear error, a documented exit code, and not one byte written
/// outside a private folder that is cleaned up.
@Suite("hostile archives", .timed)
struct HostileArchiveTests {
    typealias E = CraftedArchive.Entry

    /// Writes `entries` after a manifest of `listed` (default: the entries themselves), runs
    /// `restore` and `bundle verify`, and proves the target and the folder around it unchanged.
    func expectRefused(
        _ entries: [E], listed: [E]? = nil, manifest: Data? = nil, restoreStatus: Int32 = 3,
        verifyStatus: Int32? = nil, message: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let tmp = try TempDir()
        let archive = tmp.path("evil.tar.gz")
        let manifestData = manifest ?? CraftedArchive.manifest(for: listed ?? entries)
        try CraftedArchive.write([E("manifest.json", data: manifestData)] + entries, to: archive)
        let target = tmp.path("target")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let before = try TreeSnapshot(tmp.url)

        let r = USM.run(["restore", archive.path, "--to", target.path, "--yes"])
        #expect(r.status == restoreStatus, "restore: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains(message), "restore said: \(r.stderr)", sourceLocation: sourceLocation)
        #expect(try TreeSnapshot(tmp.url) == before, "nothing written", sourceLocation: sourceLocation)
        #expect(FileStatus.lookup("/tmp/usm-evil") == nil, sourceLocation: sourceLocation)

        let v = USM.run(["bundle", "verify", archive.path])
        #expect(
            v.status == (verifyStatus ?? restoreStatus), "verify: \(v.stdout)\(v.stderr)",
            sourceLocation: sourceLocation)
    }

    let ok = E("container/a.txt", data: Data("fine".utf8))

    /// Red team (issue 20, G10): a zip's central directory (what `unzip` and Python read) named
    /// `../../x` where the local header (what libarchive reads) named a harmless path, and the
    /// bundle verified and restored.
    @Test(
        "a zip whose central directory names what no local header names: refused (3), nothing written",
        arguments: ["a '..' path", "a name not in the archive"])
    func zipCentralDirectory(_ kind: String) throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), FixtureContainer.Options())
        let archive = tmp.path("a.zip")
        let a = USM.run(["archive", "--container", paths.root.path, "-o", archive.path])
        #expect(a.status == 0, "\(a.stderr)")
        var bytes = [UInt8](try Data(contentsOf: archive))
        // The central directory's copy of one name, rewritten at the same length.
        let name = try #require(try ArchiveContents.names(archive).first { $0.contains("StoreUUID") })
        let evil =
            kind == "a '..' path"
            ? String(repeating: "../", count: (name.utf8.count - 1) / 3)
                + String(repeating: "x", count: name.utf8.count - 3 * ((name.utf8.count - 1) / 3))
            : String(name.dropLast()) + "X"
        #expect(evil.utf8.count == name.utf8.count)
        let signature: [UInt8] = [0x50, 0x4B, 0x01, 0x02]
        var rewritten = false
        var i = 0
        while i + 46 < bytes.count, !rewritten {
            if Array(bytes[i..<i + 4]) == signature {
                let length = Int(bytes[i + 28]) | Int(bytes[i + 29]) << 8
                if Array(bytes[i + 46..<i + 46 + length]) == Array(name.utf8) {
                    bytes.replaceSubrange(i + 46..<i + 46 + length, with: Array(evil.utf8))
                    rewritten = true
                }
            }
            i += 1
        }
        #expect(rewritten, "the central directory holds \(name)")
        let evilZip = tmp.path("evil.zip")
        try Data(bytes).write(to: evilZip)
        let verify = USM.run(["bundle", "verify", evilZip.path])
        #expect(verify.status == 3, "\(verify.stdout)\(verify.stderr)")
        let target = tmp.path("target")
        let before = try TreeSnapshot(tmp.url)
        let restore = USM.run(["restore", evilZip.path, "--to", target.path, "--yes"])
        #expect(restore.status == 3, "\(restore.stderr)")
        #expect(try TreeSnapshot(tmp.url) == before, "nothing written")
        #expect(USM.run(["bundle", "verify", archive.path]).status == 0, "the untouched zip still verifies")
    }

    /// Found by the `ZipDirectory` fuzz target: a ZIP64 locator whose offset is past what an
    /// off_t holds made Foundation's seek trap (the process died); every offset read from the file
    /// is now checked against its size first.
    @Test("a zip's central directory pointing past the end of the file is a broken zip, not a crash")
    func zipDirectoryPastTheEnd() throws {
        let tmp = try TempDir()
        let file = tmp.path("crash.zip")
        let input =
            "UEsDAAgAF3J6XQAAAAIAAAAAAAAAAAAAAAAAAABL4gIAUEsHCMTyx/YEAAAAAAAAAAIAAAAAAAAAUEsBAi0DLQAIAAgAF3IA"
            + "B04/CGtOPwhrTj8Ia3V4CwABBAAAAAAEAAAAAAEAEAACAAAAAAAAAFACSwEtAy0ACAAIABdyel3E8sf2BAAAAAIAAAADACAA"
            + "AAAAAAAAAAB0cmlkZQYsAAAAAAAAAC0ALQAAAAAAAAAAAAMAAAAAAAAAAAAAAC0ALQAAQAAAAAAAAAMAAAAAAAAAAwAAAAAA"
            + "AAD0AAAAAAAAACQBAAAAAAAAUEsGBwAAAAAQAgAA+////wAAAABQSwUGAAAAAAAAAAAA/v////////8AAAAAAAAAAAAAAAAA"
            + "AAAAAAAAAAAAAAAAAAAAAAAAA////////5+ZAAMA9AAAACQBAAAAAA=="
        try #require(Data(base64Encoded: input)).write(to: file)
        #expect(throws: USMError.self) { try ZipCentralDirectory.forEachName(file.path) { _ in } }
        // An end record whose ZIP64 locator points anywhere past the end.
        var bytes = [UInt8](repeating: 0, count: 20)
        bytes[0...3] = [0x50, 0x4B, 0x06, 0x07]
        for i in 8..<16 { bytes[i] = 0xFF }
        bytes +=
            [0x50, 0x4B, 0x05, 0x06, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0xFF, count: 8) + [0, 0]
        try Data(bytes).write(to: file)
        #expect(throws: USMError.self) { try ZipCentralDirectory.forEachName(file.path) { _ in } }
    }

    @Test("absolute paths")
    func absolute() throws {
        try expectRefused(
            [ok, E("/tmp/usm-evil", data: Data("x".utf8))], listed: [ok], message: "has an absolute path")
    }

    @Test("'..' components")
    func dotDot() throws {
        try expectRefused(
            [E("container/../../usm-evil", data: Data("x".utf8))], listed: [ok], message: "'..' component")
    }

    @Test("symlinks pointing outside, and files written through a symlink")
    func symlinks() throws {
        try expectRefused([E("container/link", .symlink, linkTarget: "/tmp")], message: "symlink pointing outside")
        try expectRefused([E("container/link", .symlink, linkTarget: "../../..")], message: "symlink pointing outside")
        // A link that stays inside, then a file "below" it, which would land wherever the link points.
        let link = E("container/d", .symlink, linkTarget: "e")
        let dir = E("container/e", .directory, mode: 0o755)
        let through = E("container/d/f.txt", data: Data("x".utf8))
        try expectRefused([dir, link, through], message: "through the symlink")
    }

    @Test("hard links and device files")
    func kinds() throws {
        try expectRefused(
            [ok, E("container/h", .hardlink, linkTarget: "container/a.txt")], listed: [ok], message: "hard link")
        try expectRefused([ok, E("container/dev", .characterDevice)], listed: [ok], message: "device, FIFO or socket")
        try expectRefused([ok, E("container/fifo", .fifo)], listed: [ok], message: "device, FIFO or socket")
    }

    @Test("an entry larger than its manifest declares")
    func larger() throws {
        let big = E("container/big.bin", data: Data(count: 100_000))
        try expectRefused(
            [big], manifest: CraftedArchive.manifest(for: [big], sizeOverride: ["container/big.bin": 10]),
            message: "more than the manifest's 10")
    }

    @Test("duplicate entries")
    func duplicates() throws {
        try expectRefused([ok, ok], listed: [ok], message: "appears twice")
    }

    @Test("a manifest that does not match the content")
    func mismatch() throws {
        let changed = E("container/a.txt", data: Data("FINE".utf8))  // same size, other bytes
        try expectRefused([changed], listed: [ok], restoreStatus: 1, message: "does not match its manifest")
        // An entry the manifest does not list.
        try expectRefused(
            [ok, E("container/extra.txt", data: Data("x".utf8))], listed: [ok], restoreStatus: 1,
            message: "not in the manifest")
        // A file the manifest lists that is missing.
        try expectRefused(
            [ok], listed: [ok, E("container/gone.txt", data: Data("x".utf8))], restoreStatus: 1,
            message: "missing from the archive")
    }

    @Test("an archive that is not ours")
    func notOurs() throws {
        try expectRefused(
            [ok], manifest: CraftedArchive.manifest(for: [ok], format: "something-else"), restoreStatus: 2,
            message: "is not a usm-repair bundle")
        try expectRefused(
            [ok], manifest: Data("{\"hello\": 1}".utf8), restoreStatus: 2, message: "is not a usm-repair bundle")
        // A tar without any manifest.
        let tmp = try TempDir()
        let plain = tmp.path("plain.tar.gz")
        try CraftedArchive.write([ok], to: plain)
        let r = USM.run(["restore", plain.path, "--to", tmp.path("t").path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("its first entry is container/a.txt, not manifest.json"))
        #expect(FileStatus.lookup(tmp.path("t/container").path) == nil)
    }

    @Test("random bytes and a truncated bundle")
    func broken() throws {
        let tmp = try TempDir()
        let random = tmp.path("random.tar.zst")
        var rng = SeededRandom(seed: 5)
        try Data((0..<10_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(to: random)
        let r = USM.run(["restore", random.path, "--to", tmp.path("t").path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("cannot be read as an archive"))

        let paths = try FixtureContainer.write(to: tmp.path("c"))
        let good = tmp.path("good.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", good.path]).status == 0)
        let data = try Data(contentsOf: good)
        let cut = tmp.path("cut.tar.zst")
        try data.prefix(data.count * 2 / 3).write(to: cut)
        let before = try TreeSnapshot(tmp.url)
        let t = USM.run(["restore", cut.path, "--to", tmp.path("t2").path])
        #expect(t.status == 2, "\(t.stderr)")
        let v = USM.run(["bundle", "verify", cut.path])
        #expect(v.status == 2)
        #expect(try TreeSnapshot(tmp.url) == before, "verification fails before --to is even created")

        // A flipped byte inside: the sidecar and the hashes notice.
        var flipped = data
        flipped[flipped.count - 40] ^= 0xFF
        let bad = tmp.path("bad.tar.zst")
        try flipped.write(to: bad)
        try FileManager.default.copyItem(atPath: good.path + ".sha256", toPath: bad.path + ".sha256")
        #expect(USM.run(["bundle", "verify", bad.path]).status != 0)
    }

    @Test("a missing archive")
    func missing() throws {
        let tmp = try TempDir()
        #expect(USM.run(["bundle", "verify", tmp.path("nope.tar.zst").path]).status == 66)
        #expect(USM.run(["restore", tmp.path("nope.tar.zst").path, "--to", tmp.path("t").path]).status == 66)
    }
}
