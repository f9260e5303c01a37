import ArgumentParser
import Foundation
import Testing
@testable import usm_repair
import TestSupport
@testable import USMRepairCore

/// The command line as a user meets it: help, version, JSON shape, documentation.
@Suite("command line", .timed)
struct CLITests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("help everywhere, version, completion scripts")
    func help() throws {
        for args in [
            ["--help"], ["status", "--help"], ["check", "--help"], ["help", "check"], ["archive", "--help"],
            ["restore", "--help"], ["bundle", "--help"], ["bundle", "verify", "--help"],
            ["migrate-store", "--help"], ["strategies", "--help"],
        ] {
            let r = USM.run(args)
            #expect(r.status == 0, "\(args)")
            #expect(r.stdout.contains("USAGE"), "\(args)")
        }
        #expect(USM.run(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == USMRepair.version)
        for shell in ["bash", "zsh", "fish"] {
            let r = USM.run(["--generate-completion-script", shell])
            #expect(r.status == 0)
            #expect(r.stdout.contains("status"))
        }
    }

    @Test("the JSON report has the documented keys, null included")
    func jsonShape() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        let json = USM.run(["status", "--app-dir", paths.appDir.path, "--json"]).json
        for key in [
            "schemaVersion", "command", "cloudEnabled", "activeStore", "corruption", "stores", "layout", "problems",
            "advice", "summary", "exitCode", "exitStatus",
        ] {
            #expect(json.keys.contains(key), "top-level key \(key)")
        }
        #expect(json["cloudEnabled"] is NSNull, "no preferences named: unknown, not false")
        #expect(json["activeStore"] is NSNull, "no cloud folder named: no marker read")
        let store = try #require((json["stores"] as? [[String: Any]])?.first)
        for key in [
            "role", "uuid", "path", "exists", "health", "storeUUID", "ubiquityMetadata", "walPresent", "entities",
            "problems", "cloudVersion", "active", "journalMode", "integrity", "objects", "files", "metadata", "tables",
        ] {
            #expect(store.keys.contains(key), "store key \(key)")
        }
        let entity = try #require((store["entities"] as? [[String: Any]])?.first)
        #expect(Set(entity.keys) == ["name", "parent", "rows", "number", "table", "system"])
    }

    @Test("one error envelope for every failure: usage errors too, with the command's name")
    func errorEnvelope() throws {
        let cases: [([String], Int32, String, String)] = [
            (["status", "--json"], 64, "status", "usage"),
            (["restore", "--json"], 64, "restore", "usage"),
            (["status", "--json", "--no-such-flag", "--store", "x"], 64, "status", "usage"),
            (["bundle", "verify", "/nonexistent/bundle.tar.zst", "--json"], 66, "bundle verify", "not-found"),
            (["status", "--store", "/nonexistent/S.sqlite", "--json"], 66, "status", "not-found"),
        ]
        for (args, code, command, errorCode) in cases {
            let r = USM.run(args)
            #expect(r.status == code, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("usm-repair: error: "), "\(args): \(r.stderr)")
            #expect(!r.stderr.contains("Error: "), "ArgumentParser's own prefix is not used: \(r.stderr)")
            let json = r.json
            #expect(json["command"] as? String == command, "\(args)")
            #expect((json["error"] as? [String: Any])?["code"] as? String == errorCode, "\(args)")
            #expect(json["exitCode"] as? Int == Int(code))
            #expect(json["exitStatus"] as? String != nil)
            #expect(json["schemaVersion"] as? Int == 1)
        }
        // Without --json nothing is printed on stdout.
        #expect(USM.run(["status"]).stdout.isEmpty)
    }

    @Test("NO_COLOR and --quiet")
    func quietAndColor() throws {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store)
        let quiet = USM.run(["status", "--store", store.path, "--quiet"], environment: ["NO_COLOR": "1"])
        #expect(quiet.status == 0)
        #expect(quiet.stdout.isEmpty, "a healthy store prints nothing with --quiet")
        #expect(quiet.stderr.isEmpty, "no progress when stderr is not a terminal")
    }

    /// The full walk of failure points (issue 20) made the Swift runtime's read of
    /// `/proc/self/maps` fail: it then hands over no arguments at all, and the command typed ran as
    /// a bare `usm-repair` (a usage error, exit 64).
    @Test("arguments the runtime could not read are taken from /proc/self/cmdline, or the run stops with 74")
    func commandLineFallback() throws {
        let tmp = try TempDir()
        let cmdline = tmp.path("cmdline")
        try Data("usm-repair\0status\0\0--container\0A B\0".utf8).write(to: cmdline)
        #expect(USMRepairCommand.commandLine(runtime: ["usm-repair", "check"], cmdline: cmdline.path) == ["check"])
        #expect(USMRepairCommand.commandLine(runtime: ["usm-repair"], cmdline: cmdline.path) == [])
        #expect(
            USMRepairCommand.commandLine(runtime: [], cmdline: cmdline.path) == ["status", "", "--container", "A B"])
        #expect(USMRepairCommand.commandLine(runtime: [], cmdline: tmp.path("missing").path) == nil)
        try Data().write(to: cmdline)
        #expect(USMRepairCommand.commandLine(runtime: [], cmdline: cmdline.path) == nil)
        // This process's own, as the kernel keeps it.
        #expect(
            USMRepairCommand.commandLine(runtime: [], cmdline: "/proc/self/cmdline")
                == Array(CommandLine.arguments.dropFirst()))
    }

    @Test("the README documents every command, exit code and problem code")
    func readme() throws {
        let readme = try Documentation.text()
        for code in ProblemCode.allCases {
            #expect(
                readme.contains("| `\(code.rawValue)` | \(code.severity.rawValue) |"),
                "problem code \(code.rawValue) with its severity")
        }
        for status in ExitStatus.allCases {
            #expect(readme.contains("| \(status.rawValue) |"), "exit code \(status.rawValue)")
        }
        // Every flag of every command, read from the commands' own help: a new flag the README does
        // not name fails here.
        var flags: Set<String> = []
        func walk(_ command: ParsableCommand.Type) {
            let help = USMRepairCommand.helpMessage(for: command)
            for match in help.matches(of: /--[a-z][a-z0-9-]*/) { flags.insert(String(match.output)) }
            for sub in command.configuration.subcommands { walk(sub) }
        }
        for sub in USMRepairCommand.configuration.subcommands { walk(sub) }
        #expect(flags.count > 40)
        for flag in flags.subtracting([
            "--help", "--version", "--generate-completion-script", "--experimental-dump-help",
        ]).sorted() {
            #expect(readme.contains("`\(flag)"), "flag \(flag)")
        }
        let changelog = try String(contentsOf: Self.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains("## [Unreleased]") || changelog.contains("## Unreleased"))
    }
}
