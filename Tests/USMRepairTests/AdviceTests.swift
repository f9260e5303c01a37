import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The advice names only commands that exist, each typed out so that it runs as given; a changing
/// command it proposes is accepted by its own dry run, changes something, and never leaves the app
/// showing fewer objects than today.
@Suite("advice", .timed)
struct AdviceTests {
    typealias Fixture = OperationTests.Fixture

    /// The commands an advice line proposes (`usm-repair <words>`), as shell words, up to the end of
    /// the command (`--dry-run`, or punctuation outside quotes). Lines that explain a refusal
    /// ("… refuses: …") are skipped: the commands in their reasons are the refusal's own advice.
    static func commands(in line: String) -> [[String]] {
        guard !line.contains("` refuses:") else { return [] }
        var result: [[String]] = []
        var rest = Substring(line)
        while let range = rest.range(of: "usm-repair ") {
            rest = rest[range.upperBound...]
            var words: [String] = []
            var word = ""
            var quoted = false
            var index = rest.startIndex
            scan: while index < rest.endIndex {
                let c = rest[index]
                if quoted {
                    if c == "'" { quoted = false } else { word.append(c) }
                } else if c == "\\", rest.index(after: index) < rest.endIndex {
                    index = rest.index(after: index)
                    word.append(rest[index])
                } else if c == "'" {
                    quoted = true
                } else if c == " " {
                    if !word.isEmpty {
                        words.append(word)
                        word = ""
                    }
                    if words.last == "--dry-run" { break scan }
                } else if [";", ",", ")", "("].contains(c) {
                    break scan
                } else {
                    word.append(c)
                }
                index = rest.index(after: index)
            }
            if !word.isEmpty { words.append(word) }
            rest = rest[index...]
            if !words.isEmpty { result.append(words) }
        }
        return result
    }

    @Test(
        "every command the advice gives runs as typed; a changing one is accepted by its dry run, changes something and loses nothing the app shows",
        arguments: FixtureContainer.scenarios)
    func commandsRun(_ scenario: FixtureContainer.Scenario) throws {
        let f = try Fixture(scenario.configure)
        let before = try f.snapshot()
        let status = try f.run(["status", "--json"])
        let advice = try #require(status.json["advice"] as? [String], "\(scenario): \(status.stderr)")
        for line in advice {
            for words in Self.commands(in: line) {
                let readOnly = ["status", "check", "stores", "archive", "recover"].contains(words[0])
                #expect(readOnly || words.last == "--dry-run", "a changing command is advised with --dry-run: \(line)")
                if words[0] == "archive" { continue }  // writes a bundle in the current folder; tested elsewhere
                let r = USM.run(words + ["--json"])
                if readOnly {
                    #expect([0, 1, 2].contains(r.status), "\(scenario): \(words) → \(r.status) \(r.stderr)")
                    continue
                }
                #expect(r.status == 0, "\(scenario): advised `\(words.joined(separator: " "))` is refused: \(r.stderr)")
                #expect(
                    r.json["noOp"] as? Bool == false,
                    "\(scenario): advised `\(words.joined(separator: " "))` changes nothing")
                let ledger = r.details["ledger"] as? [String: Any]
                let shownBefore = (ledger?["before"] as? [String: Any])?["objects"] as? Int
                let shownAfter = (ledger?["after"] as? [String: Any])?["objects"] as? Int
                if let shownBefore, shownBefore > 0 {
                    #expect(
                        (shownAfter ?? -1) >= shownBefore,
                        "\(scenario): `\(words.joined(separator: " "))` leaves the app showing \(shownAfter.map(String.init) ?? "an unknown number of") objects instead of \(shownBefore)"
                    )
                }
            }
        }
        #expect(try f.snapshot() == before, "running the advice with --dry-run changed nothing")
    }

    @Test("a refused proposal is replaced by its reason, never typed as a command to run")
    func refusedProposals() throws {
        let f = try Fixture { $0.corruptedUUID = $0.activeUUID }
        let advice = try #require(try f.run(["status", "--json"]).json["advice"] as? [String])
        let refused = advice.filter { $0.contains("not as things are") }
        #expect(
            refused.contains { $0.contains("`rebuild --from local` refuses") && $0.contains("--discard-cloud") },
            "\(advice)")
        #expect(
            !advice.contains { $0.contains("usm-repair rebuild --from local") && $0.hasSuffix("--dry-run") },
            "\(advice)")
        // The unverified advice (a bundle's report, which cannot plan) still proposes it.
        let unverified = try f.status().advice
        #expect(unverified.contains { $0.contains("rebuild --from local") && $0.contains("--dry-run") })
    }

    @Test("the shell words of advice: quoted paths come back whole")
    func quoting() {
        let line = "Do it: usm-repair switch ABC --container '/tmp/a b/it'\\''s.xcappdata' --dry-run; then look"
        #expect(Self.commands(in: line) == [["switch", "ABC", "--container", "/tmp/a b/it's.xcappdata", "--dry-run"]])
    }
}
