import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `--mac-app BUNDLE_ID --home DIR`: a Mac app's folders found in place in a user's Library (a
/// Library tree built under a temporary folder, sandboxed and not), what `status` says about how
/// each was found, and the refusals of working in place (the app running).
@Suite("Mac app in place", .timed)
struct MacAppTests {
    static let bundleID = "com.example.notes"
    static let container = "ABCDE12345~com~example~notes"

    /// A user's Library holding the app's data as a Mac keeps it.
    struct Library {
        let home: URL
        let appDir: URL
        let prefs: URL
        let cloudDir: URL
    }

    /// Builds `home/Library` from a fixture container: the app folder and preferences in the
    /// sandbox container (or the user's own folders), the ubiquity container in `Mobile Documents`
    /// under `containerName`, and the cached StoreUUID key as a Mac writes it (or none).
    static func library(
        in tmp: TempDir, sandboxed: Bool, containerName: String = container, cacheKey: Bool = true,
        options: FixtureContainer.Options = FixtureContainer.Options(), bundleID: String = bundleID
    ) throws -> Library {
        let fm = FileManager.default
        let source = try FixtureContainer.write(to: tmp.path("download/Notes.xcappdata"), options)
        let home = tmp.path("home")
        let library = home.appendingPathComponent("Library")
        let base = sandboxed ? library.appendingPathComponent("Containers/\(bundleID)/Data/Library") : library
        let appDir = base.appendingPathComponent("Application Support/\(bundleID)", isDirectory: true)
        let prefs = base.appendingPathComponent("Preferences/\(bundleID).plist")
        let cloudDir = library.appendingPathComponent("Mobile Documents/\(containerName)", isDirectory: true)
        for dir in [
            appDir.deletingLastPathComponent(), prefs.deletingLastPathComponent(), cloudDir.deletingLastPathComponent(),
        ] {
            try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        }
        try fm.moveItem(at: source.appDir, to: appDir)
        try fm.moveItem(at: source.cloudDir, to: cloudDir)
        // The preferences as the Mac app writes them: the cache key names this Mac's container path.
        let data = try Data(contentsOf: source.prefs)
        var dict = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        for key in dict.keys where key.contains("/CloudLogs/StoreUUID") { dict[key] = nil }
        if cacheKey {
            dict["/Users/jo/Library/Mobile Documents/\(containerName)/CloudLogs/StoreUUID+"] = options.activeUUID
        }
        try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0).write(to: prefs)
        return Library(home: home, appDir: appDir, prefs: prefs, cloudDir: cloudDir)
    }

    static func macApp(_ json: [String: Any]) -> [String: Any] {
        ((json["layout"] as? [String: Any])?["macApp"] as? [String: Any]) ?? [:]
    }

    static func found(_ macApp: [String: Any], _ key: String) -> (path: String?, how: String) {
        let item = macApp[key] as? [String: Any] ?? [:]
        return (item["path"] as? String, item["how"] as? String ?? "")
    }

    @Test("a sandboxed app: app folder and preferences in its container, the ubiquity container named by the cache key")
    func sandboxed() throws {
        let tmp = try TempDir()
        let lib = try Self.library(in: tmp, sandboxed: true)
        let r = USM.run(["status", "--mac-app", Self.bundleID, "--home", lib.home.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let mac = Self.macApp(r.json)
        #expect(mac["bundleID"] as? String == Self.bundleID)
        #expect(mac["sandboxed"] as? Bool == true)
        #expect(Self.found(mac, "appFolder").path == lib.appDir.path)
        #expect(Self.found(mac, "appFolder").how.contains("sandbox"))
        #expect(Self.found(mac, "preferences").path == lib.prefs.path)
        #expect(Self.found(mac, "cloudFolder").path == lib.cloudDir.path)
        #expect(Self.found(mac, "cloudFolder").how.contains("cached StoreUUID key"), "\(mac)")
        let layout = r.json["layout"] as? [String: Any] ?? [:]
        #expect(layout["cloudSource"] as? String == "mac-app")
        #expect(layout["appDir"] as? String == lib.appDir.path)
        let stores = r.json["stores"] as? [[String: Any]] ?? []
        #expect(
            stores.contains { $0["role"] as? String == "local" && $0["health"] as? String == "ok" },
            "the local store is read")
        #expect((r.json["nextLaunch"] as? [String: Any])?["state"] as? String == "E4")

        let text = USM.run(["status", "--mac-app", Self.bundleID, "--home", lib.home.path])
        #expect(
            text.stdout.contains("Mac app:      \(Self.bundleID) in \(lib.home.path) (sandboxed)"), "\(text.stdout)")
        #expect(
            text.stdout.contains("found: named by the cached StoreUUID key in the preferences (\(Self.container))"),
            "\(text.stdout)")
        #expect(text.stdout.contains("Preferences:  \(lib.prefs.path)"))
    }

    @Test(
        "an app that is not sandboxed: ~/Library/Application Support/<id>, ~/Library/Preferences; the container found by the bundle ID"
    )
    func notSandboxed() throws {
        let tmp = try TempDir()
        let lib = try Self.library(in: tmp, sandboxed: false, cacheKey: false)
        // Another app's container in Mobile Documents is not taken.
        try FileManager.default.createDirectory(
            at: lib.home.appendingPathComponent("Library/Mobile Documents/ZZZZZ99999~com~other~app/CloudLogs"),
            withIntermediateDirectories: true)
        let r = USM.run(["status", "--mac-app", Self.bundleID, "--home", lib.home.path, "--json"])
        let mac = Self.macApp(r.json)
        #expect(mac["sandboxed"] as? Bool == false)
        #expect(Self.found(mac, "appFolder").path == lib.appDir.path)
        #expect(Self.found(mac, "preferences").path == lib.prefs.path)
        #expect(Self.found(mac, "preferences").how.contains("user's preferences"))
        #expect(Self.found(mac, "cloudFolder").path == lib.cloudDir.path)
        #expect(Self.found(mac, "cloudFolder").how.contains("bundle ID"), "\(mac)")
    }

    @Test("a container whose name is not the bundle ID's is found by the cache key; without the key it is not guessed")
    func containerByCacheKey() throws {
        let tmp = try TempDir()
        let shared = "ABCDE12345~com~example~shared"
        let lib = try Self.library(in: tmp, sandboxed: true, containerName: shared)
        let r = USM.run(["status", "--mac-app", Self.bundleID, "--home", lib.home.path, "--json"])
        #expect(Self.found(Self.macApp(r.json), "cloudFolder").path == lib.cloudDir.path)

        let tmp2 = try TempDir()
        let bare = try Self.library(in: tmp2, sandboxed: true, containerName: shared, cacheKey: false)
        let r2 = USM.run(["status", "--mac-app", Self.bundleID, "--home", bare.home.path, "--json"])
        let cloud = Self.found(Self.macApp(r2.json), "cloudFolder")
        #expect(cloud.path == nil, "no cache key, no folder ending in ~com~example~notes: not guessed")
        #expect(cloud.how.contains("~com~example~notes"))
        #expect((r2.json["layout"] as? [String: Any])?["cloudDir"] is NSNull)
    }

    @Test("a sandbox and an old non-sandboxed folder: the sandbox's is used, the other is said")
    func both() throws {
        let tmp = try TempDir()
        let lib = try Self.library(in: tmp, sandboxed: true)
        let old = lib.home.appendingPathComponent("Library/Application Support/\(Self.bundleID)")
        try FileManager.default.createDirectory(at: old, withIntermediateDirectories: true)
        let r = USM.run(["status", "--mac-app", Self.bundleID, "--home", lib.home.path, "--json"])
        let mac = Self.macApp(r.json)
        #expect(Self.found(mac, "appFolder").path == lib.appDir.path)
        #expect((mac["notes"] as? [String] ?? []).contains { $0.contains(old.path) }, "\(mac)")
    }

    @Test(
        "flags: --home needs --mac-app; a bundle ID that is not one, and --mac-app with --container, are usage errors; a home without data is said"
    )
    func flags() throws {
        let tmp = try TempDir()
        #expect(USM.run(["status", "--home", tmp.url.path]).status == 64)
        #expect(USM.run(["status", "--mac-app", "../etc", "--home", tmp.url.path]).status == 64)
        #expect(USM.run(["status", "--mac-app", Self.bundleID, "--container", tmp.url.path]).status == 64)
        #expect(USM.run(["status", "--mac-app", Self.bundleID, "--home", tmp.path("nope").path]).status == 66)
        let empty = USM.run(["status", "--mac-app", Self.bundleID, "--home", tmp.url.path, "--json"])
        let problems = empty.json["problems"] as? [[String: Any]] ?? []
        #expect(problems.contains { $0["code"] as? String == "layout-not-found" }, "\(empty.stdout)")
    }

    @Test(
        "a change in place: done in the Mac's folders; the next step says nothing goes back, iCloud uploads the container; the snapshot is named after the app"
    )
    func changeInPlace() throws {
        let tmp = try TempDir()
        var options = FixtureContainer.Options()
        options.corruptedUUID = options.activeUUID
        let lib = try Self.library(in: tmp, sandboxed: true, options: options)
        let snapshots = tmp.path("snapshots")
        let r = USM.run([
            "corruption", "clear", "--mac-app", Self.bundleID, "--home", lib.home.path, "--snapshot-dir",
            snapshots.path, "--yes", "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            FileManager.default.fileExists(atPath: lib.cloudDir.appendingPathComponent("CloudLogs/CorruptedUUID+").path)
                == false)
        let next = r.json["nextStep"] as? String ?? ""
        #expect(next.hasPrefix("Nothing to send back"), "\(next)")
        #expect(next.contains("iCloud uploads what changed in \(lib.cloudDir.path)"), "\(next)")
        let snapshot = URL(fileURLWithPath: r.json["snapshot"] as? String ?? "").lastPathComponent
        #expect(snapshot.hasPrefix("corruption-clear-com.example.notes-"), "\(snapshot)")
    }

    @Test(
        "the app running (a process whose executable is in its bundle) refuses a change with exit 5 and 'quit the app'; a dry run says it"
    )
    func appRunning() throws {
        let tmp = try TempDir()
        var options = FixtureContainer.Options()
        options.corruptedUUID = options.activeUUID
        // A bundle ID of its own: tests run in parallel, and this app must stop no other test.
        let bundleID = "com.example.running-\(UUID().uuidString.prefix(8))"
        let lib = try Self.library(in: tmp, sandboxed: true, options: options, bundleID: bundleID)
        let app = try Self.fakeApp(in: tmp, bundleID: bundleID)
        let process = try Launcher.start(app, ["60"])
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        #expect(RunningApp.find(bundleID: bundleID).map(\.pid).contains(process.processIdentifier))
        #expect(RunningApp.find(bundleID: "com.example.other").isEmpty)
        let before = try TreeSnapshot(lib.home)
        let flags = ["--mac-app", bundleID, "--home", lib.home.path, "--snapshot-dir", tmp.path("snapshots").path]
        let refused = USM.run(["corruption", "clear"] + flags + ["--yes", "--json"])
        #expect(refused.status == 5, "\(refused.stderr)")
        #expect(refused.stderr.contains("quit the app"), "\(refused.stderr)")
        #expect(refused.stderr.contains("process \(process.processIdentifier)"))
        #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "store-in-use")
        #expect(try TreeSnapshot(lib.home) == before, "nothing changed")
        let dry = USM.run(["corruption", "clear"] + flags + ["--dry-run", "--json"])
        #expect(dry.status == 0)
        #expect(
            (dry.json["notes"] as? [String] ?? []).contains { $0.contains("is running now") && $0.contains("quit it") },
            "\(dry.stdout)")
    }

    /// `Notes.app/Contents/MacOS/Notes`: a copy of `sleep` inside an app bundle whose Info.plist names `bundleID`.
    static func fakeApp(in tmp: TempDir, bundleID: String) throws -> URL {
        let contents = tmp.path("Applications/Notes.app/Contents")
        try FileManager.default.createDirectory(
            at: contents.appendingPathComponent("MacOS"), withIntermediateDirectories: true)
        let plist: [String: Any] = ["CFBundleIdentifier": bundleID, "CFBundleExecutable": "Notes"]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(
            to: contents.appendingPathComponent("Info.plist"))
        let executable = contents.appendingPathComponent("MacOS/Notes")
        let sleep =
            ["/bin/sleep", "/usr/bin/sleep"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/bin/sleep"
        try FileManager.default.copyItem(atPath: sleep, toPath: executable.path)
        return executable
    }

    @Test("cfprefsd's live domains: the user's and a sandbox's Preferences folder; nothing else")
    func liveDomains() {
        let home = "/Users/jo"
        #expect(PreferencesDaemon.isLive("/Users/jo/Library/Preferences/com.example.notes.plist", home: home))
        #expect(
            PreferencesDaemon.isLive(
                "/Users/jo/Library/Containers/com.example.notes/Data/Library/Preferences/com.example.notes.plist",
                home: home))
        #expect(
            !PreferencesDaemon.isLive(
                "/Users/jo/Downloads/Notes.xcappdata/AppData/Library/Preferences/com.example.notes.plist", home: home))
        #expect(!PreferencesDaemon.isLive("/Users/jo/Library/Preferences/sub/com.example.notes.plist", home: home))
        #expect(!PreferencesDaemon.isLive("/Users/jo/Library/Preferences/com.example.notes.txt", home: home))
        #expect(
            PreferencesDaemon.domain(of: "/Users/jo/Library/Preferences/com.example.notes.plist")
                == "/Users/jo/Library/Preferences/com.example.notes")
        #expect(
            PreferencesDaemon.adopt("/Users/jo/Library/Preferences/com.example.notes.plist") == nil,
            "nothing runs on Linux")
    }
}
