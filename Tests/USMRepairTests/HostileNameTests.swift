import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Names in the layout that are not valid UTF-8 (APFS and HFS+ store only Unicode names, so on a
/// copy of an iOS or macOS container they come from damage: an archive unpacked with the wrong
/// encoding, or a hostile copy). Foundation and SQLite take paths as UTF-8 and would address
/// other bytes, so discovery never uses such a name: `status` and `check` report it
/// (`undecodable-name`, exit 2), every changing command refuses (exit 2) and changes nothing, and
/// `archive` keeps its bytes (a full bundle) or leaves it out (redacted), with a bundle that verifies.
@Suite("hostile names: not UTF-8", .timed)
struct HostileNameTests {
    typealias Fixture = OperationTests.Fixture

    /// The bytes of the peer folder's new name: `mobile~` then 0xFF, never valid UTF-8.
    static let badPeer: [UInt8] = Array("mobile~".utf8) + [0xFF]

    /// Renames `from` (a plain path) to `to` given as raw bytes, with the system call itself.
    static func rename(_ from: String, toBytes to: [UInt8]) throws {
        let target = (to + [0]).map { CChar(bitPattern: $0) }
        let result = from.withCString { source in
            target.withUnsafeBufferPointer { Glibc.rename(source, $0.baseAddress!) }
        }
        try #require(result == 0, "rename failed: \(errno)")
    }

    /// Creates a folder named with raw bytes.
    static func mkdir(_ path: [UInt8]) throws {
        let raw = (path + [0]).map { CChar(bitPattern: $0) }
        try #require(raw.withUnsafeBufferPointer { Glibc.mkdir($0.baseAddress!, 0o755) } == 0, "mkdir failed: \(errno)")
    }

    /// A fixture whose peer folder under `CoreDataUbiquitySupport/` (holding this device's copies
    /// of the cloud stores) is renamed `mobile~\xff`; returns its raw path.
    static func badPeerFixture() throws -> (Fixture, [UInt8]) {
        let f = try Fixture()
        let support = f.paths.appDir.appendingPathComponent("CloudStore/CoreDataUbiquitySupport").path
        let raw = Array(support.utf8) + [UInt8(ascii: "/")] + badPeer
        try rename(support + "/" + f.options.peer, toBytes: raw)
        return (f, raw)
    }

    /// Every folder of the fixture as raw bytes (names, kinds, sizes, modes, link targets, file hashes).
    static func trees(_ f: Fixture) throws -> [Data] { try f.paths.folders.map(RawTree.listing) }

    static func problems(_ r: CLI.Result) -> [[String: Any]] {
        var all = r.json["problems"] as? [[String: Any]] ?? []
        for store in r.json["stores"] as? [[String: Any]] ?? [] { all += store["problems"] as? [[String: Any]] ?? [] }
        return all
    }

    static func error(_ r: CLI.Result) -> [String: Any] { r.json["error"] as? [String: Any] ?? [:] }

    @Test("status and check report the peer folder as undecodable-name (exit 2), never 'No such file'")
    func readOnly() throws {
        let (f, raw) = try Self.badPeerFixture()
        let before = try Self.trees(f)
        for command in ["status", "check"] {
            let r = try f.run([command, "--json"])
            #expect(r.status == 2, "\(command): \(r.stdout)\(r.stderr)")
            let found = Self.problems(r).filter { $0["code"] as? String == "undecodable-name" }
            #expect(found.count == 1, "\(command): \(Self.problems(r))")
            // JSON keeps the name exactly (the escape block maps back to the very bytes).
            let subject = found.first?["subject"] as? String ?? ""
            #expect(FileSystemPath.bytes(subject) == raw, "\(command): \(subject.debugDescription)")
            #expect(!Self.problems(r).contains { $0["code"] as? String == "unreadable" }, "\(command): \(r.stdout)")
            #expect(!r.stdout.contains("No such file"), "\(command): \(r.stdout)")
        }
        let text = try f.run(["status"], environment: ["NO_COLOR": "1"])
        #expect(text.status == 2, "\(text.stdout)\(text.stderr)")
        #expect(text.stdout.contains("undecodable-name"), "\(text.stdout)")
        // In text the byte is shown escaped, never written raw or as U+F7FF.
        #expect(text.stdout.contains("mobile~\\xff"), "\(text.stdout)")
        // The prediction says what it could not see.
        #expect(text.stdout.contains("was not read (its name is not valid UTF-8)"), "\(text.stdout)")
        #expect(!text.stdout.unicodeScalars.contains { (0xF700...0xF7FF).contains($0.value) })
        #expect(!text.stdout.contains("No such file"), "\(text.stdout)")
        #expect(try Self.trees(f) == before)
    }

    @Test("every changing command refuses with exit 2 naming the folder, and nothing changes")
    func changingCommandsRefuse() throws {
        let (f, raw) = try Self.badPeerFixture()
        let before = try Self.trees(f)
        for args in [
            ["delete", "container"], ["delete", "container", "--local-only"], ["delete", "cloud-store"],
            ["delete", "cloud-store", "--local-only"], ["delete", "local-store"], ["migrate", "cloud-to-local"],
            ["migrate", "local-to-cloud"], ["rebuild", "--from", "local", "--discard-cloud"],
            ["switch", f.options.oldUUID ?? ""], ["cloud", "disable"], ["corruption", "mark"],
        ] {
            for extra in [["--yes"], ["--dry-run"]] {
                let r = try f.run(args + extra + ["--json"])
                #expect(r.status == 2, "\(args + extra): \(r.stdout)\(r.stderr)")
                #expect(Self.error(r)["code"] as? String == "undecodable-name", "\(args + extra): \(r.stdout)")
                let message = Self.error(r)["message"] as? String ?? ""
                #expect(FileSystemPath.bytes(message).starts(with: raw), "\(args + extra): \(message.debugDescription)")
                #expect(message.contains("nothing was changed"), "\(args + extra): \(message)")
                #expect(try Self.trees(f) == before, "\(args + extra)")
            }
        }
        // In text: one error line on stderr, the byte escaped.
        let r = try f.run(["delete", "container", "--yes"], environment: ["NO_COLOR": "1"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("usm-repair: error: ") && r.stderr.contains("mobile~\\xff"), "\(r.stderr)")
        #expect(try Self.trees(f) == before)
    }

    @Test("a full archive keeps the name's bytes and verifies; a redacted one leaves what is below it out")
    func archive() throws {
        let (f, raw) = try Self.badPeerFixture()
        let before = try Self.trees(f)
        let full = f.tmp.path("full.tar.zst")
        let a = USM.run(["archive", "--container", f.paths.root.path, "-o", full.path, "--json"])
        #expect(a.status == 0, "\(a.stdout)\(a.stderr)")
        let names = a.json["undecodableNames"] as? [String] ?? []
        #expect(names.map(FileSystemPath.bytes) == [raw], "\(a.stdout)")
        #expect(a.stderr.contains("not valid UTF-8") && a.stderr.contains("mobile~\\xff"), "\(a.stderr)")
        let v = USM.run(["bundle", "verify", full.path])
        #expect(v.status == 0, "\(v.stdout)\(v.stderr)")
        // The peer folder's store is in the bundle under its exact bytes (as files: it was not read as a store).
        let copy = Array("/\(f.options.activeUUID)/\(f.options.account)/store/\(f.options.activeUUID).sqlite".utf8)
        let entries = try ArchiveContents.names(full).map(FileSystemPath.bytes)
        #expect(
            entries.contains { $0.count > copy.count && $0.suffix(copy.count).elementsEqual(copy) && $0.contains(0xFF) }
        )

        let redacted = f.tmp.path("redacted.tar.zst")
        let r = USM.run(["archive", "--container", f.paths.root.path, "--redact", "-o", redacted.path, "--json"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let skipped = (r.json["skipped"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        #expect(skipped.contains { FileSystemPath.bytes($0).contains(0xFF) }, "\(r.stdout)")
        #expect(USM.run(["bundle", "verify", redacted.path]).status == 0)
        // Nothing below the name travels in a redacted bundle: it could hold a store's rows as they are.
        #expect(!(try ArchiveContents.names(redacted)).contains { FileSystemPath.isUndecodable($0) })
        #expect(try Self.trees(f) == before)
    }

    @Test("a marker or log folder named with bytes that are not UTF-8 is reported, and changing commands refuse")
    func cloudLogsName() throws {
        let f = try Fixture()
        let logs = Array(f.paths.logs.path.utf8) + [UInt8(ascii: "/")]
        // A folder among the stores' log folders, and a peer folder inside the active store's logs.
        try Self.mkdir(logs + [0x55, 0xFE])
        try Self.mkdir(logs + Array("\(f.options.activeUUID)/".utf8) + Array("mobile.".utf8) + [0xC3, 0x28])
        let before = try Self.trees(f)
        let s = try f.run(["status", "--json"])
        #expect(s.status == 2, "\(s.stdout)")
        let subjects = Self.problems(s).filter { $0["code"] as? String == "undecodable-name" }
            .compactMap { $0["subject"] as? String }.map(FileSystemPath.bytes)
        #expect(subjects.count == 2, "\(s.stdout)")
        let r = try f.run(["delete", "container", "--yes", "--json"])
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(Self.error(r)["code"] as? String == "undecodable-name", "\(r.stdout)")
        #expect(try Self.trees(f) == before)
    }

    @Test("a name holding U+F700...U+F7FF (usm-repair's escape for such bytes) is reported too, never confused")
    func escapeBlockName() throws {
        let f = try Fixture()
        let support = f.paths.appDir.appendingPathComponent("CloudStore/CoreDataUbiquitySupport").path
        // Valid UTF-8, but its string is the escape of other bytes: a call taking it as UTF-8
        // would address `mobile~\xff`, had the copy held that one too.
        try Self.rename(support + "/" + f.options.peer, toBytes: Array((support + "/mobile~\u{F7FF}").utf8))
        let before = try Self.trees(f)
        let s = try f.run(["status", "--json"])
        #expect(s.status == 2, "\(s.stdout)")
        let found = Self.problems(s).filter { $0["code"] as? String == "undecodable-name" }
        #expect(found.count == 1, "\(s.stdout)")
        let message = found.first?["message"] as? String
        #expect(message?.contains("U+F700") == true, "\(s.stdout)")
        let r = try f.run(["rebuild", "--from", "local", "--discard-cloud", "--yes", "--json"])
        #expect(r.status == 2, "\(r.stdout)")
        #expect(Self.error(r)["code"] as? String == "undecodable-name", "\(r.stdout)")
        #expect(try Self.trees(f) == before)
    }
}
