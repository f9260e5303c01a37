import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The advice names only commands that exist, each typed out so that it runs as given.
@Suite("advice")
struct AdviceTests {
    @Test("every command the advice gives parses and runs (read-only ones, and changing ones with --dry-run)")
    func commandsRun() throws {
        let fixtures: [(inout FixtureContainer.Options) -> Void] = [
            { $0.corruptedUUID = $0.activeUUID },
            { $0.cache = .stale("A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF") },
            { $0.markers = ["StoreUUID+": $0.activeUUID + "\n"] },
            { $0.markers = [:]; $0.cache = .none; $0.local.walOnlyBooks = 2 },
            { $0.accountMap = false; $0.extraCopies = [(peer: "mobile~0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D", account: "local")] },
        ]
        var ran = 0
        for configure in fixtures {
            let f = try OperationTests.Fixture(configure)
            let before = try f.snapshot()
            let report = try f.status()
            for line in report.advice {
                guard let range = line.range(of: "usm-repair ") else { continue }
                var command = String(line[range.upperBound...])
                for end in [" (", ";"] where command.contains(end) { command = String(command[..<command.range(of: end)!.lowerBound]) }
                let words = command.split(separator: " ").map(String.init)
                let changes = !["status", "check", "stores", "archive"].contains(words.first ?? "")
                #expect(!changes || command.contains("--dry-run") || words.first == "recover", "a changing command is advised with --dry-run: \(line)")
                if words.first == "archive" { continue }  // writes a bundle in the current folder; tested elsewhere
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "'\(CLI.binary.path)' \(command) > /dev/null 2>&1"]
                var env = ProcessInfo.processInfo.environment
                env["XDG_STATE_HOME"] = CLI.stateHome.path
                process.environment = env
                try process.run()
                process.waitUntilExit()
                #expect([0, 1, 2].contains(process.terminationStatus), "\(command) → \(process.terminationStatus)")
                ran += 1
            }
            #expect(try f.snapshot() == before, "running the advice with --dry-run changed nothing")
        }
        #expect(ran >= 6)
    }
}
