import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The plan of every changing command on each scenario, as `--dry-run --json` prints it, against
/// the recorded file in `Plans/<scenario>.json`: a change to any plan (a step, a path, a reason,
/// the ledger, the predicted next launch, a refusal) shows in the diff and is reviewed there.
/// Temporary paths, the state folder, plan ids and times are normalised. Re-record with
/// `USM_RECORD_PLANS=1 swift test --filter PlanGoldenTests`.
@Suite("golden plans", .timed)
struct PlanGoldenTests {
    static let folder = CLITests.packageRoot.appendingPathComponent("Tests/USMRepairTests/Plans", isDirectory: true)
    static let recording = ProcessInfo.processInfo.environment["USM_RECORD_PLANS"] == "1"

    /// The scenarios: what a support engineer receives most often, and the cases that change plans.
    static let scenarios: [(name: String, configure: @Sendable (inout FixtureContainer.Options) -> Void)] = [
        ("default", { _ in }),
        ("corrupted-old", { $0.corruptedUUID = $0.oldUUID }),
        ("corrupted-active", { $0.corruptedUUID = $0.activeUUID }),
        (
            "cloud-disabled",
            {
                $0.cloudEnabled = false
                $0.cache = .none
            }
        ),
        ("no-active-copy", { $0.activeStoreCopy = false }),
        ("ios6", { $0.ios6UUID = "9A8B7C6D-5E4F-4A3B-8C2D-1E0F9A8B7C6D" }),
    ]

    /// Every changing command, with the flags that choose among its plans.
    static func operations(_ o: FixtureContainer.Options) -> [[String]] {
        [
            ["delete", "container"], ["delete", "container", "--local-only"], ["delete", "cloud-store"],
            ["delete", "cloud-store", "--local-only"], ["delete", "local-store"],
            ["migrate", "cloud-to-local", "--replace"], ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"],
            ["migrate", "local-to-cloud", "--discard-cloud"], ["rebuild", "--from", "local", "--discard-cloud"],
            ["rebuild", "--from", "cloud", "--replace"], ["rebuild", "--from", "cloud", "--in-app"],
            ["switch", o.oldUUID ?? "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF"], ["cloud", "disable"], ["cloud", "enable"],
            ["corruption", "mark"], ["corruption", "clear"],
        ]
    }

    /// A run's output as recorded: exit code and the JSON with what differs from run to run replaced.
    static func normalised(_ r: CLI.Result, tmp: URL) throws -> Any {
        var text = r.stdout.replacingOccurrences(of: tmp.path, with: "$TMP")
            .replacingOccurrences(of: CLI.stateHome.path, with: "$STATE")
        text = text.replacingOccurrences(of: tmp.resolvingSymlinksInPath().path, with: "$TMP")
        // The plan's id names its private folders too: replaced wherever it stands.
        if let id = ((try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?.details["planID"])
            as? String,
            !id.isEmpty
        {
            text = text.replacingOccurrences(of: id, with: "<plan id>")
        }
        guard var json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            return ["exitCode": r.status, "stdout": text]
        }
        if json["seconds"] != nil { json["seconds"] = 0 }
        return json
    }

    @Test("every changing command's plan on every scenario matches its recorded JSON", arguments: scenarios.map(\.name))
    func plans(scenario: String) throws {
        let configure = try #require(Self.scenarios.first { $0.name == scenario }).configure
        let f = try OperationTests.Fixture(configure)
        let before = try f.snapshot()
        var found: [String: Any] = [:]
        // On this fixture, the dry runs `OperationTests.dryRuns` reads as text are checked as JSON.
        let checked = scenario == "corrupted-old" ? OperationTests.dryRunCommands(f.options) : []
        for operation in Self.operations(f.options) {
            let r = try f.run(operation + ["--dry-run", "--json"])
            found[operation.joined(separator: " ")] = try Self.normalised(r, tmp: f.tmp.url)
            if checked.contains(operation) { OperationTests.expectDryRunJSON(r, operation) }
        }
        #expect(checked.allSatisfy { Self.operations(f.options).contains($0) })
        #expect(try f.snapshot() == before, "a dry run changed a byte")
        let data = try JSONSerialization.data(
            withJSONObject: found, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        let file = Self.folder.appendingPathComponent("\(scenario).json")
        if Self.recording {
            try FileManager.default.createDirectory(at: Self.folder, withIntermediateDirectories: true)
            try (data + Data("\n".utf8)).write(to: file)
            return
        }
        let recorded = try #require(
            try? Data(contentsOf: file),
            "no recorded plans for \(scenario): record them with USM_RECORD_PLANS=1 and review the diff")
        let expected = try JSONSerialization.jsonObject(with: recorded) as? [String: Any] ?? [:]
        for key in Set(found.keys).union(expected.keys).sorted() {
            let mine = try found[key].map {
                try JSONSerialization.data(
                    withJSONObject: $0, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            }
            let theirs = try expected[key].map {
                try JSONSerialization.data(
                    withJSONObject: $0, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            }
            #expect(
                mine == theirs,
                "\(scenario): \(key) differs from Plans/\(scenario).json:\n\(mine.map { String(decoding: $0, as: UTF8.self) } ?? "(none)")"
            )
        }
    }
}
