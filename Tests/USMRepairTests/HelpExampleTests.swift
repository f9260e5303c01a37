import ArgumentParser
import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair

/// Every example in every command's help, as an 80-column terminal shows it, can be pasted: each
/// is one command (a long one continues with `\`), it parses, and it runs: read-only commands as
/// they are, changing commands as a dry run, in a folder holding the files the examples name.
@Suite("help examples", .timed)
struct HelpExampleTests {
    /// Every command type, depth first.
    static func commands(_ root: ParsableCommand.Type = USMRepairCommand.self) -> [ParsableCommand.Type] {
        [root] + root.configuration.subcommands.flatMap { commands($0) }
    }

    /// The examples of a help text: the indented lines after `Example:`/`Examples:`, with `\`
    /// continuations joined, each as printed (a wrapped example shows as a line of its own).
    static func examples(in help: String) -> [String] {
        var result: [String] = []
        var previous = ""
        var inExamples = false
        var pending: String?
        for line in help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasSuffix("Examples:") || line.hasSuffix("Example:") {
                inExamples = true
                continue
            }
            guard inExamples else { continue }
            defer { previous = line }
            if !line.isEmpty, !line.hasPrefix(" "), previous.hasPrefix("  usm-repair") || previous.hasSuffix("\\") {
                // The terminal width cut an example: what follows is not a command of its own.
                result.append(line)
                continue
            }
            if line.trimmingCharacters(in: .whitespaces).isEmpty || !line.hasPrefix(" ") {
                inExamples = false
                if let text = pending { result.append(text) }
                pending = nil
                continue
            }
            let text = line.trimmingCharacters(in: .whitespaces)
            let joined = pending.map { $0 + " " + text } ?? text
            if joined.hasSuffix("\\") {
                pending = String(joined.dropLast()).trimmingCharacters(in: .whitespaces)
            } else {
                result.append(joined)
                pending = nil
            }
        }
        if let text = pending { result.append(text) }
        return result
    }

    /// Splits a command line as a POSIX shell does for these examples: quotes, backslashes, `~/`.
    static func words(_ line: String, home: String) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for char in line {
            if escaped {
                current.append(char)
                escaped = false
            } else if let q = quote {
                if char == q { quote = nil } else { current.append(char) }
            } else if char == "\\" {
                escaped = true
                inWord = true
            } else if char == "\"" || char == "'" {
                quote = char
                inWord = true
            } else if char == " " {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(char)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words.map { $0.hasPrefix("~/") ? home + String($0.dropFirst(1)) : $0 }
    }

    @Test("every example fits an 80-column help as one command and parses")
    func everyExampleParses() throws {
        var count = 0
        for command in Self.commands() {
            let help = USMRepairCommand.helpMessage(for: command, columns: 80)
            for example in Self.examples(in: help) where !example.hasPrefix("cd ") {
                count += 1
                #expect(example.hasPrefix("usm-repair "), "\(command): a wrapped or broken example line: \(example)")
                let args = Array(Self.words(example, home: "/home/user").dropFirst())
                do {
                    _ = try USMRepairCommand.parseAsRoot(args)
                } catch {
                    Issue.record("\(example): \(USMRepairCommand.message(for: error))")
                }
            }
        }
        #expect(count > 60, "examples found: \(count)")
    }

    @Test(
        "every example runs: read-only ones as they are, changing ones as a dry run (no usage error, nothing named is missing)"
    )
    func everyExampleRuns() throws {
        let world = try World()
        var ran = 0
        // Whether a command changes files, by its help (an option line, not an example that
        // mentions the flag): read once per command, not once per example.
        var changingCommands: [String: Bool] = [:]
        for command in Self.commands() {
            for example in Self.examples(in: USMRepairCommand.helpMessage(for: command, columns: 80))
            where !example.hasPrefix("cd ") {
                var args = Array(Self.words(example, home: world.home.path).dropFirst()).map(world.absolute)
                let path = USMRepairCommand.commandPath(in: args)
                guard let type = Self.commands().first(where: { USMRepairCommand.path(to: $0) == path }) else {
                    continue
                }
                let changing =
                    changingCommands[path]
                    ?? USMRepairCommand.helpMessage(for: type, columns: 200).contains("\n  --dry-run")
                changingCommands[path] = changing
                let readOnly = [
                    "status", "check", "stores", "strategies", "bundle verify", "snapshots list", "snapshots", "help",
                ].contains(path)
                guard changing || readOnly else { continue }
                if changing, !args.contains("--dry-run") { args.append("--dry-run") }
                // The examples' home is the world's.
                if args.contains("--mac-app"), !args.contains("--home") { args += ["--home", world.home.path] }
                if changing, path != "snapshots prune", path != "recover", !args.contains("--snapshot-dir"),
                    !args.contains("--to")
                {
                    args += ["--snapshot-dir", world.snapshots.url.path]
                }
                let r = USM.run(args)
                ran += 1
                #expect(![64, 66].contains(r.status), "\(example) → \(r.status): \(r.stderr)")
                #expect(!r.stderr.contains("Fatal error"), "\(example)")
            }
        }
        #expect(ran > 40, "examples run: \(ran)")
    }

    /// The files the examples name, in a temporary folder.
    final class World {
        let tmp: TempDir
        /// Outside the world: no snapshot folder may lie in a folder a command changes.
        let snapshots: TempDir
        var root: URL { tmp.url }
        var home: URL { tmp.path("home") }

        init() throws {
            tmp = try TempDir()
            snapshots = try TempDir()
            let fm = FileManager.default
            let notes = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"))
            try FixtureContainer.write(to: tmp.path("x/Customer.xcappdata"))
            try fm.moveItem(at: tmp.path("x/Customer.xcappdata"), to: tmp.path("Customer.xcappdata"))
            for copy in ["C", "iCloud", "Mobile Documents/T~com~x"] {
                try TreeCopy.copy(notes.cloudDir, to: tmp.path(copy))
            }
            try TreeCopy.copy(notes.appDir, to: tmp.path("Application Support"))
            try fm.createDirectory(at: tmp.path("home/Downloads/Mobile Documents"), withIntermediateDirectories: true)
            try TreeCopy.copy(notes.root, to: tmp.path("home/Downloads/Notes.xcappdata"))
            try TreeCopy.copy(
                notes.cloudDir, to: tmp.path("home/Downloads/Mobile Documents/ABCDE12345~com~example~notes"))
            for name in ["Customer.sqlite", "A.sqlite", "B.sqlite", "Cloud.sqlite", "Damaged.sqlite", "Sibling.sqlite"]
            {
                try FixtureStore.write(to: tmp.path(name))
            }
            _ = try ModelFileTests.writeModel(in: tmp.url)
            try fm.createDirectory(at: tmp.path("home/Cases/4711/jo/Library"), withIntermediateDirectories: true)
            // The store `recover --store ~/Cases/4711/Local.sqlite` names (recover is a changing command).
            try FixtureStore.write(to: tmp.path("home/Cases/4711/Local.sqlite"))
            // The Mac app the --mac-app examples name: its preferences in each home they search
            // (a bundle ID that matches nothing is not found, 66).
            for library in ["home/Library", "home/Cases/4711/jo/Library"] {
                try fm.createDirectory(at: tmp.path(library + "/Preferences"), withIntermediateDirectories: true)
                try fm.copyItem(at: notes.prefs, to: tmp.path(library + "/Preferences/com.example.notes.plist"))
            }
            let archive = USM.run([
                "archive", "--container", notes.root.path, "-o", tmp.path("ticket-4711.tar.zst").path,
            ])
            guard archive.status == 0 else { throw CocoaError(.fileWriteUnknown) }
            // The snapshot the restore examples name: a real one, of a copy, under that name.
            let copy = tmp.path("copy/Notes.xcappdata")
            try FixtureContainer.write(to: copy)
            let snapshots = tmp.path("home/.local/state/usm-repair/snapshots")
            let run = USM.run([
                "delete", "container", "--container", copy.path, "--yes", "--json", "--snapshot-dir", snapshots.path,
            ])
            guard let taken = run.json["snapshot"] as? String else { throw CocoaError(.fileWriteUnknown) }
            // The restore examples `cd` into the snapshot folder; here it is the world's folder.
            try fm.moveItem(
                atPath: taken,
                toPath: tmp.path("delete-container-Notes.xcappdata-20261121T101500Z-1a2b3c4d.tar.zst").path)
        }

        /// A word naming a file of the world, made absolute; any other word as it is.
        func absolute(_ word: String) -> String {
            guard !word.hasPrefix("-"), !word.hasPrefix("/"), !word.isEmpty else { return word }
            let candidate = root.appendingPathComponent(word)
            let file = [".sqlite", ".tar.zst", ".zip", ".tar.gz", ".xcappdata"].contains { word.hasSuffix($0) }
            return FileManager.default.fileExists(atPath: candidate.path) || file ? candidate.path : word
        }
    }
}
