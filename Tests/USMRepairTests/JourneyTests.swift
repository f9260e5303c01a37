import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The end of the user's job: the next step after every change (which folder goes back and how,
/// what must be changed on the customer's Mac), the snapshots left behind (listed, pruned, named
/// after whose they are), and progress on a terminal. (That GNU tar reads a bundle without a
/// warning is checked with the other archivers, `BundleTests.otherTools`.)
@Suite("the way back", .timed)
struct JourneyTests {
    @Test(
        "an Xcode download: the next step sends it back with Replace Container, and names the ubiquity container as the Mac's to change"
    )
    func xcodeNextStep() throws {
        let tmp = try TempDir()
        var options = FixtureContainer.Options()
        options.corruptedUUID = options.activeUUID
        let paths = try FixtureContainer.write(to: tmp.path("cases/Notes.xcappdata"), options)
        let r = USM.run([
            "corruption", "clear", "--container", paths.root.path, "--snapshot-dir", tmp.path("s").path, "--yes",
            "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let next = r.json["nextStep"] as? String ?? ""
        #expect(
            !next.contains("Replace Container"),
            "only the ubiquity container changed: nothing to send through Xcode: \(next)")
        #expect(
            next.contains("customer's Mac")
                && next.contains("usm-repair corruption clear --mac-app com.example.notes --yes"), "\(next)")

        let text = USM.run([
            "cloud", "disable", "--container", paths.root.path, "--snapshot-dir", tmp.path("s").path, "--yes",
        ])
        #expect(text.status == 0, "\(text.stderr)")
        let last = text.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("Next step: Send \(paths.root.path) back to the device with Xcode"), "\(text.stdout)")
        #expect(last.contains("Replace Container") && last.contains("development-signed builds only"))
        #expect(!last.contains("customer's Mac"), "the ubiquity container was not changed")

        let dry = USM.run(["delete", "container", "--container", paths.root.path, "--dry-run", "--json"])
        let planned = dry.json["nextStep"] as? String ?? ""
        #expect(planned.hasPrefix("After running it: Send"), "\(planned)")
        #expect(
            planned.contains("Replace Container") && planned.contains("customer's Mac"), "both parts change: \(planned)"
        )

        let noOp = USM.run(["cloud", "disable", "--container", paths.root.path, "--yes", "--json"])
        #expect((noOp.json["nextStep"] as? String)?.hasPrefix("Nothing was changed") == true)
    }

    @Test("a device backup extracted with a backup tool, and a plain folder: each goes back its own way")
    func otherArrivals() throws {
        let tmp = try TempDir()
        let backup = try FixtureContainer.write(to: tmp.path("backup/AppDomain-com.example.notes"))
        let r = USM.run([
            "cloud", "disable", "--container", backup.root.path, "--snapshot-dir", tmp.path("s").path, "--yes",
            "--json",
        ])
        #expect((r.json["nextStep"] as? String ?? "").contains("backup tool"), "\(r.stdout)")
        let plain = try FixtureContainer.write(to: tmp.path("export/NotesDiagnostics"))
        let p = USM.run([
            "cloud", "disable", "--app-dir", plain.appDir.path, "--prefs", plain.prefs.path,
            "--snapshot-dir", tmp.path("s").path, "--yes", "--json",
        ])
        #expect((p.json["nextStep"] as? String ?? "").contains("the way they came"), "\(p.stdout)")
        #expect(NextStep.arrival(LayoutOptions(container: tmp.path("x/Foo.xcappdata"))) == .xcode)
        #expect(NextStep.arrival(LayoutOptions(macApp: "com.example.notes")) == .macApp)
    }

    @Test("the undo ends with the next step too; a Mac's own Library folders given with --app-dir are a Mac in place")
    func undoNextStep() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"))
        let r = USM.run([
            "cloud", "disable", "--container", paths.root.path, "--snapshot-dir", tmp.path("s").path, "--yes", "--json",
        ])
        let snapshot = try #require(r.json["snapshot"] as? String)
        let undo = USM.run(["restore", snapshot, "--yes", "--json"])
        #expect(undo.status == 0, "\(undo.stderr)")
        #expect((undo.json["nextStep"] as? String ?? "").contains("Replace Container"), "\(undo.stdout)")
        let text = USM.run(["restore", snapshot, "--dry-run"])
        #expect(text.stdout.contains("Next step: After running it:"), "\(text.stdout)")
        let mac = LayoutOptions(
            appDirectory: URL(
                fileURLWithPath: "/Users/jo/Library/Containers/com.x/Data/Library/Application Support/com.x"))
        #expect(NextStep.arrival(mac, home: "/Users/jo") == .macApp)
        let copy = LayoutOptions(
            appDirectory: URL(fileURLWithPath: "/Users/jo/Cases/jo/Library/Application Support/com.x"))
        #expect(NextStep.arrival(copy, home: "/Users/jo") == .folder)
    }

    @Test(
        "snapshots: listed with command, time, folders and size; pruned by age or count, with --dry-run and --yes; other files never"
    )
    func snapshots() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"))
        let folder = tmp.path("snapshots")
        let flags = ["--container", paths.root.path, "--snapshot-dir", folder.path, "--yes"]
        #expect(USM.run(["cloud", "disable"] + flags).status == 0)
        let quiet = USM.run(["cloud", "enable"] + flags + ["-q"])
        #expect(quiet.status == 0)
        #expect(quiet.stdout.isEmpty)
        #expect(
            quiet.stderr.contains("to undo: usm-repair restore ") && quiet.stderr.contains(" --yes"),
            "-q keeps the undo: \(quiet.stderr)")
        // A bundle in the folder is not a snapshot: listed as such, never pruned.
        #expect(
            USM.run([
                "archive", "--container", paths.root.path, "-o", folder.appendingPathComponent("bundle.tar.zst").path,
            ]).status == 0)

        let list = USM.run(["snapshots", "--snapshot-dir", folder.path, "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let entries = list.json["snapshots"] as? [[String: Any]] ?? []
        let real = entries.filter { $0["problem"] is NSNull }
        #expect(real.map { $0["command"] as? String } == ["cloud disable", "cloud enable"], "\(entries)")
        #expect(
            real.allSatisfy { ($0["bytes"] as? Int ?? 0) > 0 && ($0["createdAt"] as? String)?.hasSuffix("Z") == true })
        #expect(
            real.allSatisfy {
                (($0["layout"] as? [String: String])?["preferences"] ?? "").hasSuffix("Library/Preferences")
            }, "\(real)")
        #expect(
            real.allSatisfy {
                URL(fileURLWithPath: $0["path"] as? String ?? "").lastPathComponent.contains("-Notes.xcappdata-")
            },
            "the name says whose: \(real.map { $0["path"] ?? "" })")
        #expect(
            entries.count == 3 && entries.contains { ($0["problem"] as? String)?.contains("not a snapshot") == true })
        let text = USM.run(["snapshots", "list", "--snapshot-dir", folder.path])
        #expect(
            text.stdout.contains("cloud disable") && text.stdout.contains("folders: preferences "), "\(text.stdout)")

        let dry = USM.run(["snapshots", "prune", "--keep", "1", "--snapshot-dir", folder.path, "--dry-run", "--json"])
        #expect((dry.details["removed"] as? [[String: Any]])?.map { $0["command"] as? String } == ["cloud disable"])
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".tar.zst") }.count
                == 3)
        #expect(
            USM.run(["snapshots", "prune", "--keep", "1", "--snapshot-dir", folder.path]).status == 3,
            "no --yes without a terminal")
        #expect(USM.run(["snapshots", "prune", "--snapshot-dir", folder.path, "--yes"]).status == 64, "say which go")
        #expect(
            USM.run(["snapshots", "prune", "--older-than", "soon", "--snapshot-dir", folder.path, "--yes"]).status == 64
        )
        let old = USM.run([
            "snapshots", "prune", "--older-than", "30d", "--snapshot-dir", folder.path, "--yes", "--json",
        ])
        #expect((old.details["removed"] as? [Any])?.isEmpty == true, "nothing is 30 days old")
        let pruned = USM.run(["snapshots", "prune", "--keep", "1", "--snapshot-dir", folder.path, "--yes", "--json"])
        #expect(pruned.status == 0 && pruned.details["kept"] as? Int == 1, "\(pruned.stdout)")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".tar.zst") }
            .sorted()
        #expect(
            left.count == 2 && left.contains("bundle.tar.zst") && left.contains { $0.hasPrefix("cloud-enable-") },
            "\(left)")
        // A pruned snapshot's `.sha256` sidecar goes with it; the others' stay.
        let sidecars = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            $0.hasSuffix(".sha256")
        }
        #expect(!sidecars.contains { $0.hasPrefix("cloud-disable-") }, "\(sidecars)")
        #expect(sidecars.contains { $0.hasPrefix("cloud-enable-") }, "\(sidecars)")
        let all = USM.run([
            "snapshots", "prune", "--older-than", "0m", "--snapshot-dir", folder.path, "--yes", "--json",
        ])
        #expect((all.details["removed"] as? [Any])?.count == 1)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
                $0.hasSuffix(".sha256") && !$0.hasPrefix("bundle.")
            }.isEmpty, "no sidecar outlives its snapshot")
        #expect(
            SnapshotCatalog.duration("2w") == 14 * 86400 && SnapshotCatalog.duration("12h") == 43200
                && SnapshotCatalog.duration("x") == nil)
    }

    @Test(
        "on a terminal: [step k/n] with each step's reason, rows copied while building, the redaction phase; NO_COLOR honoured"
    )
    func progress() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            Issue.record("util-linux script is not installed: no terminal to test progress on")
            return
        }
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"))
        func onTerminal(_ command: String, noColor: Bool = false) throws -> CLI.Result {
            try CLI.shell(
                "script -qec \(ShellWords.quote((noColor ? "" : "env -u NO_COLOR ") + command)) /dev/null", in: tmp.url,
                environment: noColor ? ["NO_COLOR": "1", "TERM": "xterm"] : ["TERM": "xterm"])
        }
        let migrate = try onTerminal(
            "usm-repair migrate cloud-to-local --container '\(paths.root.path)' --replace --strategy copy-entities --yes --snapshot-dir '\(tmp.path("s").path)'"
        )
        #expect(migrate.stdout.contains("[step 1/"), "\(migrate.stdout)")
        #expect(migrate.stdout.contains("everything this changes or removes is archived first"), "a step's reason")
        #expect(migrate.stdout.contains("rows copied"), "\(migrate.stdout)")
        #expect(migrate.stdout.contains("\u{1B}[1m"), "colours on a terminal")
        let redact = try onTerminal(
            "usm-repair archive --container '\(paths.root.path)' --redact -o '\(tmp.path("r.tar.zst").path)'",
            noColor: true)
        #expect(redact.stdout.contains("redacting store"), "\(redact.stdout)")
        let plain = try onTerminal(
            "usm-repair cloud disable --container '\(paths.root.path)' --yes --snapshot-dir '\(tmp.path("s").path)'",
            noColor: true)
        #expect(plain.stdout.contains("Next step:"))
        #expect(!plain.stdout.contains("\u{1B}[1m") && !plain.stdout.contains("\u{1B}[3"), "NO_COLOR: no colour")
        // Without a terminal: no progress at all.
        let piped = USM.run([
            "cloud", "enable", "--container", paths.root.path, "--yes", "--snapshot-dir", tmp.path("s").path,
        ])
        #expect(!piped.stderr.contains("[step"), "\(piped.stderr)")
    }
}
