import ArgumentParser
import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair

/// `ChangeFlags`, the one flag group of every changing command (issue 30): each accepts
/// `--dry-run`, `--yes`, `--json`, `--detailed-exitcode` and `--snapshot-dir`, and the JSON's
/// `exitCode`/`exitStatus` are the code the process exits with.
@Suite("change flags: one group on every changing command", .timed)
struct ChangeFlagsTests {
    /// The five flags of the group, `--snapshot-dir` pointing at `dir`.
    static func flags(_ dir: URL) -> [String] {
        ["--dry-run", "--yes", "--json", "--detailed-exitcode", "--snapshot-dir", dir.path]
    }

    /// The JSON says the code the process exits with.
    static func expectHonest(_ r: CLI.Result, _ expected: Int32, _ what: String) {
        #expect(r.status == expected, "\(what): \(r.stderr)")
        #expect(r.json["exitCode"] as? Int == Int(r.status), "\(what): JSON exitCode vs process \(r.status)")
        #expect(
            r.json["exitStatus"] as? String == ExitStatus(rawValue: r.status)?.name,
            "\(what): JSON exitStatus \(r.json["exitStatus"] ?? "-")")
    }

    /// Every command path (`delete local-store`) with its type.
    static func commands() -> [(String, ParsableCommand.Type)] {
        var found: [(String, ParsableCommand.Type)] = []
        func walk(_ command: ParsableCommand.Type, _ path: [String]) {
            let path = path + [command.configuration.commandName ?? "\(command)"]
            if command.configuration.subcommands.isEmpty { found.append((path.joined(separator: " "), command)) }
            for sub in command.configuration.subcommands { walk(sub, path) }
        }
        for sub in USMRepairCommand.configuration.subcommands { walk(sub, []) }
        return found
    }

    @Test("a command that takes --dry-run takes the whole group; the changing commands are exactly the catalog's")
    func everyChangingCommandHasTheGroup() throws {
        var changing: Set<String> = []
        for (path, command) in Self.commands() {
            let help = USMRepairCommand.helpMessage(for: command)
            guard help.contains("--dry-run") else { continue }
            changing.insert(path)
            // recover takes no snapshot: no --snapshot-dir (ChangeEnvelopeTests.recoverFlags).
            for flag in ["--yes", "--json", "--detailed-exitcode"] + (path == "recover" ? [] : ["--snapshot-dir"]) {
                #expect(help.contains(flag), "\(path) lacks \(flag)")
            }
        }
        #expect(
            changing == [
                "delete container", "delete cloud-store", "delete local-store", "migrate cloud-to-local",
                "migrate local-to-cloud", "rebuild", "switch", "cloud", "corruption", "migrate-store", "salvage",
                "dedupe", "restore", "recover", "snapshots prune",
            ], "\(changing.sorted())")
    }

    // The eleven operations (every form) take the whole group, and a dry run that would change
    // exits 20: `ChangeEnvelopeTests.operations` runs each one's dry run with `flags`.

    @Test("migrate-store, salvage, dedupe, restore (both forms), recover and snapshots prune take the group")
    func otherChangingCommands() throws {
        let tmp = try TempDir()
        // Never inside the folder a command changes (that is refused, 64).
        let state = try TempDir()
        let snaps = state.path("snaps")
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        let source = tmp.path("S.sqlite").path
        // Dry runs: accepted, nothing written, the JSON's code the process's.
        Self.expectHonest(
            USM.run(["migrate-store", source, tmp.path("D.sqlite").path] + Self.flags(snaps)), 20, "migrate-store")
        Self.expectHonest(USM.run(["salvage", source, tmp.path("V.sqlite").path] + Self.flags(snaps)), 20, "salvage")
        #expect(
            FileStatus.lookup(tmp.path("D.sqlite").path) == nil && FileStatus.lookup(tmp.path("V.sqlite").path) == nil)
        let dedupe = USM.run(["dedupe", "--store", source] + Self.flags(snaps))
        Self.expectHonest(dedupe, dedupe.json["noOp"] as? Bool == true ? 0 : 20, "dedupe")

        // A real run to restore: its snapshot goes into --snapshot-dir.
        let f = try OperationTests.Fixture()
        let run = try f.run(["delete", "local-store", "--yes", "--json", "--snapshot-dir", snaps.path])
        #expect(run.status == 0, "\(run.stderr)")
        let snapshot = try #require(run.json["snapshot"] as? String)
        #expect(snapshot.hasPrefix(snaps.path), "\(snapshot)")
        Self.expectHonest(USM.run(["restore", snapshot] + Self.flags(state.path("snaps2"))), 20, "restore SNAPSHOT")
        Self.expectHonest(
            USM.run(["restore", snapshot, "--to", tmp.path("Case").path] + Self.flags(state.path("snaps2"))), 20,
            "restore --to")
        #expect(FileStatus.lookup(tmp.path("Case").path) == nil, "the dry run of restore --to wrote nothing")
        Self.expectHonest(
            try f.run(["recover", "--dry-run", "--yes", "--json", "--detailed-exitcode"]), 0,
            "recover (nothing pending)")
        // snapshots prune: --snapshot-dir is the folder pruned; the dry run lists the one there.
        let prune = USM.run(["snapshots", "prune", "--keep", "0"] + Self.flags(snaps))
        Self.expectHonest(prune, 20, "snapshots prune")
        #expect((prune.details["removed"] as? [Any])?.count == 1, "\(prune.stdout)")
        #expect(FileStatus.lookup(snapshot) != nil, "the dry run removed nothing")
        // The real prune: the JSON's 20 is the process's; without the flag both say 0.
        Self.expectHonest(
            USM.run([
                "snapshots", "prune", "--keep", "0", "--yes", "--json", "--detailed-exitcode", "--snapshot-dir",
                snaps.path,
            ]),
            20, "snapshots prune --yes")
        #expect(FileStatus.lookup(snapshot) == nil)
        Self.expectHonest(
            USM.run([
                "snapshots", "prune", "--keep", "0", "--yes", "--json", "--detailed-exitcode", "--snapshot-dir",
                snaps.path,
            ]),
            0, "snapshots prune, nothing left")
    }

    @Test("restore --to and the real runs of migrate-store and salvage: the JSON's code is the process's")
    func realRuns() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        let source = tmp.path("S.sqlite").path
        let state = try TempDir()
        let detailed = ["--yes", "--json", "--detailed-exitcode", "--snapshot-dir", state.path("snaps").path]
        Self.expectHonest(
            USM.run(["migrate-store", source, tmp.path("D.sqlite").path] + detailed), 20, "migrate-store")
        Self.expectHonest(USM.run(["salvage", source, tmp.path("V.sqlite").path] + detailed), 20, "salvage")
        let f = try OperationTests.Fixture()
        let run = try f.run(["delete", "local-store", "--yes", "--json"])
        let snapshot = try #require(run.json["snapshot"] as? String)
        Self.expectHonest(USM.run(["restore", snapshot, "--to", tmp.path("Case").path] + detailed), 20, "restore --to")
        #expect(FileStatus.lookup(tmp.path("Case").path) != nil)
        let plain = USM.run(["restore", snapshot, "--to", tmp.path("Case2").path, "--yes", "--json"])
        Self.expectHonest(plain, 0, "restore --to without --detailed-exitcode")
    }

    @Test("migrate-store's steps say `reason`, as every changing command's (schema 3, the envelope; was `why`)")
    func stepVocabulary() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        let r = USM.run(["migrate-store", tmp.path("S.sqlite").path, tmp.path("D.sqlite").path, "--dry-run", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.json["schemaVersion"] as? Int == 3)
        // The plan's steps, and the strategy's own under details.
        let steps = try #require(r.json["steps"] as? [[String: Any]]) + (r.details["steps"] as? [[String: Any]] ?? [])
        #expect(!steps.isEmpty)
        for step in steps {
            #expect(step["reason"] is String && step["why"] == nil, "\(step)")
        }
    }

    @Test("recover --dry-run lists what would be undone and changes nothing; the run then does it (20 in both)")
    func recoverDryRun() throws {
        let f = try OperationTests.Fixture()
        // Stopped after its retire step, before the commit: recovery undoes it.
        let steps = try #require(
            try f.run(["delete", "local-store", "--dry-run", "--json"]).json["steps"] as? [[String: Any]])
        let retire = try #require(steps.lastIndex { $0["action"] as? String == "retire" })
        let killed = try f.run(["delete", "local-store", "--yes"], hooks: .interrupt(after: retire))
        #expect(killed.status == PlanExecutor.Hooks.interruptedStatus, "\(killed.stderr)")
        let pending = try f.snapshot()
        let dry = try f.run(["recover", "--dry-run", "--json", "--detailed-exitcode"])
        Self.expectHonest(dry, 20, "recover --dry-run")
        let listed = try #require(dry.json["recovered"] as? [[String: Any]])
        #expect(listed.count == 1 && listed.first?["outcome"] as? String == "undone", "\(dry.stdout)")
        #expect(try f.snapshot() == pending, "the dry run changed nothing")
        let run = try f.run(["recover", "--json", "--detailed-exitcode"])
        Self.expectHonest(run, 20, "recover")
        #expect((run.json["recovered"] as? [Any])?.count == 1)
        Self.expectHonest(try f.run(["recover", "--json", "--detailed-exitcode"]), 0, "recover, nothing left")
    }
}
