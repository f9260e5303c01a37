import Foundation
import Testing
@testable import usm_repair
import TestSupport
@testable import USMRepairCore

/// Issue 31's slips a person makes at the first screen: a mistyped subcommand, a bundle ID that
/// matches nothing, a recipe name that is not found, and what `status --help` says about exit 1;
/// then the text a person reads: the ledger, advice, the DOT graph, wrapping at 80 columns, progress.
/// (Origin: issue 31, "what a person reads first"; the file was FirstScreenTests.)
@Suite("text output: slips, ledger, advice, graph, wrapping, progress", .timed)
struct TextOutputTests {
    @Test("a mistyped subcommand gets 'did you mean', at the root and in a group; 64")
    func didYouMean() {
        let r = USM.run(["stauts", "--container", "/nowhere"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("unknown command 'stauts'; did you mean 'status'?"), "\(r.stderr)")
        #expect(!r.stderr.contains("Unknown option '--container'"), "\(r.stderr)")
        let group = USM.run(["delete", "lcal-store"])
        #expect(group.status == 64 && group.stderr.contains("did you mean 'local-store'?"), "\(group.stderr)")
        let far = USM.run(["frobnicate"])
        #expect(far.status == 64 && far.stderr.contains("(known: status, check"), "\(far.stderr)")
        let json = USM.run(["stauts", "--json"])
        #expect(json.json["exitCode"] as? Int == 64, "the envelope with --json: \(json.stdout)")
        // Real subcommands, options first and help still parse as before.
        #expect(USM.run(["help", "status"]).status == 0)
        #expect(USM.run(["--version"]).status == 0)
        #expect(USMRepairCommand.suggestion(for: "chek", among: ["check", "status"]) == "check")
        #expect(USMRepairCommand.suggestion(for: "x", among: ["check", "status"]) == nil)
    }

    @Test("status --help lists exit 1")
    func statusHelpExitOne() {
        let r = USM.run(["status", "--help"])
        #expect(
            r.stdout.contains("Exit codes: 0 every store present is healthy; 1 an error-level problem"), "\(r.stdout)")
    }

    @Test("--mac-app with a bundle ID that matches nothing is not found (66)")
    func macAppNotFound() throws {
        let home = try TempDir()
        for folder in ["Library/Preferences", "Library/Containers", "Library/Application Support"] {
            try FileManager.default.createDirectory(at: home.path(folder), withIntermediateDirectories: true)
        }
        let r = USM.run(["status", "--mac-app", "com.example.nothing", "--home", home.url.path, "--json"])
        #expect(r.status == 66, "\(r.stdout)")
        #expect(r.stdout.contains("layout-not-found"))
    }

    @Test("a recipe that is not found is named first, then where it was looked for")
    func recipeNotFound() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("S.sqlite"))
        let r = USM.run(["migrate-store", tmp.path("S.sqlite").path, tmp.path("D.sqlite").path, "--recipe", "nope"])
        #expect(r.status == 66)
        #expect(r.stderr.contains("recipe nope not found: looked in "), "\(r.stderr)")
    }
}

extension TextOutputTests {
    @Test("the ledger shows both sides per entity, what leaves the view and what comes in, past tense after a run")
    func ledgerBothSides() throws {
        let f = try OperationTests.Fixture()
        let before = try f.status()
        let local = DataOperationTests.rows(before, role: .local)["Book"] ?? -1
        let cloud = DataOperationTests.rows(before, role: .cloud)["Book"] ?? -1
        #expect(local != cloud, "the fixture's stores differ in books")
        let plan = try f.run(["migrate", "cloud-to-local", "--replace", "--dry-run"])
        #expect(plan.stdout.contains("Book \(local) → \(cloud)"), "\(plan.stdout)")
        let dry = try f.run(["delete", "container", "--dry-run"])
        #expect(
            dry.stdout.contains("leave the customer's view") && dry.stdout.contains("come into it"), "\(dry.stdout)")
        let run = try f.run(["delete", "container", "--yes", "--json"])
        let headline = try #require(run.details["headline"] as? String)
        #expect(headline.hasPrefix("The app showed ") && headline.contains("left the customer's view"), "\(headline)")
        #expect(Ledger.grouped(1_234_567) == "1,234,567" && Ledger.grouped(999) == "999" && Ledger.grouped(0) == "0")
        #expect(Ledger.grouped(-1000) == "-1,000")
    }
}

extension TextOutputTests {
    @Test(
        "status leads with its verdict: the summary, the most severe problems, what to run; paths relative to the container"
    )
    func verdictFirst() throws {
        let f = try OperationTests.Fixture { $0.corruptedUUID = $0.activeUUID }
        let text = try f.run(["status"]).stdout
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("status: ") == true, "\(text)")
        let head = lines.prefix(6).joined(separator: "\n")
        #expect(head.contains("error   active-store-marked-corrupt"), "\(head)")
        #expect(head.contains("Next: ") && head.contains("usm-repair "), "\(head)")
        #expect(!head.contains("not as things are"), "the first advice runs as things are: \(head)")
        // Relative to the container in text; full with --verbose.
        let relative = f.paths.localStore.path.dropFirst(f.paths.root.path.count + 1)
        #expect(text.contains("ok  \(relative)\n"), "\(text)")
        #expect(try f.run(["status", "-v"]).stdout.contains("ok  \(f.paths.localStore.path)\n"))
        #expect(lines.last(where: { !$0.isEmpty })?.hasPrefix("status: ") == true, "the summary stays last for scripts")
    }
}

extension TextOutputTests {
    @Test("advice a script can act on: each item's command as an argument list, why, and its dry run's verdict")
    func actions() throws {
        let f = try OperationTests.Fixture { $0.corruptedUUID = $0.activeUUID }
        let json = try f.run(["status", "--json"]).json
        let actions = try #require(json["actions"] as? [[String: Any]])
        let advice = try #require(json["advice"] as? [String])
        #expect(actions.compactMap { $0["text"] as? String } == advice, "the same items as advice")
        var accepted = 0
        var refused = 0
        for action in actions {
            guard let command = action["command"] as? [String] else { continue }
            #expect(command.first == "usm-repair" && action["why"] is String, "\(action)")
            let r = USM.run(Array(command.dropFirst()))
            #expect(r.status != 64, "\(command): \(r.stderr)")
            switch action["dryRun"] as? String {
            case "accepted"?:
                accepted += 1
                #expect(r.status == 0, "an accepted dry run runs: \(command) \(r.stderr)")
            case "refused"?:
                refused += 1
                #expect(r.status != 0, "a refused one refuses: \(command)")
            default: break
            }
        }
        #expect(accepted > 0 && refused > 0, "\(actions)")
        #expect(ShellWords.split("a 'b c' \"d\\\"e\" f\\ g") == ["a", "b c", "d\"e", "f g"])
        #expect(ShellWords.split("a; rm -rf x") == nil && ShellWords.split("'open") == nil)
    }
}

extension TextOutputTests {
    @Test("status --graph prints the container as DOT: stores, copies, markers, preferences, the next launch's edge")
    func graph() throws {
        let f = try OperationTests.Fixture { $0.corruptedUUID = $0.activeUUID }
        let r = try f.run(["status", "--graph"])
        #expect(r.status == 1, "status's own exit code (an active store marked corrupt): \(r.stderr)")
        let dot = r.stdout
        let active = f.options.activeUUID
        #expect(dot.hasPrefix("digraph usm_repair {") && dot.hasSuffix("}\n"), "\(dot)")
        #expect(dot.contains("\"app\" -> \"cloud:\(active)\" [label=\"opens\""), "\(dot)")
        #expect(dot.contains("\"marker:CorruptedUUID1\" -> \"cloud:\(active)\" [label=\"marks corrupt\", color=red]"))
        #expect(dot.contains("\"local\" [label=\"local store"), "\(dot)")
        #expect(dot.contains("cached: \(active)"), "the preferences' cache")
        #expect(dot.contains("copy here"))
        // Every statement ends its line: no label breaks out of its quotes.
        for line in dot.split(separator: "\n").dropFirst().dropLast() {
            #expect(line.hasSuffix(";"), "\(line)")
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/dot") {
            let file = f.tmp.path("g.dot")
            try dot.write(to: file, atomically: true, encoding: .utf8)
            #expect(try Launcher.tool("dot", ["-Tsvg", "-o", f.tmp.path("g.svg").path, file.path]).isEmpty)
        }
        #expect(try f.run(["status", "--graph", "--json"]).status == 64)
        #expect(StatusGraph.quote("a\"b\\c\nd\u{1}") == "\"a\\\"b\\\\c\\nd\\\\x01\"")
    }
}

extension TextOutputTests {
    @Test("status on the shipped example at 80 columns: the verdict and a command within 24 lines, no line over 80")
    func firstScreenAtEightyColumns() {
        let r = USM.run(["status", "--container", ExampleContainerTests.root.path], environment: ["COLUMNS": "80"])
        #expect(r.status == 1)
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let screen = lines.prefix(24).joined(separator: "\n")
        #expect(screen.hasPrefix("status: 3 of 3 store(s) present"), "\(screen)")
        #expect(screen.contains("error   active-store-marked-corrupt"), "\(screen)")
        #expect(
            screen.contains("Next: If the mark is a false alarm:\n      usm-repair corruption clear --container"),
            "\(screen)")
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(lines.filter { $0.count > 80 })")
        // Whole lines without COLUMNS (not a terminal: for grep), and JSON never wrapped.
        let whole = USM.run(["status", "--container", ExampleContainerTests.root.path])
        #expect(whole.stdout.split(separator: "\n").contains { $0.count > 120 })
        let json = USM.run(
            ["status", "--container", ExampleContainerTests.root.path, "--json"], environment: ["COLUMNS": "80"])
        let plainJSON = USM.run(["status", "--container", ExampleContainerTests.root.path, "--json"])
        #expect(json.json["summary"] != nil && json.stdout == plainJSON.stdout)
    }

    @Test("command lines at 80 columns paste whole: never broken like prose, ` \\` where one is longer than a line")
    func commandLinesPasteWhole() throws {
        // issue 31: a wrapped command line broke copy-paste.
        let whole = USM.run(["status", "--container", ExampleContainerTests.root.path])
        let wrapped = USM.run(
            ["status", "--container", ExampleContainerTests.root.path], environment: ["COLUMNS": "80"])
        // What a shell reads: each ` \\` line break and the next line's indentation as one space.
        let joined = wrapped.stdout.replacing(try Regex(#" \\\n +"#), with: " ")
        var commands: [String] = []
        for line in whole.stdout.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: false)
            for span in TextWrap.commandSpans(words) { commands.append(words[span].joined(separator: " ")) }
        }
        #expect(commands.count >= 5, "\(commands)")
        for command in commands {
            #expect(joined.contains(command), "the command is not whole at 80 columns: \(command)\n\(wrapped.stdout)")
        }
        #expect(wrapped.stdout.split(separator: "\n").allSatisfy { $0.count <= 80 })
        // A command longer than the line: broken between arguments only (a quoted path whole), each break a ` \\`.
        #expect(
            TextWrap.wrap(
                "  - Keep them: usm-repair rebuild --from cloud --container '/My Files/Demo.xcappdata' --dry-run, or not",
                width: 40) == [
                    "  - Keep them:", "    usm-repair rebuild --from cloud \\", "        --container \\",
                    "        '/My Files/Demo.xcappdata' \\", "        --dry-run, or not",
                ])
        // A command that fits the next line moves there whole; the prose around it wraps as before.
        #expect(
            TextWrap.wrap("Next: To look: usm-repair check --store /a/b.sqlite then more", width: 44) == [
                "Next: To look:", "      usm-repair check --store /a/b.sqlite", "      then more",
            ])
        #expect(
            TextWrap.commandSpans(
                "(usm-repair migrate cloud-to-local --merge --container X, then usm-repair rebuild --from local)".split(
                    separator: " "))
                == [0..<6, 7..<11])
    }

    @Test("wrapping: continuations under the value, paths broken after a slash, colours take no column")
    func wrapping() {
        #expect(TextWrap.wrap("short", width: 10) == ["short"])
        #expect(
            TextWrap.wrap("Container:    one two three four", width: 30) == [
                "Container:    one two three", "              four",
            ])
        #expect(TextWrap.wrap("  - alpha beta gamma", width: 14) == ["  - alpha beta", "    gamma"])
        #expect(TextWrap.wrap("Next: aaaa bbbb cccc", width: 12) == ["Next: aaaa", "      bbbb", "      cccc"])
        #expect(
            TextWrap.wrap("  local     ok  /aaaa/bbbb/cccc/dddd.sqlite", width: 34)
                == ["  local     ok  /aaaa/bbbb/cccc/", "                dddd.sqlite"])
        #expect(
            TextWrap.wrap("x " + String(repeating: "y", count: 20), width: 10) == [
                "x", "  " + String(repeating: "y", count: 20),
            ])
        var captured = ""
        let terminal = Terminal(
            colors: true, progress: false, interactive: false, out: { captured += $0 }, err: { _ in }, width: 16)
        terminal.out(terminal.paint("status:", .bold) + " abc def")
        #expect(captured == "\u{1B}[1mstatus:\u{1B}[0m abc def\n", "painted text measures by what shows")
        captured = ""
        terminal.outWhole("digraph x { a -> b; c -> d; }")
        #expect(captured == "digraph x { a -> b; c -> d; }\n")
    }
}

extension TextOutputTests {
    @Test(
        "check speaks while it checks: each piece of integrity_check, then the invariants; nothing without a terminal")
    func checkProgress() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let r = USM.run(["check", "--container", paths.root.path], progress: true)
        // One integrity_check, or its pieces where the split pays on the machine (issue 33).
        let single = r.stderr.contains("UbiquityStore.sqlite: integrity_check of every page and index")
        let split =
            r.stderr.contains("UbiquityStore.sqlite: integrity_check: 1 of ") && r.stderr.contains("(every page)")
            && r.stderr.contains("(ZITEM)")
        #expect(single || split, "\(r.stderr)")
        #expect(r.stderr.contains("keys, relationships, duplicates, external data"), "\(r.stderr)")
        let quiet = USM.run(["check", "--container", paths.root.path])
        #expect(!quiet.stderr.contains("integrity_check"), "\(quiet.stderr)")
    }

    @Test("a changing command speaks: planning, the rows of a build as they go, the verification")
    func operationProgress() throws {
        let tmp = try TempDir()
        var options = BundleTests.inside
        options.cloud.books = 6000
        options.cloud.walOnlyBooks = 0
        let paths = try FixtureContainer.write(to: tmp.path("c"), options)
        let dry = USM.run(["rebuild", "--from", "local", "--container", paths.root.path, "--dry-run"], progress: true)
        #expect(dry.stderr.contains("planning rebuild --from local: reading the stores"), "\(dry.stderr)")
        #expect(dry.stderr.contains("planning: comparing every object of "), "\(dry.stderr)")
        let r = USM.run(
            ["migrate", "cloud-to-local", "--merge", "--container", paths.root.path, "--yes"], progress: true)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("verifying the new store: integrity_check"), "\(r.stderr)")
        // Rows counted as they go in, not one jump per entity: several counts inside the Book table.
        let counts = r.stderr.components(separatedBy: "building: ").dropFirst().compactMap {
            Int($0.prefix { $0.isNumber })
        }
        let total = counts.max() ?? 0
        #expect(total > 6000, "\(counts)")
        let steps = Array(Set(counts)).sorted()
        let widest = zip(steps, steps.dropFirst()).map { $1 - $0 }.max() ?? total
        #expect(widest < 3000, "the 6,000 books come in ranges, not at once: \(steps)")
    }
}
