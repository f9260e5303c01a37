import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// `archive`, `bundle verify` and `restore` on fixture containers.
@Suite("bundles", .timed)
struct BundleTests {
    /// Every entry of `restored` equals the same entry of `original` (bytes, mode, mtime, links).
    static func expectSubset(
        _ restored: TreeSnapshot, of original: TreeSnapshot, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(!restored.entries.isEmpty, sourceLocation: sourceLocation)
        for (path, entry) in restored.entries {
            #expect(
                original.entries[path] == entry, "\(path) differs after the round trip", sourceLocation: sourceLocation)
        }
    }

    @Test(
        "round trip in every format: bytes, modes, mtimes; the user's folder untouched",
        arguments: ArchiveFormat.allCases)
    func roundTrip(format: ArchiveFormat) throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"))
        // Modes and times a copy must keep.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: paths.prefs.path)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1_234_567_890.123_456)], ofItemAtPath: paths.localStore.path
        )
        let before = try TreeSnapshot(paths.root)
        let cloudBefore = try TreeSnapshot(paths.cloudDir)
        let out = tmp.path("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let archive = out.appendingPathComponent("bundle\(format.fileExtension)")

        let a = USM.run(["archive", "--container", paths.root.path, "--output", archive.path, "--json"])
        #expect(a.status == 0, "\(a.stderr)")
        #expect(a.json["format"] as? String == format.rawValue)
        #expect(a.stderr.contains("personal data"))
        #expect(try TreeSnapshot(paths.root) == before, "archive must not write into the container")
        #expect(try TreeSnapshot(paths.cloudDir) == cloudBefore, "nor into the ubiquity container found beside it")
        #expect(FileManager.default.fileExists(atPath: archive.path + ".sha256"))

        // The sidecar is sha256sum's format (`otherTools` runs sha256sum -c on it).
        let digest = try FileCopy.sha256(of: archive.path).sha256
        #expect(
            try String(contentsOf: URL(fileURLWithPath: archive.path + ".sha256"), encoding: .utf8)
                == "\(digest)  \(archive.lastPathComponent)\n")

        let v = USM.run(["bundle", "verify", archive.path, "--json"])
        #expect(v.status == 0, "\(v.stdout)")
        #expect(v.json["sidecar"] as? String == "ok")

        let r = USM.run(["restore", archive.path, "--to", tmp.path("restored").path])
        #expect(r.status == 0, "\(r.stderr)")
        let restored = try TreeSnapshot(tmp.path("restored/container"))
        Self.expectSubset(restored, of: before)
        let restoredCloud = try TreeSnapshot(tmp.path("restored/cloud"))
        Self.expectSubset(restoredCloud, of: cloudBefore)
        // Everything the layout holds came back: every store file set (Core Data's copies with their
        // container/ folders), logs, markers, preferences.
        let copy = paths.cloudStore(FixtureContainer.Options().activeUUID).path.dropFirst(paths.root.path.count + 1)
        for rel in [
            "AppData/Library/Application Support/UbiquityStore.sqlite-wal", copy + "-shm", copy + "-wal",
            "AppData/Library/Preferences/com.example.notes.plist",
        ] {
            #expect(restored.entries[String(rel)] != nil, "\(rel) restored")
        }
        #expect(restored.entries.keys.contains { $0.hasSuffix("/container/ubiquity.plist") })
        #expect(restoredCloud.entries["CloudLogs/StoreUUID+"] != nil)
        let tree = try TreeSnapshot(tmp.url)
        #expect(!tree.entries.keys.contains { $0.contains(".usm-restore-") }, "the private folder is cleaned up")
    }

    @Test("a row that exists only in the -wal survives the round trip")
    func walOnlyRow() throws {
        let tmp = try TempDir()
        var options = FixtureStore.Options()
        options.walOnlyBooks = 4
        let store = tmp.path("in/Library.sqlite")
        try FixtureStore.write(to: store, options)
        let archive = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--store", store.path, "-o", archive.path]).status == 0)
        #expect(USM.run(["restore", archive.path, "--to", tmp.path("back").path]).status == 0)
        let restored = tmp.path("back/store/Library.sqlite")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: restored.path + "-wal"))
                == Data(contentsOf: URL(fileURLWithPath: store.path + "-wal")))
        let report = try Inspection(options: LayoutOptions(store: restored), depth: .check).run()
        #expect(report.stores[0].entities.first { $0.name == "Book" }?.rows == options.books + 4)
        #expect(report.exitCode == .ok)
    }

    @Test("--format wins over the extension; verify reads what it says")
    func explicitFormat() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let archive = tmp.path("bundle.bin")
        #expect(
            USM.run(["archive", "--container", paths.root.path, "-o", archive.path, "--format", "tar.xz"]).status == 0)
        let magic = try FileHandle(forReadingFrom: archive).read(upToCount: 6)
        #expect(magic == Data([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]), "xz magic")
        #expect(USM.run(["bundle", "verify", archive.path]).status == 0)
        #expect(USM.run(["archive", "--container", paths.root.path, "--format", "rar"]).status == 64)
    }

    @Test("the manifest comes first and describes every file, the layout and the rows")
    func manifest() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let archive = tmp.path("m.tar.gz")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
        #expect(try ArchiveContents.names(archive).first == "manifest.json")
        let manifest = try Self.manifest(archive)
        #expect(manifest["format"] as? String == "usm-repair-bundle")
        #expect((manifest["tool"] as? [String: String])?["version"] == USMRepair.version)
        #expect((manifest["commandLine"] as? [String])?.contains("archive") == true)
        #expect(manifest["createdAt"] is String && manifest["host"] is [String: String])
        let status = try #require(manifest["status"] as? [String: Any])
        #expect((status["activeStore"] as? [String: Any])?["uuid"] as? String == FixtureContainer.Options().activeUUID)
        let files = try #require(manifest["files"] as? [[String: Any]])
        let wal = try #require(files.first { ($0["path"] as? String)?.hasSuffix("UbiquityStore.sqlite-wal") == true })
        for key in ["size", "mode", "mtime", "sha256", "source"] { #expect(wal[key] != nil, "file key \(key)") }
        let stores = try #require(manifest["stores"] as? [[String: Any]])
        #expect(stores.count == 3)
        #expect(stores.allSatisfy { $0["captured"] as? String == "consistent-copy" })
        let rows = try #require(stores.first { $0["role"] as? String == "local" }?["rows"] as? [String: Int])
        #expect(rows["Book"] == FixtureStore.Options().books)
    }

    @Test(
        "GNU tar, bsdtar and unzip read the bundles, GNU tar without a warning per entry (a name that is not UTF-8 gets hdrcharset alone); sha256sum -c checks the sidecar"
    )
    func otherTools() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        // Transaction logs are archived whole, whatever their names: one that is UTF-8 but not ASCII.
        let peer = paths.logs.appendingPathComponent(
            "\(FixtureContainer.Options().activeUUID)/mobile.8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A")
        try Data("x".utf8).write(to: peer.appendingPathComponent("Café notes.cdt"))
        for (format, tool) in [
            (ArchiveFormat.tarZstd, ["tar", "--zstd", "-tf"]), (.tarGzip, ["tar", "-tzf"]), (.tarXz, ["tar", "-tJf"]),
            (.tarZstd, ["bsdtar", "-tf"]), (.zip, ["unzip", "-tq"]),
        ] {
            let archive = tmp.path("t-\(UUID().uuidString)\(format.fileExtension)")
            #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
            let out = try Launcher.run(URL(fileURLWithPath: "/usr/bin/env"), tool + [archive.path])
            #expect(out.status == 0, "\(tool): \(out.stderr)")
            #expect((out.stdout + out.stderr).contains(format == .zip ? "No errors" : "manifest.json"), "\(tool)")
            if tool.first == "tar" {
                #expect(out.stderr.isEmpty, "GNU tar warns (\(tool)): \(out.stderr.prefix(400))")
                #expect(out.stdout.contains("Café notes.cdt"), "\(tool): the UTF-8 name reads as it is")
            }
            let sums = try Self.run(
                "/usr/bin/env",
                ["sh", "-c", "cd '\(tmp.url.path)' && sha256sum -c '\(archive.lastPathComponent).sha256'"])
            #expect(sums.contains(": OK"), "\(sums)")
        }

        // One entry whose name is not UTF-8: GNU tar gives exactly one warning, for it.
        let bad = FileSystemPath.string(fromBytes: Array("bad".utf8) + [0xFF] + Array(".cdt".utf8))
        let fd = FileSystemPath.withCString(peer.path + "/" + bad) { open($0, O_WRONLY | O_CREAT, 0o644) }
        #expect(fd >= 0)
        close(fd)
        let bundle = tmp.path("not-utf8.tar.gz")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", bundle.path]).status == 0)
        let one = try Launcher.run(URL(fileURLWithPath: "/usr/bin/env"), ["tar", "-tzf", bundle.path])
        let warnings = one.stderr.split(separator: "\n").filter { $0.contains("hdrcharset") }
        #expect(warnings.count == 1, "\(one.stderr)")
        #expect(USM.run(["bundle", "verify", bundle.path]).status == 0, "our reader reads both kinds of name")
    }

    @Test("--redact: values hashed, equal values equal, stores valid, logs left out")
    func redact() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        try FixtureStore.mutate(
            paths.localStore,
            "UPDATE ZAUTHOR SET ZNAME = 'Ada Lovelace' WHERE Z_PK IN (1, 2); UPDATE ZAUTHOR SET ZNAME = 'Grace Hopper' WHERE Z_PK = 3"
        )
        let archive = tmp.path("r.tar.zst")
        let a = USM.run(["archive", "--container", paths.root.path, "--redact", "-o", archive.path, "--json"])
        #expect(a.status == 0, "\(a.stderr)")
        #expect(a.json["personalData"] as? Bool == false)
        #expect(!a.stderr.contains("personal data as it is"))
        #expect(USM.run(["restore", archive.path, "--to", tmp.path("back").path]).status == 0)
        let root = tmp.path("back/container")
        let check = USM.run(["check", "--container", root.path])
        #expect(check.status == 0, "\(check.stdout)")

        let local = root.appendingPathComponent("AppData/Library/Application Support/UbiquityStore.sqlite")
        let bytes = try Data(contentsOf: local)
        #expect(bytes.range(of: Data("Lovelace".utf8)) == nil, "no plaintext left in the file")
        #expect(bytes.range(of: Data("Book 1".utf8)) == nil)
        let names = try DatabaseQueue(path: local.path).read { db in
            try String.fetchAll(db, sql: "SELECT ZNAME FROM ZAUTHOR ORDER BY Z_PK")
        }
        #expect(names[0] == names[1] && names[0] != names[2])
        #expect(names.allSatisfy { $0.hasPrefix("redacted:") })
        let report = try Inspection(options: LayoutOptions(container: root), depth: .check).run()
        #expect(
            report.stores.first { $0.role == .local }?.entities.first { $0.name == "Book" }?.rows
                == FixtureStore.Options().books)
        let logs = try TreeSnapshot(root.appendingPathComponent("iCloud/CloudLogs"))
        #expect(!logs.entries.keys.contains { $0.hasSuffix(".cdt") }, "transaction logs left out")
        let manifest = try Self.manifest(archive)
        let redaction = try #require(manifest["redaction"] as? [String: Any])
        #expect(
            (redaction["method"] as? String).map {
                $0.contains("map kept by the sender") && $0.contains("\"redacted:N\"")
            } == true)
        #expect(((redaction["stores"] as? [[String: Any]])?.count ?? 0) == 3)
    }

    /// Red team (issue 20, G6): a table `Z_PRIMARYKEY` does not list kept its text word for word
    /// while the manifest said `personalData: false`.
    @Test(
        "--redact: tables Core Data does not list (a removed entity's, an app's own, FTS shadow tables) are redacted too"
    )
    func redactUnlistedTables() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        try FixtureStore.mutate(
            paths.localStore,
            """
            CREATE TABLE ZOLDNOTE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZBODY VARCHAR, ZDATA BLOB);
            INSERT INTO ZOLDNOTE VALUES (1, 99, 1, 'SECRET-alice my PIN is 4711', X'5345435245542d626c6f62');
            CREATE TABLE custom_log (txt TEXT, n INTEGER);
            INSERT INTO custom_log VALUES ('SECRET-carol-custom', 7);
            CREATE VIRTUAL TABLE notes_fts USING fts5(body);
            INSERT INTO notes_fts VALUES ('SECRET-dave-fulltext');
            """)
        let archive = tmp.path("r.tar.zst")
        let a = USM.run(["archive", "--container", paths.root.path, "--redact", "-o", archive.path, "--json"])
        #expect(a.status == 0, "\(a.stderr)")
        #expect(a.json["personalData"] as? Bool == false)
        let restored = USM.run(["restore", archive.path, "--to", tmp.path("back").path])
        #expect(restored.status == 0, "\(restored.stdout)\(restored.stderr)")
        let local = tmp.path("back/container/AppData/Library/Application Support/UbiquityStore.sqlite")
        let bytes = try Data(contentsOf: local)
        #expect(bytes.range(of: Data("SECRET-".utf8)) == nil, "no plaintext of any table left in the file")
        let (body, n) = try DatabaseQueue(path: local.path).read { db in
            (
                try String.fetchOne(db, sql: "SELECT ZBODY FROM ZOLDNOTE"),
                try Int.fetchOne(db, sql: "SELECT n FROM custom_log")
            )
        }
        #expect(body?.hasPrefix("redacted:") == true)
        #expect(n == 7, "integers are kept")
        let redaction = try #require(try Self.manifest(archive)["redaction"] as? [String: Any])
        let listed = ((redaction["stores"] as? [[String: Any]]) ?? []).flatMap {
            (($0["tables"] as? [[String: Any]]) ?? []).compactMap { $0["table"] as? String }
        }
        #expect(listed.contains("ZOLDNOTE") && listed.contains("custom_log"), "\(listed)")
    }

    /// Red team (issue 20, G5): a transaction log named with a backslash made `archive` exit 0 with
    /// a bundle its own `bundle verify` and `restore` refused, and a changing command leave such a
    /// snapshot behind, listed as an undo.
    @Test("a name holding a backslash: left out of a bundle with a note; a snapshot refuses (8) before writing")
    func backslashName() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let logs = paths.cloudDir.appendingPathComponent("CloudLogs")
        let folder = try #require(
            try FileManager.default.contentsOfDirectory(atPath: logs.path).sorted().first {
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(
                    atPath: logs.appendingPathComponent($0).path, isDirectory: &isDirectory) && isDirectory.boolValue
            })
        try Data("log".utf8).write(to: logs.appendingPathComponent(folder).appendingPathComponent("0003\\x.cdt"))
        try FileManager.default.createDirectory(
            at: logs.appendingPathComponent(folder).appendingPathComponent("..\\..\\up"),
            withIntermediateDirectories: true)
        try Data("below".utf8).write(
            to: logs.appendingPathComponent(folder).appendingPathComponent("..\\..\\up/inner.txt"))
        for format in ["tar.zst", "zip"] {
            let archive = tmp.path("b.\(format)")
            let a = USM.run(["archive", "--container", paths.root.path, "-o", archive.path, "--json"])
            #expect(a.status == 0, "\(a.stderr)")
            let skipped = try #require(try Self.manifest(archive)["skipped"] as? [[String: Any]])
            #expect(skipped.contains { ($0["path"] as? String)?.hasSuffix("0003\\x.cdt") == true }, "\(skipped)")
            #expect(skipped.contains { ($0["path"] as? String)?.hasSuffix("..\\..\\up") == true }, "\(skipped)")
            let verify = USM.run(["bundle", "verify", archive.path])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            let back = tmp.path("back-\(format)")
            #expect(USM.run(["restore", archive.path, "--to", back.path]).status == 0)
        }
        let snapshots = tmp.path("snaps")
        try FileManager.default.createDirectory(at: snapshots, withIntermediateDirectories: true)
        let before = try paths.folders.map(TreeSnapshot.init)
        let delete = USM.run([
            "delete", "container", "--container", paths.root.path, "--snapshot-dir", snapshots.path, "--yes",
        ])
        #expect(delete.status == 8, "\(delete.stdout)\(delete.stderr)")
        #expect(delete.stderr.contains("backslash"), "\(delete.stderr)")
        #expect(try paths.folders.map(TreeSnapshot.init) == before, "nothing changed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: snapshots.path).isEmpty, "no snapshot left behind")
    }

    @Test("--redact leaves out what it cannot redact, and says so")
    func redactUnreadable() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: paths.localStore.path + suffix)
        }
        try Data("secret customer notes, not a database".utf8).write(to: paths.localStore)
        let archive = tmp.path("r.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "--redact", "-o", archive.path]).status == 0)
        let skipped = try #require(try Self.manifest(archive)["skipped"] as? [[String: Any]])
        #expect(
            skipped.contains {
                ($0["path"] as? String)?.hasSuffix("UbiquityStore.sqlite") == true && $0["kind"] as? String == "store"
            })
        let listing = try ArchiveContents.allFileData(archive)
        #expect(listing.range(of: Data("secret customer notes".utf8)) == nil)
    }

    @Test("--metadata-only: schema, metadata and counts, no rows")
    func metadataOnly() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let archive = tmp.path("m.tar.zst")
        #expect(
            USM.run(["archive", "--container", paths.root.path, "--metadata-only", "-o", archive.path]).status == 0)
        #expect(USM.run(["restore", archive.path, "--to", tmp.path("back").path]).status == 0)
        let root = tmp.path("back/container")
        let report = try Inspection(options: LayoutOptions(container: root), depth: .check).run()
        #expect(report.exitCode == .ok, "\(report.allProblems)")
        #expect(report.stores.allSatisfy { $0.objects == 0 && $0.health == .ok })
        #expect(report.stores.first?.storeUUID == FixtureStore.Options().storeUUID)
        let stores = try #require(try Self.manifest(archive)["stores"] as? [[String: Any]])
        #expect(
            (stores.first { $0["role"] as? String == "local" }?["rows"] as? [String: Int])?["Book"]
                == FixtureStore.Options().books)
    }

    @Test("symlinks kept inside, links out and FIFOs left out with a note")
    func specialFiles() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let logs = paths.logs
        try FileManager.default.createSymbolicLink(
            atPath: logs.appendingPathComponent("latest").path, withDestinationPath: "StoreUUID+")
        try FileManager.default.createSymbolicLink(
            atPath: logs.appendingPathComponent("escape").path, withDestinationPath: "../../../../etc")
        #expect(mkfifo(logs.appendingPathComponent("pipe").path, 0o644) == 0)
        let archive = tmp.path("s.tar.zst")
        let a = USM.run(["archive", "--container", paths.root.path, "-o", archive.path])
        #expect(a.status == 0, "\(a.stderr)")
        let skipped = try #require(try Self.manifest(archive)["skipped"] as? [[String: Any]])
        #expect(
            skipped.contains {
                ($0["path"] as? String)?.hasSuffix("escape") == true && $0["kind"] as? String == "symlink"
            })
        #expect(
            skipped.contains { ($0["path"] as? String)?.hasSuffix("pipe") == true && $0["kind"] as? String == "fifo" })
        #expect(USM.run(["restore", archive.path, "--to", tmp.path("back").path]).status == 0)
        let link = tmp.path("back/container/iCloud/CloudLogs/latest").path
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "StoreUUID+")
        #expect(FileStatus.lookup(tmp.path("back/container/iCloud/CloudLogs/escape").path) == nil)
    }

    @Test("--max-size refuses before writing, with an estimate")
    func maxSize() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let out = tmp.path("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let r = USM.run([
            "archive", "--container", paths.root.path, "-o", out.appendingPathComponent("x.tar.zst").path, "--max-size",
            "2K",
        ])
        #expect(r.status == 3)
        #expect(r.stderr.contains("over --max-size 2048"))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "nothing written, no partial file")
        #expect(
            USM.run([
                "archive", "--container", paths.root.path, "-o", out.appendingPathComponent("y.tar.zst").path,
                "--max-size", "10M",
            ]).status == 0)
    }

    @Test("the output never lands in the container, and never overwrites without --overwrite")
    func outputRules() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let before = try TreeSnapshot(paths.root)
        let inside = USM.run([
            "archive", "--container", paths.root.path, "-o", paths.root.appendingPathComponent("b.tar.zst").path,
        ])
        #expect(inside.status == 64)
        #expect(try TreeSnapshot(paths.root) == before)
        let out = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", out.path]).status == 0)
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", out.path]).status == 3)
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", out.path, "--overwrite"]).status == 0)
        #expect(USM.run(["bundle", "verify", out.path]).status == 0)
    }

    @Test("restoring over existing folders needs --yes and snapshots them first")
    func restoreOver() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), Self.inside)
        let archive = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
        let target = tmp.path("t")
        try FileManager.default.createDirectory(
            at: target.appendingPathComponent("container"), withIntermediateDirectories: true)
        try Data("older work".utf8).write(to: target.appendingPathComponent("container/notes.txt"))
        let before = try TreeSnapshot(target)

        let refused = USM.run(["restore", archive.path, "--to", target.path])
        #expect(refused.status == 3)
        #expect(refused.stderr.contains("needs --yes"))
        #expect(try TreeSnapshot(target) == before)

        let r = USM.run(["restore", archive.path, "--to", target.path, "--yes", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let snapshot = try #require(r.json["snapshot"] as? String)
        #expect(FileStatus.lookup(target.appendingPathComponent("container/notes.txt").path) == nil)
        #expect(USM.run(["bundle", "verify", snapshot]).status == 0)
        // The snapshot puts the old folder back.
        #expect(USM.run(["restore", snapshot, "--to", tmp.path("undo").path]).status == 0)
        #expect(try String(contentsOf: tmp.path("undo/container/notes.txt"), encoding: .utf8) == "older work")
    }

    // MARK: - Helpers

    /// A hand-assembled folder with the ubiquity container inside it (`iCloud/`): one root.
    static var inside: FixtureContainer.Options {
        var o = FixtureContainer.Options()
        o.cloudLocation = .inside
        return o
    }

    /// Runs a standard tool (`bsdtar`, `sha256sum`) through the one launcher: stdout and stderr.
    static func run(_ tool: String, _ args: [String]) throws -> String {
        let r = try Launcher.run(URL(fileURLWithPath: tool), args)
        return r.stdout + r.stderr
    }

    /// The bundle's manifest, read in process.
    static func manifest(_ archive: URL) throws -> [String: Any] {
        let data = try ArchiveContents.file("manifest.json", in: archive) ?? Data()
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}
