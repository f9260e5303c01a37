import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `--mac-app --home H`: the folders on the way from `H` are checked as a download's are (a link
/// leading out of `H` is refused, exit 3, named), and a path read from the preferences (a cached
/// StoreUUID key's container path) is used only when it is a plain absolute path (else bad input,
/// exit 2). Before, a link at `H/Library` let `delete container` empty another folder, and a key
/// `…/Mobile Documents/../CloudLogs/StoreUUID+` made discovery take `Library` as the container.
@Suite("--mac-app: links on the way from the home folder, paths in the preferences", .timed)
struct MacAppPathTests {
    typealias Lib = MacAppTests.Library

    /// The folders of the home folder that may be links (relative to it).
    static let links = ["Library", "Library/Containers", "Library/Mobile Documents"]

    /// Changing commands that, through a link, would change the folder it leads to.
    static let commands: [[String]] = [
        ["delete", "container"], ["rebuild", "--from", "local"],
        ["switch", FixtureContainer.Options().activeUUID],
    ]

    /// A sandboxed app's Library with `relative` (below the home folder) moved to a folder
    /// outside it and a symlink left in its place; returns the library and that folder.
    static func linked(_ tmp: TempDir, _ relative: String) throws -> (Lib, URL) {
        let lib = try MacAppTests.library(in: tmp, sandboxed: true)
        let place = lib.home.appendingPathComponent(relative)
        let outside = tmp.path("elsewhere")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let target = outside.appendingPathComponent(place.lastPathComponent)
        try FileManager.default.moveItem(at: place, to: target)
        try FileManager.default.createSymbolicLink(at: place, withDestinationURL: target)
        return (lib, outside)
    }

    static func flags(_ lib: Lib, _ tmp: TempDir) -> [String] {
        ["--mac-app", MacAppTests.bundleID, "--home", lib.home.path, "--snapshot-dir", tmp.path("snapshots").path]
    }

    @Test("a link leading out of the home folder on the way: status reports symlink-escapes naming it (exit 3)")
    func statusReportsLink() throws {
        for relative in Self.links {
            let tmp = try TempDir()
            let (lib, _) = try Self.linked(tmp, relative)
            let link = lib.home.appendingPathComponent(relative).path
            let r = USM.run(["status", "--mac-app", MacAppTests.bundleID, "--home", lib.home.path, "--json"])
            #expect(r.status == 3, "\(relative): \(r.stderr)")
            let problems = r.json["problems"] as? [[String: Any]] ?? []
            #expect(
                problems.contains { $0["code"] as? String == "symlink-escapes" && $0["subject"] as? String == link },
                "\(relative): \(problems)")
        }
    }

    @Test(
        "a link leading out of the home folder on the way: delete container, rebuild --from local, switch refuse (3), naming it; nothing changed behind it"
    )
    func changesRefused() throws {
        for relative in Self.links {
            let tmp = try TempDir()
            let (lib, outside) = try Self.linked(tmp, relative)
            let link = lib.home.appendingPathComponent(relative).path
            let before = try TreeSnapshot(outside)
            for command in Self.commands {
                for mode in [["--yes"], ["--dry-run"]] {
                    let r = USM.run(command + Self.flags(lib, tmp) + mode + ["--json"])
                    #expect(r.status == 3, "\(relative) \(command) \(mode): \(r.stderr)\(r.stdout)")
                    let error = r.json["error"] as? [String: Any]
                    #expect(error?["code"] as? String == "symlink-escapes", "\(relative) \(command): \(r.stdout)")
                    #expect(
                        (error?["message"] as? String ?? "").contains(link), "\(relative) \(command): \(r.stdout)")
                }
            }
            #expect(try TreeSnapshot(outside) == before, "\(relative): nothing changed in the folder it leads to")
        }
    }

    @Test("a link on the way that stays inside the home folder is a folder of the home folder: not refused")
    func linkInsideHome() throws {
        let tmp = try TempDir()
        let lib = try MacAppTests.library(in: tmp, sandboxed: true)
        let place = lib.home.appendingPathComponent("Library/Mobile Documents")
        let target = lib.home.appendingPathComponent("iCloud")
        try FileManager.default.moveItem(at: place, to: target)
        try FileManager.default.createSymbolicLink(at: place, withDestinationURL: target)
        let r = USM.run(["status", "--mac-app", MacAppTests.bundleID, "--home", lib.home.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)\(r.stdout)")
    }

    @Test(
        "a link out of the home folder on the way to a folder --cloud-dir names instead: that folder is the user's choice"
    )
    func flagWins() throws {
        let tmp = try TempDir()
        let (lib, outside) = try Self.linked(tmp, "Library/Mobile Documents")
        let given = outside.appendingPathComponent("Mobile Documents/\(MacAppTests.container)")
        let r = USM.run([
            "status", "--mac-app", MacAppTests.bundleID, "--home", lib.home.path, "--cloud-dir", given.path, "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)\(r.stdout)")
        let problems = r.json["problems"] as? [[String: Any]] ?? []
        #expect(!problems.contains { $0["code"] as? String == "symlink-escapes" }, "\(problems)")
    }

    /// Rewrites the preferences' cached StoreUUID key to `key` (the container path before `/CloudLogs/`).
    static func setCacheKey(_ prefs: URL, containerPath: String) throws {
        let data = try Data(contentsOf: prefs)
        var dict = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        for key in dict.keys where key.contains("/CloudLogs/StoreUUID") { dict[key] = nil }
        dict[containerPath + "/CloudLogs/StoreUUID+"] = FixtureContainer.Options().activeUUID
        try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0).write(to: prefs)
    }

    /// Container paths a cache key may not name (each not a plain absolute path).
    static let badPaths = [
        "/Users/jo/Library/Mobile Documents/..", "/Users/jo/Library/Mobile Documents/.",
        "/Users/jo/Library/Mobile Documents//\(MacAppTests.container)", "Mobile Documents/\(MacAppTests.container)",
        "/Users/jo/Library/Mobile Documents/\(MacAppTests.container)\u{0}x", "",
    ]

    @Test(
        "a cached StoreUUID key whose container path is not a plain absolute path: preferences-malformed (2), never a path"
    )
    func discoveryRefusesBadKey() throws {
        #expect(Preferences.isPlainAbsolutePath("/Users/jo/Library/Mobile Documents/T~com~x"))
        for bad in Self.badPaths { #expect(!Preferences.isPlainAbsolutePath(bad), "\(bad)") }
        for bad in Self.badPaths {
            let tmp = try TempDir()
            let lib = try MacAppTests.library(in: tmp, sandboxed: true)
            try Self.setCacheKey(lib.prefs, containerPath: bad)
            let r = USM.run(["status", "--mac-app", MacAppTests.bundleID, "--home", lib.home.path, "--json"])
            #expect(r.status == 2, "\(bad): \(r.stderr)")
            let problems = r.json["problems"] as? [[String: Any]] ?? []
            #expect(
                problems.contains {
                    $0["code"] as? String == "preferences-malformed"
                        && ($0["message"] as? String ?? "").contains("cached StoreUUID key")
                }, "\(bad): \(problems)")
            let cloud = MacAppTests.found(MacAppTests.macApp(r.json), "cloudFolder").path
            #expect(cloud != lib.home.appendingPathComponent("Library").path, "\(bad): Library is no container")
            #expect(
                cloud == nil || cloud == lib.cloudDir.path, "\(bad): the key names nothing; \(cloud ?? "")")
        }
    }

    @Test("a cache key with .. : rebuild --from local and delete container refuse with 2; nothing changed")
    func changesRefusedOnBadKey() throws {
        let tmp = try TempDir()
        let lib = try MacAppTests.library(in: tmp, sandboxed: true)
        try Self.setCacheKey(lib.prefs, containerPath: "/Users/jo/Library/Mobile Documents/..")
        let before = try TreeSnapshot(lib.home)
        for command in [["rebuild", "--from", "local"], ["delete", "container"]] {
            for mode in [["--yes"], ["--dry-run"]] {
                let r = USM.run(command + Self.flags(lib, tmp) + mode + ["--json"])
                #expect(r.status == 2, "\(command) \(mode): \(r.stderr)\(r.stdout)")
                let message = (r.json["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.contains("cached StoreUUID key"), "\(command): \(message)")
            }
        }
        #expect(try TreeSnapshot(lib.home) == before, "nothing changed")
    }
}
