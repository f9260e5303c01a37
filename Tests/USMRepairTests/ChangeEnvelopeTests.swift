import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair

/// `ChangeReport`, the one JSON envelope of every changing command, and `ChangeRunner`, the one
/// runner that makes it (issue 30): every changing command's JSON parses into the envelope, its
/// `exitCode` is the process's, and the command's own part is under `details`.
@Suite("change envelope: one report shape and one runner for every changing command", .timed)
struct ChangeEnvelopeTests {
    /// The envelope's keys, the same for every changing command.
    static let envelopeKeys = [
        "schemaVersion", "command", "operation", "dryRun", "noOp", "changed", "steps", "snapshot", "notes",
        "recovered", "seconds", "nextStep", "exitCode", "exitStatus", "details",
    ]

    /// The envelope as a script reads it: decoding fails when a field is missing or of another type.
    struct Envelope: Decodable {
        struct Step: Decodable {
            let index: Int
            let action: String
            let paths: [String]
            let reason: String
        }

        let schemaVersion: Int
        let command: String
        let operation: String
        let dryRun: Bool
        let noOp: Bool
        let changed: Bool
        let steps: [Step]
        let snapshot: String?
        let notes: [String]
        let seconds: Double
        let nextStep: String
        let exitCode: Int32
        let exitStatus: String
    }

    /// Decodes `r`'s JSON as the envelope of `command` and checks that it says the process's exit
    /// code, that its keys are exactly the envelope's, and that `details` is an object.
    @discardableResult
    static func expectEnvelope(
        _ r: CLI.Result, _ command: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Envelope? {
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: Data(r.stdout.utf8))
        } catch {
            Issue.record("\(what): not the envelope (\(error)): \(r.stdout)\(r.stderr)", sourceLocation: sourceLocation)
            return nil
        }
        #expect(envelope.schemaVersion == 3, "\(what)", sourceLocation: sourceLocation)
        #expect(envelope.command == command, "\(what): \(envelope.command)", sourceLocation: sourceLocation)
        #expect(
            envelope.exitCode == r.status, "\(what): JSON \(envelope.exitCode), process \(r.status)",
            sourceLocation: sourceLocation)
        #expect(
            envelope.exitStatus == ExitStatus(rawValue: r.status)?.name, "\(what): \(envelope.exitStatus)",
            sourceLocation: sourceLocation)
        #expect(
            Set(r.json.keys) == Set(envelopeKeys), "\(what): \(r.json.keys.sorted())", sourceLocation: sourceLocation)
        #expect(r.json["details"] is [String: Any], "\(what): details", sourceLocation: sourceLocation)
        #expect(
            envelope.steps.allSatisfy { !$0.reason.isEmpty }, "\(what): every step has its reason",
            sourceLocation: sourceLocation)
        return envelope
    }

    @Test(
        "the eleven operations, dry and run, with and without --detailed-exitcode: one envelope, the process's code; a second run is nothing to do",
        arguments: DataSafetyTests.everyCommand
    )
    func operations(_ command: [String]) throws {
        let f = try OperationTests.Fixture {
            $0.corruptedUUID = $0.activeUUID
            $0.cloudEnabled = command == ["cloud", "enable"] ? false : true
        }
        // The command's path; `cloud` and `corruption` name their action too (`cloud enable`).
        let words = command.joined(separator: " ")
        let name =
            ["cloud", "corruption"].contains(command[0])
            ? command.prefix(2).joined(separator: " ")
            : ChangeFlagsTests.commands().map(\.0).sorted { $0.count > $1.count }.first {
                words == $0 || words.hasPrefix($0 + " ")
            }
        // The dry run with the whole flag group (`--dry-run --yes --json --detailed-exitcode
        // --snapshot-dir`): accepted, honest about its code, nothing changed (was
        // `ChangeFlagsTests.operations`, on the same fixture).
        let before = try f.snapshot()
        let dry = try f.run(command + ChangeFlagsTests.flags(f.tmp.path("snaps")))
        #expect(dry.status != 64, "\(command) refused a flag of the group: \(dry.stderr)")
        ChangeFlagsTests.expectHonest(dry, dry.json["noOp"] as? Bool == true ? 0 : 20, "\(command)")
        let planned = Self.expectEnvelope(dry, name ?? "?", "\(command) --dry-run")
        #expect(dry.status == (planned?.noOp == true ? 0 : 20), "\(command): \(dry.stderr)")
        #expect(try f.snapshot() == before, "\(command): the dry run changed nothing")
        // The run as `OperationTests.apply` checks it (the next launch predicted and found, nothing
        // of ours left, a snapshot that verifies, outside the layout).
        let run = try OperationTests.applied(f, command)
        let done = Self.expectEnvelope(run, name ?? "?", "\(command) --yes")
        #expect(run.status == 0 && done?.changed == (planned?.noOp == false), "\(command): \(run.stderr)")
        // Every changing command recognises its own end state: a second run is nothing to do
        // (was `DataSafetyTests.secondRunIsNothingToDo`, the same fixture and the same first run).
        let tree = try f.snapshot()
        let again = try f.run(command + ["--yes", "--json", "--detailed-exitcode"])
        #expect(again.status == 0, "\(command): \(again.stderr)")
        #expect(
            again.json["noOp"] as? Bool == true && again.json["changed"] as? Bool == false,
            "\(command): \(again.json["steps"] ?? [])")
        #expect(try f.snapshot() == tree, "\(command): the second run changed nothing")
    }

    @Test("migrate-store, salvage, dedupe, restore (both forms), recover and snapshots prune: one envelope")
    func otherChangingCommands() throws {
        let tmp = try TempDir()
        let state = try TempDir()
        let snaps = state.path("snaps").path
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        let source = tmp.path("S.sqlite").path
        let detailed = ["--json", "--detailed-exitcode", "--snapshot-dir", snaps]

        for dry in [true, false] {
            let flags = detailed + (dry ? ["--dry-run"] : ["--yes"])
            let suffix = dry ? "dry" : "run"
            let m = USM.run(["migrate-store", source, tmp.path("D-\(suffix).sqlite").path] + flags)
            let migrated = Self.expectEnvelope(m, "migrate-store", "migrate-store \(suffix)")
            #expect(m.status == 20 && migrated?.changed == !dry, "\(m.stderr)")
            #expect(m.details["strategy"] as? String == "copy-entities", "the engine's report is the details")
            let s = USM.run(["salvage", source, tmp.path("V-\(suffix).sqlite").path] + flags)
            Self.expectEnvelope(s, "salvage", "salvage \(suffix)")
            #expect(s.details["tables"] is [Any], "salvage's report is the details")
        }
        let dedupe = USM.run(["dedupe", "--store", source, "--dry-run"] + detailed)
        Self.expectEnvelope(dedupe, "dedupe", "dedupe --dry-run")
        #expect(dedupe.details["removed"] is [String: Int])

        let f = try OperationTests.Fixture()
        let run = try f.run(["delete", "local-store", "--yes", "--json", "--snapshot-dir", snaps])
        let snapshot = try #require(run.json["snapshot"] as? String)
        let undoDry = USM.run(["restore", snapshot, "--dry-run"] + detailed)
        Self.expectEnvelope(undoDry, "restore", "restore SNAPSHOT --dry-run")
        #expect(undoDry.status == 20 && undoDry.details["inPlace"] as? Bool == true)
        let bundleDry = USM.run(["restore", snapshot, "--to", tmp.path("Case").path, "--dry-run"] + detailed)
        let planned = Self.expectEnvelope(bundleDry, "restore", "restore --to --dry-run")
        #expect(bundleDry.details["inPlace"] as? Bool == false)
        #expect(planned?.steps.contains { $0.action == "extract" } == true, "the dry run shows the plan's steps")
        let bundle = USM.run(["restore", snapshot, "--to", tmp.path("Case").path, "--yes"] + detailed)
        Self.expectEnvelope(bundle, "restore", "restore --to")
        #expect(bundle.status == 20)
        let recover = try f.run(["recover", "--json", "--detailed-exitcode", "--yes"])
        Self.expectEnvelope(recover, "recover", "recover")
        #expect(recover.status == 0, "nothing pending: nothing done")
        let prune = USM.run(["snapshots", "prune", "--keep", "0", "--dry-run"] + detailed)
        let pruned = Self.expectEnvelope(prune, "snapshots prune", "snapshots prune --dry-run")
        #expect(prune.status == 20 && pruned?.steps.first?.action == "remove")
        #expect(prune.details["kept"] as? Int == 0)
    }

    @Test("a refusal in planning is the same in the dry run and the run, before consent (no snapshot)")
    func refusalAtPlanning() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        try FixtureStore.write(to: tmp.path("D.sqlite"))
        let args = ["migrate-store", tmp.path("S.sqlite").path, tmp.path("D.sqlite").path, "--json"]
        let dry = USM.run(args + ["--dry-run"])
        let run = USM.run(args + ["--yes"])
        #expect(dry.status == ExitStatus.refused.rawValue && run.status == dry.status, "\(dry.stderr)\(run.stderr)")
        #expect((dry.json["error"] as? [String: Any])?["code"] as? String == "destination-exists")
    }

    @Test("consent of a store replacement: the plan with its reasons headed as a plan, then the question")
    func replacementConsentShowsPlan() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        try FixtureStore.write(to: tmp.path("D.sqlite"))
        let args = ["migrate-store", tmp.path("S.sqlite").path, tmp.path("D.sqlite").path, "--overwrite"]
        let asked = USM.run(args, answers: ["n"])
        #expect(asked.status == ExitStatus.refused.rawValue, "\(asked.stderr)")
        #expect(asked.stdout.contains("Plan (copy-entities, overwrite)"), "\(asked.stdout)")
        #expect(!asked.stdout.contains("Migrated"), "nothing was done before the answer: \(asked.stdout)")
        let dry = USM.run(args + ["--dry-run", "--json"])
        for step in (dry.json["steps"] as? [[String: Any]] ?? []) where step["action"] as? String == "snapshot" {
            #expect(asked.stdout.contains(step["reason"] as? String ?? "-"), "the snapshot's reason")
        }
        // Without a terminal and without --yes: refused with what to do.
        let unattended = USM.run(args)
        #expect(unattended.status == ExitStatus.refused.rawValue && unattended.stderr.contains("--yes"))
    }

    @Test("restore SNAPSHOT asks with the plan headed as a plan (was `Done:`)")
    func undoConsentShowsPlan() throws {
        let f = try OperationTests.Fixture()
        let run = try f.run(["delete", "local-store", "--yes", "--json"])
        let snapshot = try #require(run.json["snapshot"] as? String)
        let asked = USM.run(["restore", snapshot], answers: ["n"])
        #expect(asked.status == ExitStatus.refused.rawValue, "\(asked.stderr)")
        #expect(asked.stdout.contains("Plan: undo `delete local-store`"), "\(asked.stdout)")
        #expect(!asked.stdout.contains("Done:") && !asked.stdout.contains("Next step:"), "\(asked.stdout)")
    }

    @Test("recover: --snapshot-dir is refused with its reason; --yes is accepted (recovery never asks)")
    func recoverFlags() throws {
        let f = try OperationTests.Fixture()
        let refused = try f.run(["recover", "--snapshot-dir", f.tmp.path("snaps").path])
        #expect(refused.status == ExitStatus.usage.rawValue)
        #expect(refused.stderr.contains("recover takes no snapshot"), "\(refused.stderr)")
        // Stopped after a step before its commit: recover undoes it without a question, with or without --yes.
        for yes in [true, false] {
            let stopped = USM.run(
                ["delete", "local-store", "--yes"] + f.flags, hooks: .interrupt(after: 2))
            #expect(stopped.status == PlanExecutor.Hooks.interruptedStatus, "\(stopped.stderr)")
            let r = try f.run(["recover", "--json"] + (yes ? ["--yes"] : []))
            let envelope = Self.expectEnvelope(r, "recover", "recover \(yes ? "--yes" : "")")
            #expect(envelope?.changed == true && envelope?.steps.first?.action == "recover", "\(r.stdout)")
        }
    }
}
