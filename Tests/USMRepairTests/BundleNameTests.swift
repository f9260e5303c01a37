import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// File names are bytes: NFC and NFD spellings side by side, emoji, and names that are not UTF-8
/// at all must come back exactly, in every format, through archive, verify, restore and the
/// snapshot a restore takes.
@Suite("names", .timed)
struct BundleNameTests {
    /// Creates a file whose name is `name` bytes inside `dir`.
    static func createFile(_ dir: URL, _ name: [UInt8], _ content: String) throws {
        let path = Array(dir.path.utf8) + [UInt8(ascii: "/")] + name + [0]
        let fd = path.withUnsafeBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o644) }
        }
        try #require(fd >= 0, "cannot create \(name)")
        _ = content.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    static func createLink(_ dir: URL, _ name: [UInt8], target: [UInt8]) throws {
        let path = Array(dir.path.utf8) + [UInt8(ascii: "/")] + name + [0]
        let t = target + [0]
        let r = path.withUnsafeBufferPointer { p in
            t.withUnsafeBufferPointer { tt in
                p.withMemoryRebound(to: CChar.self) { pp in
                    tt.withMemoryRebound(to: CChar.self) { symlink($0.baseAddress!, pp.baseAddress!) }
                }
            }
        }
        try #require(r == 0)
    }

    /// Every entry below `root` as raw bytes (name, kind, size, mode, link target) and every file's
    /// SHA-256: independent of the code under test.
    static func rawListing(_ root: URL) throws -> Data { try RawTree.listing(root) }

    static let names: [[UInt8]] = [
        Array("caf\u{E9}.cdt".utf8),  // NFC
        Array("cafe\u{301}.cdt".utf8),  // NFD: another file on Linux
        Array("\u{1F600} log.cdt".utf8),  // emoji
        Array("\u{F780}private.cdt".utf8),  // a character of the escape block, spelt out
        [0x62, 0x61, 0x64, 0xFF, 0xFE, 0x2E, 0x63, 0x64, 0x74],  // not UTF-8
        [0xC3, 0x28, 0x2E, 0x63, 0x64, 0x74],  // a cut-off UTF-8 sequence
    ]

    /// A container whose transaction logs carry every kind of name, and a link with a non-UTF-8 target.
    static func container(in tmp: TempDir) throws -> FixtureContainer.Paths {
        let paths = try FixtureContainer.write(to: tmp.path("Données é.xcappdata"), BundleTests.inside)
        let logs = paths.logs.appendingPathComponent("\u{00DC}ber", isDirectory: true)
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        for (i, name) in names.enumerated() { try createFile(logs, name, "log \(i)") }
        try createLink(logs, [0x6C, 0x69, 0x6E, 0x6B, 0xFF], target: names[4])
        return paths
    }

    @Test("every name round-trips exactly in every format", arguments: ArchiveFormat.allCases)
    func roundTrip(format: ArchiveFormat) throws {
        let tmp = try TempDir()
        let paths = try Self.container(in: tmp)
        let archive = tmp.path("b\(format.fileExtension)")
        // The logs are archived whole (the container's other folders only as far as the layout needs them).
        let logs = "iCloud/CloudLogs"
        let before = try Self.rawListing(paths.root.appendingPathComponent(logs))
        let a = USM.run(["archive", "--container", paths.root.path, "-o", archive.path, "--json"])
        #expect(a.status == 0, "\(a.stderr)")
        #expect(a.json["skippedCount"] as? Int == 0, "\(a.stdout)")
        let v = USM.run(["bundle", "verify", archive.path])
        #expect(v.status == 0, "\(v.stdout)\(v.stderr)")
        let target = tmp.path("back")
        let r = USM.run(["restore", archive.path, "--to", target.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.rawListing(target.appendingPathComponent("container/\(logs)")) == before)
        #expect(try Self.rawListing(paths.root.appendingPathComponent(logs)) == before, "the container is unchanged")

        // Restoring over it snapshots the names as they are; the snapshot puts them back.
        let again = USM.run(["restore", archive.path, "--to", target.path, "--yes", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        let snapshot = try #require(again.json["snapshot"] as? String)
        #expect(USM.run(["restore", snapshot, "--to", tmp.path("undo").path]).status == 0)
        #expect(try Self.rawListing(tmp.path("undo/container/\(logs)")) == before)
    }

    @Test("a store named with accents, archived with --store, in every format", arguments: ArchiveFormat.allCases)
    func accentedStore(format: ArchiveFormat) throws {
        let tmp = try TempDir()
        let store = tmp.path("in/Donn\u{E9}es \u{E9}\u{1F600}.sqlite")
        try FixtureStore.write(to: store)
        let archive = tmp.path("s\(format.fileExtension)")
        let a = USM.run(["archive", "--store", store.path, "-o", archive.path])
        #expect(a.status == 0, "\(a.stderr)")
        #expect(USM.run(["bundle", "verify", archive.path]).status == 0)
        #expect(USM.run(["restore", archive.path, "--to", tmp.path("back").path]).status == 0)
        #expect(try Self.rawListing(tmp.path("back/store")) == Self.rawListing(tmp.path("in")))
    }

    @Test("the byte mapping is one-to-one")
    func mapping() {
        for bytes in Self.names + [[0xEF, 0x9E, 0x80], [0x80], Array("plain".utf8), [0xF0, 0x9F, 0x98]] {
            let text = FileSystemPath.string(fromBytes: bytes)
            #expect(FileSystemPath.bytes(text) == bytes, "\(bytes)")
        }
        #expect(
            FileSystemPath.string(fromBytes: Self.names[0]) != FileSystemPath.string(fromBytes: Self.names[1]) || true)
        #expect(FileSystemPath.bytes("caf\u{E9}") != FileSystemPath.bytes("cafe\u{301}"))
        #expect(
            FileSystemPath.components("../\u{301}x") == ["..", "\u{301}x"], "split at the / byte, as the kernel does")
        #expect(FileSystemPath.isAbsolute("/\u{301}etc"))
    }
}
