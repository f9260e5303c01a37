import Foundation
import ManualStrategy
import Synchronization
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair

/// The tool as installed, with no checkout beside it: the prefix tree `Scripts/stage.sh` lays out
/// (what `Scripts/release.sh` ships), recipes found relative to the binary, completions that offer
/// strategies, recipes and problem codes, and help that needs no file outside what ships.
@Suite("installed tool", .timed)
struct InstalledToolTests {
    static let packageRoot = CLITests.packageRoot

    /// Runs a program through the one launcher, returning its exit status and output.
    static func run(
        _ program: String, _ arguments: [String], in directory: URL = URL(fileURLWithPath: "/"),
        environment: [String: String]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let r = try Launcher.run(URL(fileURLWithPath: program), arguments, environment: environment, in: directory)
        return (r.status, r.stdout, r.stderr)
    }

    @Test(
        "the staged prefix: binary, recipes, completions, docs; run from elsewhere (and through PATH) it lists its recipes and uses them"
    )
    func stagedPrefix() throws {
        let tmp = try TempDir()
        let prefix = tmp.path("opt/usm-repair")
        var env = ProcessInfo.processInfo.environment
        env["USM_REPAIR_RECIPES"] = nil
        env["XDG_STATE_HOME"] = tmp.path("state").path
        let stage = try Self.run(
            "/bin/bash",
            [Self.packageRoot.appendingPathComponent("Scripts/stage.sh").path, CLI.binary.path, prefix.path],
            environment: env)
        #expect(stage.status == 0, "\(stage.stderr)")
        let fm = FileManager.default
        let recipes = try fm.contentsOfDirectory(atPath: Self.packageRoot.appendingPathComponent("Recipes").path).filter
        { $0.hasSuffix(".json") }
        #expect(!recipes.isEmpty)
        for recipe in recipes {
            #expect(
                fm.fileExists(atPath: prefix.appendingPathComponent("share/usm-repair/recipes/\(recipe)").path),
                "\(recipe)")
        }
        for file in [
            "bin/usm-repair", "share/doc/usm-repair/README.md", "share/doc/usm-repair/docs/usm-behaviour.md",
            "share/doc/usm-repair/docs/commands.md",
            "share/doc/usm-repair/CHANGELOG.md", "share/bash-completion/completions/usm-repair",
            "share/zsh/site-functions/_usm-repair", "share/fish/vendor_completions.d/usm-repair.fish",
            "share/man/man1/usm-repair.1",
        ] {
            #expect(fm.fileExists(atPath: prefix.appendingPathComponent(file).path), "\(file)")
        }
        // Completions offer the strategy ids, the problem codes, the help topics; recipes by asking the binary.
        let bash = try String(
            contentsOf: prefix.appendingPathComponent("share/bash-completion/completions/usm-repair"), encoding: .utf8)
        for word in ["copy-entities", "external-data-orphan", "---completion"] {
            #expect(bash.contains(word), "bash completion lacks \(word)")
        }

        let bin = prefix.appendingPathComponent("bin/usm-repair").path
        let listing = try Self.run(bin, ["strategies", "--json"], in: tmp.url, environment: env)
        #expect(listing.status == 0, "\(listing.stderr)")
        let json = (try? JSONSerialization.jsonObject(with: Data(listing.stdout.utf8))) as? [String: Any] ?? [:]
        let listed = (json["recipes"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        #expect(listed.count == recipes.count, "\(listing.stdout)")
        #expect(
            listed.allSatisfy { $0.hasPrefix(prefix.appendingPathComponent("share/usm-repair/recipes").path) },
            "\(listed)")
        #expect(
            (json["recipeSearchPath"] as? [String] ?? []).allSatisfy { !$0.contains(Self.packageRoot.path) },
            "no checkout is searched")

        // Found through PATH (argv[0] is then only "usm-repair"): the same recipes.
        var pathEnv = env
        pathEnv["PATH"] = prefix.appendingPathComponent("bin").path + ":/usr/bin:/bin"
        let viaPath = try Self.run("/bin/sh", ["-c", "usm-repair strategies"], in: tmp.url, environment: pathEnv)
        #expect(viaPath.stdout.contains("rename-entity"), "\(viaPath.stdout)\(viaPath.stderr)")

        // A recipe used by name, and one that does not exist: the folders searched are named.
        let work = tmp.path("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let store = work.appendingPathComponent("Cloud.sqlite")
        try FixtureStore.write(to: store)
        let used = try Self.run(
            bin,
            [
                "migrate-store", store.path, work.appendingPathComponent("Local.sqlite").path, "--recipe",
                "strip-ubiquity",
                "--yes", "--snapshot-dir", tmp.path("snapshots").path,
            ], in: tmp.url, environment: env)
        #expect(used.status == 0, "\(used.stderr)")
        let missing = try Self.run(
            bin,
            [
                "migrate-store", store.path, work.appendingPathComponent("Other.sqlite").path, "--recipe",
                "no-such-recipe", "--dry-run",
            ],
            in: tmp.url, environment: env)
        #expect(missing.status == 66)
        #expect(
            missing.stderr.contains(prefix.appendingPathComponent("share/usm-repair/recipes").path), "\(missing.stderr)"
        )

        // The shell asks the binary for recipe names (as the bash script does): those it ships.
        let completion = try Self.run(
            bin, ["---completion", "migrate-store", "--", "--recipe", "3", "0"], environment: env)
        #expect(
            completion.stdout.split(separator: "\n").contains("rename-entity"),
            "\(completion.stdout)\(completion.stderr)")

        // The help topics come from the binary itself.
        let codes = try Self.run(bin, ["help", "exit-codes"], environment: env)
        #expect(codes.status == 0 && codes.stdout.contains("store-in-use"), "\(codes.stdout)")
    }

    @Test(
        "recipe completion lists the recipes found; a recipe not found names every folder looked in, absent ones marked"
    )
    func recipeSearch() throws {
        let search = RecipeCatalog.searchPath(
            environment: ["USM_REPAIR_RECIPES": "/nonexistent/recipes"], executable: CLI.binary)
        #expect(search.first?.path == "/nonexistent/recipes", "absent folders are searched and named")
        let r = USM.run(
            ["migrate-store", "/nonexistent/a.sqlite", "/tmp/b.sqlite", "--recipe", "nope", "--dry-run"],
            environment: ["USM_REPAIR_RECIPES": "/nonexistent/recipes"])
        #expect(r.stderr.contains("/nonexistent/recipes (absent)") || r.status == 66, "\(r.stderr)")
        let tmp = try TempDir()
        let store = tmp.path("A.sqlite")
        try FixtureStore.write(to: store)
        let notFound = USM.run(
            ["migrate-store", store.path, tmp.path("B.sqlite").path, "--recipe", "nope", "--dry-run"],
            environment: ["USM_REPAIR_RECIPES": "/nonexistent/recipes"])
        #expect(notFound.status == 66)
        #expect(notFound.stderr.contains("looked in /nonexistent/recipes (absent), "), "\(notFound.stderr)")
        #expect(
            CommandContext.recipeNames().contains("rename-entity"),
            "a development build completes the checkout's recipes")
    }

    @Test(
        "help topics: exit codes, problem codes and the way back are printed by the binary; help still shows a command's help"
    )
    func helpTopics() throws {
        let codes = USM.run(["help", "exit-codes"])
        #expect(codes.status == 0)
        for status in ExitStatus.allCases { #expect(codes.stdout.contains(status.name), "\(status)") }
        let problems = USM.run(["help", "problems"])
        for code in ProblemCode.allCases { #expect(problems.stdout.contains(code.rawValue), "\(code)") }
        let next = USM.run(["help", "next-steps"])
        #expect(next.stdout.contains("Replace Container") && next.stdout.contains("--mac-app"))
        let command = USM.run(["help", "delete", "container"])
        #expect(
            command.status == 0 && command.stdout.contains("USAGE: usm-repair delete container"), "\(command.stdout)")
        #expect(USM.run(["help", "exit-codes", "--json"]).status == 64, "a topic takes no flags")
    }

    @Test("no text a user sees points at a file outside the repository")
    func noOutsideReferences() throws {
        let readme = try Documentation.text()
        #expect(!readme.contains("../shared"), "the README names a file outside the repository")
        #expect(!readme.contains("/work/"))
        for command in HelpExampleTests.commands() {
            let help = USMRepairCommand.helpMessage(for: command, columns: 200)
            #expect(!help.contains("../"), "\(command)")
            #expect(!help.contains("usm-behaviour.md") || help.contains("docs/usm-behaviour.md"), "\(command)")
        }
        let doc = Self.packageRoot.appendingPathComponent("docs/usm-behaviour.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        for row in 1...13 { #expect(text.contains("| E\(row) |"), "E\(row) in docs/usm-behaviour.md") }
        #expect(text.contains("4.7") && text.contains("7.1"), "the steps the messages cite")
    }
}

extension InstalledToolTests {
    @Test("the man page: no groff warning, a real EXIT STATUS with every code, SEE ALSO, every command named")
    func manPage() throws {
        let page = Self.packageRoot.appendingPathComponent("docs/usm-repair.1")
        let groff = try Launcher.run(
            URL(fileURLWithPath: "/usr/bin/env"), ["groff", "-mandoc", "-Tutf8", "-ww", "-z", page.path])
        #expect(groff.status == 0 && groff.stderr.isEmpty, "groff warns: \(groff.stderr.prefix(2000))")
        let text = try String(contentsOf: page, encoding: .utf8)
        #expect(!text.contains(".Ex -std"), "the plugin's generic exit status is replaced")
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().allSatisfy { !$0.isEmpty })
        let exit = try #require(text.range(of: ".Sh \"EXIT STATUS\""))
        let seeAlso = try #require(text.range(of: ".Sh \"SEE ALSO\""))
        let section = text[exit.upperBound..<seeAlso.lowerBound]
        for status in ExitStatus.allCases {
            #expect(
                section.contains(".It \(status.rawValue)\n(\(status.name))"), "EXIT STATUS lacks \(status.rawValue)")
        }
        #expect(text[seeAlso.upperBound...].contains(".Xr sqlite3 1"))
        var names: [String] = []
        for type in USMRepairCommand.configuration.subcommands {
            if let name = type.configuration.commandName { names.append(name) }
        }
        #expect(names.count > 10)
        let missing = names.filter { !text.contains("\n.It Em \($0)\n") }
        #expect(missing.isEmpty, "the page does not name \(missing)")
    }
}
