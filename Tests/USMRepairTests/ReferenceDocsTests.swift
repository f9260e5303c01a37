import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair

/// The reference pages of docs/ (commands, exit codes, problem codes) are generated from the binary
/// by `Scripts/reference-docs.sh` (issue 30): regenerated here into a temporary folder, they must
/// equal what is committed, and cover every command, exit code and problem code of the code.
@Suite("reference docs generated from the code", .timed)
struct ReferenceDocsTests {
    static let pages = ["commands.md", "exit-codes.md", "problem-codes.md"]
    static let regenerate = "swift build && Scripts/reference-docs.sh"

    @Test("docs/commands.md, exit-codes.md and problem-codes.md are what Scripts/reference-docs.sh writes now")
    func current() throws {
        let tmp = try TempDir()
        let script = CLITests.packageRoot.appendingPathComponent("Scripts/reference-docs.sh")
        let r = try CLI.shell(
            "'\(script.path)' '\(CLI.binary.path)' '\(tmp.url.path)'", in: CLITests.packageRoot)
        try #require(r.status == 0, "\(r.stderr)")
        for page in Self.pages {
            let fresh = try String(contentsOf: tmp.url.appendingPathComponent(page), encoding: .utf8)
            let committed = try String(
                contentsOf: CLITests.packageRoot.appendingPathComponent("docs/\(page)"), encoding: .utf8)
            #expect(fresh == committed, "docs/\(page) is out of date: run `\(Self.regenerate)` and commit it")
        }
    }

    @Test("the generated pages name every command, exit code and problem code; the man page agrees")
    func complete() throws {
        func page(_ name: String) throws -> String {
            try String(contentsOf: CLITests.packageRoot.appendingPathComponent("docs/\(name)"), encoding: .utf8)
        }
        let commands = try page("commands.md")
        var names: [String] = []
        for sub in USMRepairCommand.configuration.subcommands where sub.configuration.shouldDisplay {
            let name = "usm-repair " + (sub.configuration.commandName ?? "")
            names.append(name)
            for inner in sub.configuration.subcommands where inner.configuration.shouldDisplay {
                names.append(name + " " + (inner.configuration.commandName ?? ""))
            }
        }
        #expect(names.count > 20)
        let missing = names.filter { !commands.contains("`\($0)`\n") }
        #expect(missing.isEmpty, "not in docs/commands.md: \(missing)")
        for flag in ["--container", "--dry-run", "--yes", "--json", "--detailed-exitcode", "--redact"] {
            #expect(commands.contains("`\(flag)`"), "\(flag)")
        }
        let exits = try page("exit-codes.md")
        let man = try page("usm-repair.1")
        for status in ExitStatus.allCases {
            #expect(exits.contains("| \(status.rawValue) | `\(status.name)` |"), "exit \(status.rawValue)")
            #expect(man.contains(".It \(status.rawValue)\n(\(status.name))"), "man page: exit \(status.rawValue)")
        }
        let problems = try page("problem-codes.md")
        for code in ProblemCode.allCases {
            #expect(problems.contains("| `\(code.rawValue)` | \(code.severity.rawValue) |"), "\(code.rawValue)")
        }
    }

    /// The man page is kept in docs/ (Scripts/release.sh makes it with argument-parser's plugin and
    /// Scripts/man-page.sh); every flag's help as the binary prints it must be in it, or it is stale.
    @Test("the man page carries every flag's help as the binary has it now")
    func manPageCurrent() throws {
        let r = USM.run(["--experimental-dump-help"])
        try #require(r.status == 0, "\(r.stderr)")
        let root = try #require(
            try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        var abstracts: Set<String> = []
        func walk(_ command: [String: Any]) {
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                if let abstract = argument["abstract"] as? String, !abstract.isEmpty { abstracts.insert(abstract) }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] { walk(sub) }
        }
        walk(try #require(root["command"] as? [String: Any]))
        #expect(abstracts.count > 50)
        let man = try String(
            contentsOf: CLITests.packageRoot.appendingPathComponent("docs/usm-repair.1"), encoding: .utf8)
        // The page escapes backslashes and breaks no help text across lines.
        let stale = abstracts.filter { !man.contains($0.replacingOccurrences(of: "\\", with: "\\e")) }.sorted()
        #expect(
            stale.isEmpty,
            "docs/usm-repair.1 is out of date (regenerate it as Scripts/release.sh step 3 does): \(stale.prefix(5))")
    }
}
