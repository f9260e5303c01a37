import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// Bad input gets a clear message, a documented exit code, and nothing changes.
@Suite("hostile input", .timed)
struct HostileInputTests {
    /// Runs status and check on `store` (inside `tmp`) and proves neither wrote anything.
    func run(_ args: [String], in tmp: TempDir) throws -> CLI.Result {
        let before = try TreeSnapshot(tmp.url)
        let result = USM.run(args)
        #expect(try TreeSnapshot(tmp.url) == before, "nothing may change: \(args)")
        return result
    }

    @Test("an empty file")
    func empty() throws {
        let tmp = try TempDir()
        let store = tmp.path("Empty.sqlite")
        try Data().write(to: store)
        for command in ["status", "check"] {
            let r = try run([command, "--store", store.path, "--json"], in: tmp)
            #expect(r.status == 2)
            let s = (r.json["stores"] as? [[String: Any]])?.first
            #expect(s?["health"] as? String == "not-core-data")
            #expect(
                (s?["problems"] as? [[String: Any]])?.first?["message"] as? String
                    == "\(store.path) is not an SQLite database (the file is empty)")
        }
        let text = try run(["status", "--store", store.path], in: tmp)
        #expect(text.stdout.contains("the file is empty"))
    }

    @Test("random bytes")
    func random() throws {
        let tmp = try TempDir()
        let store = tmp.path("Random.sqlite")
        var rng = SeededRandom(seed: 3)
        try Data((0..<65536).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(to: store)
        let r = try run(["check", "--store", store.path, "--json"], in: tmp)
        #expect(r.status == 2)
        let s = (r.json["stores"] as? [[String: Any]])?.first
        #expect(s?["health"] as? String == "not-core-data")
        #expect(((s?["problems"] as? [[String: Any]])?.first?["code"] as? String) == "not-sqlite")
    }

    @Test("a truncated store")
    func truncated() throws {
        let tmp = try TempDir()
        let store = tmp.path("Cut.sqlite")
        var options = FixtureStore.Options()
        options.books = 500
        try FixtureStore.write(to: store, options)
        let size = try FileManager.default.attributesOfItem(atPath: store.path)[.size] as! Int
        let handle = try FileHandle(forWritingTo: store)
        try handle.truncate(atOffset: UInt64(size / 2))
        try handle.close()
        let status = try run(["status", "--store", store.path, "--json"], in: tmp)
        #expect(status.status == 2)
        let s = (status.json["stores"] as? [[String: Any]])?.first
        #expect(s?["health"] as? String == "damaged")
        let codes = (s?["problems"] as? [[String: Any]])?.compactMap { $0["code"] as? String } ?? []
        #expect(codes.contains("truncated"))
        let check = try run(["check", "--store", store.path], in: tmp)
        #expect(check.status == 1 || check.status == 2)
        #expect(check.stdout.contains("was cut short"))

        // Cut inside the header: still a clear answer.
        let tiny = tmp.path("Tiny.sqlite")
        try Data(try Data(contentsOf: store).prefix(40)).write(to: tiny)
        let t = try run(["status", "--store", tiny.path, "--json"], in: tmp)
        #expect(t.status == 2)
        #expect((t.json["stores"] as? [[String: Any]])?.first?["health"] as? String == "damaged")
    }

    @Test("SQLite that is not Core Data")
    func plainSQLite() throws {
        let tmp = try TempDir()
        let store = tmp.path("Plain.sqlite")
        try FixtureStore.writePlainSQLite(to: store)
        let r = try run(["status", "--store", store.path], in: tmp)
        #expect(r.status == 2)
        #expect(
            r.stdout.contains("is an SQLite database but not a Core Data store (no Z_PRIMARYKEY, Z_METADATA table)"))
    }

    @Test("a NULL Z_PLIST is reported, not fatal")
    func nullPlist() throws {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store)
        try FixtureStore.mutate(store, "UPDATE Z_METADATA SET Z_PLIST = NULL")
        let r = try run(["status", "--store", store.path, "--json"], in: tmp)
        #expect(r.status == 0)
        let s = (r.json["stores"] as? [[String: Any]])?.first
        #expect(s?["health"] as? String == "ok")
        #expect((s?["metadata"] as? [String: Any])?["plist"] as? String == "null")
    }

    @Test("missing folders and files")
    func missing() throws {
        let tmp = try TempDir()
        let r = try run(["status", "--app-dir", tmp.path("nope").path, "--json"], in: tmp)
        #expect(r.status == 66)
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "not-found")
        #expect(r.stderr.contains("folder given with --app-dir not found"))
        let s = try run(["check", "--store", tmp.path("none.sqlite").path], in: tmp)
        #expect(s.status == 66)
        #expect(s.stderr.contains("store not found"))
        let c = try run(["status", "--container", tmp.path("x.xcappdata").path], in: tmp)
        #expect(c.status == 66)
    }

    @Test("a folder where a store should be")
    func folderAsStore() throws {
        let tmp = try TempDir()
        try FileManager.default.createDirectory(at: tmp.path("Dir.sqlite"), withIntermediateDirectories: true)
        let r = try run(["status", "--store", tmp.path("Dir.sqlite").path], in: tmp)
        #expect(r.status == 2)
        #expect(r.stdout.contains("is not a regular file"))
    }

    @Test("a marker file holding garbage")
    func garbageMarker() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        try Data("not a uuid \u{0}\u{1}\u{2}".utf8).write(to: paths.logs.appendingPathComponent("StoreUUID+"))
        for command in ["status", "check"] {
            let r = try run([command, "--container", paths.root.path, "--json"], in: tmp)
            #expect(r.status == 2)
            let active = r.json["activeStore"] as? [String: Any]
            #expect(active?["valid"] as? Bool == false, "the app would read the garbage as a store name")
            #expect(active?["markerUUID"] as? String == "not a uuid \u{0}\u{1}\u{2}")
            let problems = r.json["problems"] as? [[String: Any]] ?? []
            #expect(problems.contains { $0["code"] as? String == "marker-malformed" })
            let marker = ((r.json["layout"] as? [String: Any])?["markers"] as? [[String: Any]])?.first
            #expect(marker?["valid"] as? Bool == false)
            #expect(marker?["value"] is NSNull)
        }
        // A huge marker is not read whole, and is just as malformed.
        try Data(count: 10 << 20).write(to: paths.logs.appendingPathComponent("CorruptedUUID+"))
        let r = try run(["status", "--container", paths.root.path], in: tmp)
        #expect(r.status == 2)
        #expect(r.stdout.contains("CorruptedUUID+ does not hold 36 upper-case characters of a UUID"))
    }

    @Test("malformed preferences")
    func garbagePrefs() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        try Data("<plist><dict><key>USMCloudEnabledKey".utf8).write(to: paths.prefs)
        let r = try run(["status", "--container", paths.root.path, "--prefs", paths.prefs.path, "--json"], in: tmp)
        #expect(r.status == 2)
        #expect(r.json["cloudEnabled"] is NSNull)
        let problems = r.json["problems"] as? [[String: Any]] ?? []
        #expect(problems.first?["code"] as? String == "preferences-malformed")
        // A key of the wrong type is malformed too.
        let bad = try PropertyListSerialization.data(
            fromPropertyList: ["USMCloudEnabledKey": "yes please"], format: .xml, options: 0)
        try bad.write(to: paths.prefs)
        let r2 = try run(["status", "--container", paths.root.path, "--prefs", paths.prefs.path], in: tmp)
        #expect(r2.status == 2)
    }

    @Test("a symlink that leaves the container is refused, not followed")
    func symlinkEscapes() throws {
        let tmp = try TempDir()
        let outside = tmp.path("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FixtureStore.write(to: outside.appendingPathComponent("Secret.sqlite"))
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        try FileManager.default.removeItem(at: paths.localStore)
        try FileManager.default.createSymbolicLink(
            at: paths.localStore, withDestinationURL: outside.appendingPathComponent("Secret.sqlite"))
        let r = try run(["status", "--container", paths.root.path, "--json"], in: tmp)
        #expect(r.status == 3)
        let local = (r.json["stores"] as? [[String: Any]])?.first
        #expect(local?["health"] as? String == "unreadable")
        #expect(
            local?["entities"] as? [Any] == nil || (local?["entities"] as? [Any])?.isEmpty == true,
            "nothing read through the link")
        #expect(r.stdout.contains("symlink-escapes"))

        // A CloudLogs folder linked out of the container is refused as well.
        try FileManager.default.createSymbolicLink(
            at: paths.logs.appendingPathComponent("22222222-3333-4444-8555-666666666666"), withDestinationURL: outside)
        let r2 = try run(["check", "--container", paths.root.path], in: tmp)
        #expect(r2.status == 3)

        // A link that stays inside the container is followed.
        let inside = try TempDir()
        try FixtureStore.write(to: inside.path("real/UbiquityStore.sqlite"))
        try FileManager.default.createSymbolicLink(
            at: inside.path("UbiquityStore.sqlite"), withDestinationURL: inside.path("real/UbiquityStore.sqlite"))
        let ok = try Inspection(options: LayoutOptions(appDirectory: inside.url), depth: .status).run()
        #expect(ok.stores[0].health == .ok)
    }

    @Test("no room for the private copy: a clear error, exit 74, nothing changed")
    func noTemporarySpace() throws {
        let tmp = try TempDir()
        let store = tmp.path("in/S.sqlite")
        try FixtureStore.write(to: store)
        let before = try TreeSnapshot(tmp.url)
        let r = USM.run(["status", "--store", store.path, "--json"], environment: ["TMPDIR": "/nonexistent/usm-tmp"])
        #expect(r.status == 74, "\(r.stdout)")
        #expect(r.stdout.contains("set TMPDIR to a writable folder with space"))
        let a = USM.run(
            ["archive", "--store", store.path, "-o", tmp.path("b.tar.zst").path],
            environment: ["TMPDIR": "/nonexistent/usm-tmp"])
        #expect(a.status == 74)
        var after = try TreeSnapshot(tmp.url).entries
        #expect(after.removeValue(forKey: "b.tar.zst") == nil, "no bundle written")
        #expect(after == before.entries)
        #expect(FileStatus.lookup("/nonexistent") == nil, "a missing TMPDIR is never created")
    }

    @Test("usage errors exit 64")
    func usage() throws {
        #expect(USM.run(["status"]).status == 64)
        #expect(USM.run(["status", "--store", "/x", "--app-dir", "/y"]).status == 64)
        #expect(USM.run(["status", "--store-name", "a/b", "--app-dir", "/y"]).status == 64)
        #expect(USM.run(["status", "--bogus"]).status == 64)
        #expect(USM.run(["check", "--quiet", "--verbose", "--store", "/x"]).status == 64)
    }
}
