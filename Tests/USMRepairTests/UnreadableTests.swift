import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// A folder or file that cannot be read is an error (exit 74) or, in a bundle, a listed skip that
/// makes the exit status 74: never an absence. Run as `nobody` (root reads everything), so one
/// test holds every check that needs another user.
@Suite("unreadable folders and files", .timed, .enabled(if: CLI.canRunUnprivileged, "running as root without setpriv"))
struct UnreadableTests {
    /// A container `nobody` can read, with the chosen folder made unreadable.
    static func container(_ tmp: TempDir, locking relative: (FixtureContainer.Paths) -> URL) throws -> (
        FixtureContainer.Paths, URL
    ) {
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        _ = chmod(tmp.url.path, 0o755)
        let locked = relative(paths)
        #expect(chmod(locked.path, 0) == 0)
        return (paths, locked)
    }

    static let folders: [(String, @Sendable (FixtureContainer.Paths) -> URL)] = [
        ("CloudStore", { $0.appDir.appendingPathComponent("CloudStore") }),
        ("_EXTERNAL_DATA", { StoreFileSet(main: $0.localStore).externalDataDirectory }),
        ("CloudLogs/<UUID>", { $0.logs.appendingPathComponent(FixtureContainer.Options().activeUUID) }),
    ]

    @Test(
        "as another user: status and check exit 74 naming each unreadable folder or store, archive bundles the rest and lists each with its reason, nothing changed"
    )
    func asAnotherUser() throws {
        for (name, folder) in Self.folders { try Self.statusAndCheck(name, folder) }
        try Self.archive()
        try Self.unreadableStoreAndFolder()
    }

    /// status and check: exit 74 and an unreadable problem naming the folder; the active store is
    /// not called missing.
    static func statusAndCheck(_ name: String, _ folder: (FixtureContainer.Paths) -> URL) throws {
        let tmp = try TempDir()
        let (paths, locked) = try container(tmp, locking: folder)
        defer { _ = chmod(locked.path, 0o755) }
        #expect(
            FileManager.default.fileExists(atPath: StoreFileSet(main: paths.localStore).externalDataDirectory.path),
            "the fixture has external data")
        for command in ["status", "check"] {
            let r = try CLI.runUnprivileged([command, "--container", paths.root.path, "--json"])
            #expect(r.status == 74, "\(name) \(command): \(r.stdout)\(r.stderr)")
            let json = r.json
            let problems =
                (json["problems"] as? [[String: Any]] ?? [])
                + (json["stores"] as? [[String: Any]] ?? []).flatMap { $0["problems"] as? [[String: Any]] ?? [] }
            #expect(
                problems.contains {
                    $0["code"] as? String == "unreadable" && ($0["subject"] as? String)?.hasPrefix(locked.path) == true
                },
                "\(name) \(command): \(problems)")
            let stores = json["stores"] as? [[String: Any]] ?? []
            let active = stores.first { $0["uuid"] as? String == FixtureContainer.Options().activeUUID }
            #expect(active?["health"] as? String != "missing", "\(name): the active store is not called missing")
        }
    }

    /// archive: the bundle is written, every unreadable folder listed with its reason, exit 74.
    static func archive() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        _ = chmod(tmp.url.path, 0o755)
        let lockedFolders = folders.map { $0.1(paths) }
        for folder in lockedFolders { #expect(chmod(folder.path, 0) == 0) }
        defer { for folder in lockedFolders { _ = chmod(folder.path, 0o755) } }
        let out = tmp.path("out")
        let scratch = tmp.path("tmpdir")
        for dir in [out, scratch] {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            _ = chmod(dir.path, 0o777)
        }
        let archive = out.appendingPathComponent("b.tar.zst")
        let r = try CLI.runUnprivileged(
            ["archive", "--container", paths.root.path, "-o", archive.path, "--json"],
            environment: ["TMPDIR": scratch.path])
        #expect(r.status == 74, "\(r.stdout)\(r.stderr)")
        #expect(r.json["exitStatus"] as? String == "io-error")
        #expect((r.json["unreadable"] as? Int ?? 0) >= 3, "\(r.stdout)")
        #expect(r.stdout.contains("could not be read"))
        #expect(FileManager.default.fileExists(atPath: archive.path), "what could be read is bundled")
        let skipped = try #require(try BundleTests.manifest(archive)["skipped"] as? [[String: Any]])
        for folder in [
            "AppData/Library/Application Support/CloudStore",
            "iCloud/CloudLogs/\(FixtureContainer.Options().activeUUID)",
            "AppData/Library/Application Support/.UbiquityStore_SUPPORT/_EXTERNAL_DATA",
        ] {
            #expect(
                skipped.contains {
                    $0["path"] as? String == "container/\(folder)"
                        && ($0["reason"] as? String)?.contains("could not be read") == true
                },
                "\(folder) listed: \(skipped)")
        }
        let text = try CLI.runUnprivileged(
            ["archive", "--container", paths.root.path, "-o", out.appendingPathComponent("t.tar.zst").path],
            environment: ["TMPDIR": scratch.path])
        #expect(text.status == 74)
        #expect(text.stderr.contains("could not be read"), "\(text.stdout)\(text.stderr)")
    }

    /// A store file nobody may read: reported as unreadable, exit 74, the rest still reported. A
    /// folder nobody may enter: exit 74, "permission denied". Nothing changed.
    static func unreadableStoreAndFolder() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        // Let `nobody` reach the binary's folder tree and the container.
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: tmp.url.path)
        let before = try TreeSnapshot(tmp.url)

        // A store file nobody may read: reported as unreadable, exit 74, the rest still reported.
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: paths.localStore.path)
        let r = try CLI.runUnprivileged(["status", "--container", paths.root.path, "--json"])
        #expect(r.status == 74, "\(r.stdout)\(r.stderr)")
        let stores = r.json["stores"] as? [[String: Any]] ?? []
        #expect(stores.first?["health"] as? String == "unreadable")
        #expect(stores.dropFirst().allSatisfy { $0["health"] as? String == "ok" })
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: paths.localStore.path)

        // A folder nobody may enter.
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: paths.appDir.path)
        let d = try CLI.runUnprivileged(["check", "--app-dir", paths.appDir.path])
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: paths.appDir.path)
        #expect(d.status == 74)
        #expect(d.stderr.contains("permission denied"))
        #expect(try TreeSnapshot(tmp.url) == before)
    }
}
