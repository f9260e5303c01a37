import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 30's user-visible drifts between the changing commands: the consent shows a plan (not a
/// result), `--detailed-exitcode` is one flag with one meaning and the JSON says the code the
/// process exits with, and an explicit `--prefs` wins over the search.
@Suite("one door: consent, exit codes, explicit paths", .timed)
struct ChangeDoorTests {
    @Test("the consent prompt shows the plan, headed as a plan with every step's reason, then the question")
    func consentShowsPlan() throws {
        let f = try OperationTests.Fixture()
        let before = try f.snapshot()
        let r = USM.run(["delete", "local-store"] + f.flags, answers: ["n"])
        #expect(r.status == ExitStatus.refused.rawValue, "\(r.stderr)")
        #expect(r.stdout.contains("Plan: delete local-store"), "\(r.stdout)")
        #expect(!r.stdout.contains("Done:"), "nothing was done before the answer: \(r.stdout)")
        #expect(!r.stdout.contains("Next step:") && !r.stdout.contains("Snapshot:"), "\(r.stdout)")
        // Every step's reason, as the dry run shows them.
        let dry = try f.run(["delete", "local-store", "--dry-run", "--json"])
        let reasons = ((dry.json["steps"] as? [[String: Any]]) ?? []).compactMap { $0["reason"] as? String }
        #expect(!reasons.isEmpty)
        for reason in reasons { #expect(r.stdout.contains(reason), "reason missing: \(reason)") }
        #expect(try f.snapshot() == before, "a no changes nothing")
    }

    @Test("--detailed-exitcode: the JSON's exitCode and exitStatus are the code the process exits with")
    func detailedExitCodeInJSON() throws {
        let f = try OperationTests.Fixture()
        for args in [["delete", "local-store", "--dry-run"], ["delete", "local-store", "--yes"]] {
            let r = try f.run(args + ["--json", "--detailed-exitcode"])
            #expect(r.status == 20, "\(args): \(r.stderr)")
            #expect(r.json["exitCode"] as? Int == 20 && r.json["exitStatus"] as? String == "applied", "\(args)")
        }
        // Nothing to do: 0 in both.
        let again = try f.run(["delete", "local-store", "--yes", "--json", "--detailed-exitcode"])
        #expect(again.status == 0 && again.json["exitCode"] as? Int == 0, "\(again.stdout)")
        // Without the flag, 0 in both.
        let g = try OperationTests.Fixture()
        let plain = try g.run(["delete", "local-store", "--yes", "--json"])
        #expect(plain.status == 0 && plain.json["exitCode"] as? Int == 0)
    }

    @Test("--detailed-exitcode on migrate-store, salvage and restore (was a usage error, 64)")
    func detailedExitCodeEverywhere() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        let migrate = USM.run([
            "migrate-store", tmp.path("S.sqlite").path, tmp.path("D.sqlite").path, "--json", "--detailed-exitcode",
        ])
        #expect(migrate.status == 20, "\(migrate.stderr)")
        #expect(migrate.json["exitCode"] as? Int == 20 && migrate.json["exitStatus"] as? String == "applied")
        let salvage = USM.run([
            "salvage", tmp.path("S.sqlite").path, tmp.path("V.sqlite").path, "--json", "--detailed-exitcode",
        ])
        #expect(salvage.status == 20, "\(salvage.stderr)")
        #expect(salvage.json["exitCode"] as? Int == 20)
        let f = try OperationTests.Fixture()
        let run = try f.run(["delete", "local-store", "--yes", "--json"])
        let snapshot = try #require(run.json["snapshot"] as? String)
        let restore = USM.run(["restore", snapshot, "--yes", "--json", "--detailed-exitcode"])
        #expect(restore.status == 20, "\(restore.stderr)")
        #expect(restore.json["exitCode"] as? Int == 20 && restore.json["exitStatus"] as? String == "applied")
    }

    @Test("an explicit --prefs outside the download wins over the search; a missing one is not found (66)")
    func explicitPreferences() throws {
        let f = try OperationTests.Fixture()
        let outside = f.tmp.path("outside.plist")
        try FileManager.default.copyItem(at: f.paths.prefs, to: outside)
        let status = try f.run(["status", "--prefs", outside.path, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let r = try f.run(["cloud", "disable", "--prefs", outside.path, "--yes", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let data = try Data(contentsOf: outside)
        let dict = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        #expect(dict?["USMCloudEnabledKey"] as? Bool == false, "the file named was the one changed")
        #expect(try f.preferences()["USMCloudEnabledKey"] as? Bool == true, "not the download's own")

        let missing = f.tmp.path("missing.plist").path
        #expect(try f.run(["status", "--prefs", missing]).status == 66)
        #expect(try f.run(["cloud", "disable", "--prefs", missing, "--dry-run"]).status == 66)
        // A link leading out of the named file's own folder is still refused.
        let elsewhere = try TempDir()
        try FileManager.default.copyItem(at: f.paths.prefs, to: elsewhere.path("p.plist"))
        let link = f.tmp.path("link.plist")
        try FileManager.default.createSymbolicLink(
            atPath: link.path, withDestinationPath: elsewhere.path("p.plist").path)
        #expect(try f.run(["status", "--prefs", link.path]).status == 3)
    }
}

extension ChangeDoorTests {
    @Test("the undo's next step names the download to send back, not the deepest folder of the snapshot")
    func undoNextStep() throws {
        let f = try OperationTests.Fixture()
        let run = try f.run(["cloud", "disable", "--yes", "--json"])
        let snapshot = try #require(run.json["snapshot"] as? String)
        let undo = USM.run(["restore", snapshot, "--dry-run", "--json"])
        #expect(undo.status == 0, "\(undo.stderr)")
        let next = try #require(undo.json["nextStep"] as? String)
        #expect(next.contains("Send \(f.paths.root.path) back"), "\(next)")
        #expect(!next.contains("Library/Preferences back"), "\(next)")
    }
}

extension ChangeDoorTests {
    @Test("a download without preferences: iCloud off at the next launch (E1); a plan that needs iCloud on refuses (8)")
    func downloadWithoutPreferences() throws {
        let f = try OperationTests.Fixture()
        try FileManager.default.removeItem(at: f.paths.prefs)
        let next = try #require(try f.status().nextLaunch)
        #expect(next.state == "E1" && next.outcome == .openLocalStore, "\(next.summary)")
        #expect(next.assumptions.contains { $0.contains("missing USMCloudEnabledKey as NO") })
        let before = try f.snapshot()
        for command in [
            ["rebuild", "--from", "local", "--discard-cloud", "--dry-run"],
            ["rebuild", "--from", "local", "--discard-cloud", "--yes"], ["cloud", "enable", "--yes"],
        ] {
            let r = try f.run(command)
            #expect(r.status == 8, "\(command): \(r.stderr)")
        }
        #expect(try f.snapshot() == before, "nothing changed")
        // Turning iCloud off needs nothing: it is off already.
        #expect(try f.run(["cloud", "disable", "--yes"]).status != 64)
    }
}
