import ArgumentParser
import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair
#if canImport(Glibc)
    import Glibc
#endif

/// What a new user meets: the README's examples as written, help with examples, names that say
/// their format, an honest size estimate, --verbose everywhere, and a snapshot that cannot be lost.
@Suite("command line, first hour", .timed)
struct CommandLineTests {
    // MARK: - README and help examples (items 19, 22)

    /// The README sections whose examples this test runs: the read-only commands and the bundle ones.
    static let exampleSections = [
        "### `usm-repair status`", "### `usm-repair check`", "### `usm-repair archive`",
        "### `usm-repair bundle verify", "### `usm-repair restore",
    ]

    /// Every `usm-repair ...` line in the code blocks of those sections, in README order.
    static func readmeExamples() throws -> [String] {
        let readme = try Documentation.text()
        var lines: [String] = []
        var inSection = false
        var inCode = false
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#") {
                inSection = exampleSections.contains { line.hasPrefix($0) }
                continue
            }
            if line.hasPrefix("```") {
                inCode.toggle()
                continue
            }
            if inSection, inCode, line.hasPrefix("usm-repair ") { lines.append(String(line)) }
        }
        return lines
    }

    @Test("the README's examples run as written, each exits 0 (the --store example from the store's folder)")
    func readmeRuns() throws {
        let examples = try Self.readmeExamples()
        #expect(examples.count >= 10, "\(examples)")
        #expect(examples.contains("usm-repair archive --store Customer.sqlite --metadata-only --max-size 5M"))
        // A home and a working folder holding what the examples name.
        let home = try TempDir()
        // A download with its ubiquity container beside it, as a Mac keeps it (~/Library/Mobile Documents).
        try FixtureContainer.write(to: home.path("Downloads/com.example.notes.xcappdata"))
        try FileManager.default.createDirectory(at: home.path("Library/Preferences"), withIntermediateDirectories: true)
        // The Mac app `status --mac-app com.example.notes` names (nothing found would be 66).
        try FileManager.default.copyItem(
            at: home.path("Downloads/com.example.notes.xcappdata/AppData/Library/Preferences/com.example.notes.plist"),
            to: home.path("Library/Preferences/com.example.notes.plist"))
        try FileManager.default.createSymbolicLink(
            atPath: home.path("Library/Mobile Documents").path, withDestinationPath: "../Downloads/Mobile Documents")
        try FixtureContainer.writeDocument(at: home.path("Downloads/Trip.notesdoc"))
        try FixtureContainer.write(to: home.path("Customer.xcappdata"), BundleTests.inside)
        try FixtureStore.write(to: home.path("Customer.sqlite"))
        let app = try FixtureContainer.write(to: home.path("layout"), BundleTests.inside)
        try FileManager.default.createSymbolicLink(atPath: home.path("App").path, withDestinationPath: "layout/AppData")
        try FileManager.default.createSymbolicLink(
            atPath: home.path("iCloud").path, withDestinationPath: "layout/iCloud")
        #expect(FileManager.default.fileExists(atPath: app.prefs.path))
        let before = try TreeSnapshot(
            home.path("Customer.sqlite").deletingLastPathComponent().appendingPathComponent("Downloads"))
        for example in examples {
            let r = try CLI.shell(example, in: home.url, environment: ["HOME": home.url.path])
            #expect(r.status == 0, "\(example): \(r.stdout)\(r.stderr)")
        }
        #expect(try TreeSnapshot(home.path("Downloads")) == before, "examples that read never write")
        let bundles = try FileManager.default.contentsOfDirectory(atPath: home.url.path).filter {
            $0.hasPrefix("usm-bundle-") && $0.hasSuffix(".tar.zst")
        }
        #expect(bundles.count == 1, "the --store example wrote its bundle beside the store: \(bundles)")
    }

    /// The words of a command line as the shell splits them (quotes and backslashes; no expansion,
    /// which parsing does not need).
    static func words(_ line: Substring) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for c in line {
            if escaped {
                word.append(c)
                escaped = false
            } else if c == "\\", quote != "'" {
                escaped = true
                inWord = true
            } else if let q = quote {
                if c == q { quote = nil } else { word.append(c) }
            } else if c == "'" || c == "\"" {
                quote = c
                inWord = true
            } else if c == " " || c == "\t" {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                word.append(c)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    @Test("every command's help shows examples (each parses: HelpExampleTests.everyExampleParses)")
    func helpExamples() throws {
        var commands: [ParsableCommand.Type] = []
        func collect(_ command: ParsableCommand.Type) {
            commands.append(command)
            command.configuration.subcommands.forEach(collect)
        }
        collect(USMRepairCommand.self)
        #expect(commands.count >= 20)
        for command in commands {
            let discussion = command.configuration.discussion
            // Long examples continue on the next line with `\`: one command each, joined.
            let examples = HelpExampleTests.examples(in: discussion).filter { $0.hasPrefix("usm-repair ") }
            #expect(discussion.contains("Examples:") || discussion.contains("Example:"), "\(command)")
            #expect(!examples.isEmpty, "\(command)")
            // Each example parses: `HelpExampleTests.everyExampleParses` parses the same examples
            // as an 80-column help prints them (a wrapped one is then an example of its own too).
        }
        let help = USM.run(["archive", "--help"])
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("usm-repair archive --store Customer.sqlite"))
    }

    // MARK: - Output names and the size estimate (item 21)

    @Test("an output name that contradicts the format is a usage error, nothing written")
    func formatNames() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let out = tmp.path("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let cases: [([String], String)] = [
            (["-o", out.appendingPathComponent("foo.rar").path], "ends in .rar"),
            (
                ["-o", out.appendingPathComponent("x.zip").path, "--format", "tar.gz"],
                "names a zip archive but --format is tar.gz"
            ),
            (["-o", out.appendingPathComponent("x.tgz").path], "ends in .tgz"),
            (["-o", out.appendingPathComponent("bundle").path], "does not say which format"),
        ]
        for (args, message) in cases {
            let r = USM.run(["archive", "--container", paths.root.path, "--json"] + args)
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("usm-repair: error: ") && r.stderr.contains(message), "\(args): \(r.stderr)")
            #expect((r.json["error"] as? [String: Any])?["code"] as? String == "usage")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
        #expect(
            USM.run([
                "archive", "--container", paths.root.path, "-o", out.appendingPathComponent("b.bin").path, "--format",
                "zip",
            ]).status == 0)
        #expect(
            USM.run(["archive", "--container", paths.root.path, "-o", out.appendingPathComponent("B.ZIP").path]).status
                == 0)
    }

    /// The estimate against the real size, in every format.
    func estimateRatios(_ args: [String], in tmp: TempDir, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for format in ArchiveFormat.allCases {
            let archive = tmp.path("e-\(UUID().uuidString)\(format.fileExtension)")
            let r = USM.run(["archive"] + args + ["-o", archive.path, "--max-size", "1G", "--json"])
            #expect(r.status == 0, "\(r.stderr)", sourceLocation: sourceLocation)
            let bytes = try #require(r.json["bytes"] as? Int, sourceLocation: sourceLocation)
            let estimate = try #require(r.json["estimatedBytes"] as? Int, sourceLocation: sourceLocation)
            let ratio = Double(estimate) / Double(bytes)
            #expect(
                ratio > 0.8 && ratio < 1.25, "\(format): estimated \(estimate) for \(bytes) bytes (ratio \(ratio))",
                sourceLocation: sourceLocation)
        }
    }

    @Test("--max-size estimates within 20% of the real size, small and larger bundles")
    func estimate() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        try estimateRatios(["--container", paths.root.path], in: tmp)
        // The bundle of about 19 KB that a 50K limit refused (the old estimate was 6 times too high).
        #expect(
            USM.run([
                "archive", "--container", paths.root.path, "-o", tmp.path("small.tar.zst").path, "--max-size", "50K",
            ]).status == 0)

        // Larger: a store of 5,000 books (about 1.5 MB; 20,000 cost 10 s and tested nothing more), and
        // 300 logs, some random, some text.
        var options = FixtureStore.Options()
        options.books = 5000
        let store = tmp.path("big/app/UbiquityStore.sqlite")
        try FixtureStore.write(to: store, options)
        let logs = tmp.path("big/cloud/CloudLogs/U/peer/U")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        var rng = SeededRandom(seed: 11)
        for i in 0..<300 {
            let size = 100 + Int(rng.next() % 4000)
            let data =
                i % 3 == 0
                ? Data((0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
                : Data(String(repeating: "log entry \(i) ", count: size / 12).utf8)
            try data.write(to: logs.appendingPathComponent(String(format: "%04d.cdt", i)))
        }
        try estimateRatios(["--app-dir", tmp.path("big/app").path, "--cloud-dir", tmp.path("big/cloud").path], in: tmp)
    }

    // MARK: - --verbose and --quiet (item 21)

    @Test("--verbose lists entries on restore and bundle verify; --quiet keeps the personal-data note")
    func verboseAndQuiet() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let archive = tmp.path("b.tar.zst")
        let quiet = USM.run(["archive", "--container", paths.root.path, "-o", archive.path, "-q"])
        #expect(quiet.status == 0)
        #expect(quiet.stdout.isEmpty)
        #expect(quiet.stderr.contains("personal data"), "the note is always said")
        let entry = "container/iCloud/CloudLogs/StoreUUID+"
        let v = USM.run(["bundle", "verify", archive.path, "--verbose"])
        #expect(v.status == 0)
        #expect(v.stdout.contains("matches: \(entry)"), "\(v.stdout)")
        #expect(!(USM.run(["bundle", "verify", archive.path])).stdout.contains("matches: "))
        let r = USM.run(["restore", archive.path, "--to", tmp.path("back").path, "--verbose"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("extracted: \(entry)"), "\(r.stdout)")
        let j = USM.run(["restore", archive.path, "--to", tmp.path("back2").path, "--verbose", "--json"])
        #expect(j.json["command"] as? String == "restore", "JSON stays one object with --verbose")
    }

    // MARK: - Snapshots (items 2, 18)

    /// A bundle of a fixture container, and a target that already holds its root.
    func restoreSetup(_ tmp: TempDir) throws -> (archive: URL, target: URL) {
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let archive = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
        let target = tmp.path("t")
        try FileManager.default.createDirectory(
            at: target.appendingPathComponent("container"), withIntermediateDirectories: true)
        try Data("older work".utf8).write(to: target.appendingPathComponent("container/notes.txt"))
        return (archive, target)
    }

    @Test(
        "a snapshot never goes through a planted <to>/.usm-repair-snapshots link; the path printed exists and restores")
    func plantedSnapshotLink() throws {
        let tmp = try TempDir()
        let (archive, target) = try restoreSetup(tmp)
        let elsewhere = tmp.path("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: target.appendingPathComponent(".usm-repair-snapshots").path, withDestinationPath: elsewhere.path)
        let state = tmp.path("state")
        let r = USM.run(
            ["restore", archive.path, "--to", target.path, "--yes", "--json"],
            environment: ["XDG_STATE_HOME": state.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty,
            "nothing written through the link")
        #expect(FileStatus.lookup(target.appendingPathComponent(".usm-repair-snapshots").path)?.kind == .symlink)
        let snapshot = try #require(r.json["snapshot"] as? String)
        #expect(snapshot.hasPrefix(state.appendingPathComponent("usm-repair/snapshots").path + "/"), "\(snapshot)")
        #expect(USM.run(["bundle", "verify", snapshot]).status == 0)
        #expect(USM.run(["restore", snapshot, "--to", tmp.path("undo").path]).status == 0)
        #expect(try String(contentsOf: tmp.path("undo/container/notes.txt"), encoding: .utf8) == "older work")
    }

    @Test("--snapshot-dir inside a root being replaced, directly or through a link: refused before anything is written")
    func snapshotInsideReplaced() throws {
        let tmp = try TempDir()
        let (archive, target) = try restoreSetup(tmp)
        try FileManager.default.createSymbolicLink(
            atPath: tmp.path("link").path, withDestinationPath: target.appendingPathComponent("container").path)
        let before = try TreeSnapshot(tmp.url)
        for dir in [target.appendingPathComponent("container/snaps"), tmp.path("link/snaps")] {
            let r = USM.run([
                "restore", archive.path, "--to", target.path, "--yes", "--snapshot-dir", dir.path, "--json",
            ])
            #expect(r.status == 64, "\(dir.path): \(r.stderr)")
            #expect(
                r.stderr.contains(
                    "lies inside \(target.appendingPathComponent("container").path), which this command changes"),
                "\(r.stderr)")
            #expect(r.json["exitStatus"] as? String == "usage")
            #expect(try TreeSnapshot(tmp.url) == before, "nothing lost, nothing written: \(dir.path)")
        }
    }

    @Test(
        "--snapshot-dir on a read-only file system: exit 74 with a sentence naming the folder",
        .enabled(if: geteuid() == 0, "mounting needs root"))
    func readOnlySnapshotFolder() throws {
        let tmp = try TempDir()
        let (archive, target) = try restoreSetup(tmp)
        let ro = tmp.path("ro")
        try FileManager.default.createDirectory(at: ro, withIntermediateDirectories: true)
        let tmpfs = try TestMount(tmpfsAt: ro, size: 64 << 10, readOnly: true)
        defer {
            tmpfs.unmount()
            withExtendedLifetime(tmp) {}
        }
        let before = try TreeSnapshot(target)
        let r = USM.run([
            "restore", archive.path, "--to", target.path, "--yes", "--snapshot-dir",
            ro.appendingPathComponent("snaps").path,
        ])
        #expect(r.status == 74, "\(r.stderr)")
        #expect(
            r.stderr.contains(
                "cannot write \(ro.path)/snaps: cannot create the snapshot folder: Read-only file system"),
            "\(r.stderr)")
        #expect(!r.stderr.contains("NSCocoaErrorDomain"))
        #expect(try TreeSnapshot(target) == before, "nothing replaced")
        // The folder exists but cannot take a file: the same kind of sentence.
        let r2 = USM.run(["restore", archive.path, "--to", target.path, "--yes", "--snapshot-dir", ro.path])
        #expect(r2.status == 74, "\(r2.stderr)")
        #expect(
            r2.stderr.contains("cannot write \(ro.path)/") && r2.stderr.contains("Read-only file system"),
            "\(r2.stderr)")
        #expect(try TreeSnapshot(target) == before)
    }

    @Test("a StoreUUID+ symlink to itself is reported, not ignored")
    func selfLinkMarker() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let marker = paths.logs.appendingPathComponent("StoreUUID+")
        try FileManager.default.removeItem(at: marker)
        try FileManager.default.createSymbolicLink(atPath: marker.path, withDestinationPath: "StoreUUID+")
        for command in ["status", "check"] {
            let r = USM.run([command, "--container", paths.root.path, "--json"])
            #expect(r.status == 2, "\(command): \(r.stdout)")
            let problems = r.json["problems"] as? [[String: Any]] ?? []
            #expect(
                problems.contains {
                    $0["code"] as? String == "marker-malformed"
                        && ($0["message"] as? String)?.contains("resolves to nothing") == true
                },
                "\(problems)")
            let markers = (r.json["layout"] as? [String: Any])?["markers"] as? [[String: Any]] ?? []
            #expect(markers.contains { $0["name"] as? String == "StoreUUID+" && $0["valid"] as? Bool == false })
        }
    }

    // MARK: - One envelope (item 20)

    @Test("SQLite errors from the file system are I/O errors (74), the store's own are bad input (2)")
    func sqliteErrorClasses() {
        // SQLITE_PERM, SQLITE_READONLY (a -wal that could not be opened for writing), SQLITE_IOERR
        // and SQLITE_CANTOPEN, with extended codes; SQLITE_ERROR, SQLITE_CORRUPT, SQLITE_NOTADB.
        for code: Int32 in [3, 8, 8 | (1 << 8), 10, 10 | (13 << 8), 14] {
            #expect(USMError.sqlite(path: "p", code: code, message: "m").exitStatus == .ioError, "\(code)")
        }
        for code: Int32 in [1, 11, 26] {
            #expect(USMError.sqlite(path: "p", code: code, message: "m").exitStatus == .badInput, "\(code)")
        }
    }

    @Test("every error code is listed in the README's error.code row; the CHANGELOG has the released version")
    func errorCodesDocumented() throws {
        let samples: [USMError] = [
            .notFound(path: "p", what: "w"), .wrongKind(path: "p", expected: "e"), .undecodableName(path: "p"),
            .unreadable(path: "p", reason: "r"),
            .writeFailed(path: "p", reason: "r"), .outOfSpace(path: "p", reason: "r"),
            .notSQLite(path: "p", reason: "r"),
            .notCoreData(path: "p", missing: []), .sqlite(path: "p", code: 1, message: "m"),
            .hostileSchema(path: "p", reason: "r"),
            .symlinkEscapes(path: "p", target: "t", root: "r"),
            .usage("u"), .archive(path: "p", code: 1, message: "m"), .brokenArchive(path: "p", message: "m"),
            .notABundle(path: "p", reason: "r"), .hostileArchive(path: "p", reason: "r"),
            .manifestMismatch(path: "p", count: 1, first: "f"),
            .tooLarge(estimate: 2, limit: 1, detail: "d"), .confirmationRequired("c"), .changedWhileReading(path: "p"),
            .cloudContainerRequired(operation: "o", why: "w"), .storeBusy(path: "p", reason: "r", pid: nil),
            .layoutBusy(path: "p", pid: nil),
            .interruptedOperation(path: "p", operation: "o"), .untrustedOperation(path: "p", reason: "r"),
            .recoveryConflict(path: "p", kept: "k"), .recoveryRefused(path: "p", reason: "r"),
            .preconditionFailed("p"), .changedSincePlanning(path: "p"),
            .unknownStrategy("s", known: []), .destinationExists(path: "p"), .sourceDamaged(path: "p", detail: "d"),
            .schemaMismatch(path: "p", detail: "d"), .mergeConflict(entity: "e", count: 1, values: "v"),
            .recipeInvalid(path: "p", reason: "r"),
            .modelInvalid(path: "p", reason: "r"), .recipeFailed(recipe: "r", step: 1, message: "m"),
            .pluginFailed(program: "p", reason: "r"), .pluginRefused(program: "p", reason: "r"),
            .verificationFailed(path: "p", detail: "d"), .unexpected("u"),
            .operationPending(operation: "o", committed: true, reason: "r", underlying: .ioError),
            .operationPending(operation: "o", committed: false, reason: "r", underlying: .outOfSpace),
        ]
        // Every case once: a case added without a sample above stops this switch from compiling.
        for sample in samples {
            switch sample {
            case .notFound, .wrongKind, .undecodableName, .unreadable, .writeFailed, .outOfSpace, .notSQLite,
                .notCoreData, .sqlite, .hostileSchema,
                .symlinkEscapes, .usage,
                .archive, .brokenArchive, .notABundle, .hostileArchive, .manifestMismatch, .tooLarge,
                .confirmationRequired,
                .changedWhileReading, .cloudContainerRequired, .storeBusy, .layoutBusy, .interruptedOperation,
                .untrustedOperation,
                .recoveryConflict, .recoveryRefused, .preconditionFailed,
                .changedSincePlanning, .unknownStrategy, .destinationExists, .sourceDamaged, .schemaMismatch,
                .mergeConflict,
                .recipeInvalid, .modelInvalid, .recipeFailed, .pluginFailed, .pluginRefused, .verificationFailed,
                .unexpected, .operationPending:
                break
            }
        }
        let readme = try Documentation.text()
        let row = try #require(readme.split(separator: "\n").first { $0.hasPrefix("| `error.code` |") })
        for sample in samples { #expect(row.contains("`\(sample.code)`"), "error code \(sample.code)") }
        let changelog = try String(
            contentsOf: CLITests.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(
            changelog.contains("## [\(USMRepair.version)] - "), "a released section for --version \(USMRepair.version)")
        let unreleased = try #require(changelog.range(of: "## [Unreleased]"))
        let released = try #require(changelog.range(of: "## [\(USMRepair.version)]"))
        #expect(unreleased.lowerBound < released.lowerBound)
        #expect(FileManager.default.fileExists(atPath: CLITests.packageRoot.appendingPathComponent("LICENSE").path))
    }

    @Test("usage errors and failures of every command share the envelope; bundle verify reports its status")
    func envelopes() throws {
        let tmp = try TempDir()
        let cases: [([String], Int32, String, String)] = [
            (["bogus", "--json"], 64, "usm-repair", "usage"),
            (["bundle", "verify", "--json"], 64, "bundle verify", "usage"),
            (["archive", "--store", "/x.sqlite", "-o", "y.rar", "--json"], 64, "archive", "usage"),
            (
                ["restore", tmp.path("none.tar.zst").path, "--to", tmp.path("t").path, "--json"], 66, "restore",
                "not-found"
            ),
            (["check", "--store", "/x", "--ignore", "no-such-code", "--json"], 64, "check", "usage"),
        ]
        for (args, code, command, errorCode) in cases {
            let r = USM.run(args)
            #expect(r.status == code, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("usm-repair: error: "), "\(args): \(r.stderr)")
            #expect(r.json["command"] as? String == command, "\(args)")
            #expect((r.json["error"] as? [String: Any])?["code"] as? String == errorCode, "\(args)")
            #expect(r.json["exitStatus"] as? String == ExitStatus(rawValue: code)?.name)
        }
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let archive = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
        let v = USM.run(["bundle", "verify", archive.path, "--json"])
        #expect(v.json["exitStatus"] as? String == "ok" && v.json["exitCode"] as? Int == 0)
    }
}
