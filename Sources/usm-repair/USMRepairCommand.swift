import ArgumentParser
import Foundation
import USMRepairCore

/// The `usm-repair` command: UbiquityStoreManager's maintenance and repair operations, offline.
@main
struct USMRepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usm-repair",
        abstract: "Inspect and repair UbiquityStoreManager / Core Data stores and iCloud containers, offline.",
        discussion: """
            Works directly on an app's files: the local and cloud Core Data SQLite stores (each with its \
            -wal, -shm, -journal and .<Name>_SUPPORT folder), the ubiquity container's CloudLogs with its \
            StoreUUID and CorruptedUUID markers, and the preferences plist holding USMCloudEnabledKey.

            Read-only commands never change a byte of your folders; every changing command has --dry-run, \
            takes a snapshot first, and can be undone with restore. Exit codes: 0 ok, 1 problems found, \
            2 bad input, 3 refused, 4 needs the ubiquity container, 5 store in use, 6 busy, 7 interrupted, \
            8 precondition failed, 9 changed since planning, 10 migration failed, 64 usage, 66 not found, \
            74 I/O error, 75 out of space (usm-repair help exit-codes; problem codes: usm-repair help \
            problems). After a change, the report ends with the next step: how the fixed folder goes \
            back to the device (usm-repair help next-steps).

            Examples:
              usm-repair status --container ~/Downloads/Notes.xcappdata
              usm-repair check --store Customer.sqlite
              usm-repair archive --container Notes.xcappdata -o ticket-4711.tar.zst
              usm-repair bundle verify ticket-4711.tar.zst
              usm-repair restore ticket-4711.tar.zst --to ~/Cases/4711
            """,
        version: USMRepair.version,
        subcommands: [
            StatusCommand.self, CheckCommand.self, StoresCommand.self, ArchiveCommand.self, RestoreCommand.self,
            BundleCommand.self,
            DeleteCommand.self, MigrateCommand.self, RebuildCommand.self, SwitchCommand.self, CloudCommand.self,
            CorruptionCommand.self, RecoverCommand.self, MigrateStoreCommand.self, SalvageCommand.self,
            StrategiesCommand.self,
            SnapshotsCommand.self,
        ]
    )

    /// Parses, runs, and is the only place the process exits. Usage errors print the same
    /// `usm-repair: error:` line as every other failure (and the JSON envelope with `--json`).
    static func main() {
        // A file passing `ulimit -f` must be a write error (EFBIG, reported as out of space), not
        // a signal that kills the process before it can say anything or clean up; a reader that
        // went away is an EPIPE error `StandardStream` answers, not a signal either.
        signal(SIGXFSZ, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        guard let arguments = commandLine(runtime: CommandLine.arguments, cmdline: "/proc/self/cmdline") else {
            StandardStream.error.write(
                "usm-repair: error: could not read its own command line (the Swift runtime read no arguments, "
                    + "and /proc/self/cmdline could not be read); nothing was done\n")
            Foundation.exit(ExitStatus.ioError.rawValue)
        }
        let status = execute(
            arguments, out: { StandardStream.output.write($0) },
            err: { StandardStream.error.write($0) },
            context: { command, output in
                CommandContext.live(
                    output: output, command: command.commandPath,
                    arguments: [CommandLine.arguments.first ?? "usm-repair"] + arguments)
            })
        Foundation.exit(status)
    }

    /// The arguments after the program's name. The Swift runtime finds them on Linux by reading
    /// `/proc/self/maps`; when that read fails it hands over none at all, not even the program's
    /// name (an `exec` always passes one), and the command typed would run as `usm-repair` with no
    /// arguments. Then they are read from `cmdline` (NUL-separated); nil when that fails too.
    static func commandLine(runtime: [String], cmdline: String) -> [String]? {
        if !runtime.isEmpty { return Array(runtime.dropFirst()) }
        guard let data = FileManager.default.contents(atPath: cmdline), !data.isEmpty else { return nil }
        var parts = data.split(separator: 0, omittingEmptySubsequences: false)
        if parts.last?.isEmpty == true { parts.removeLast() }
        guard !parts.isEmpty else { return nil }
        return parts.dropFirst().map { String(decoding: $0, as: UTF8.self) }
    }

    /// Parses `arguments`, runs the command in the context `context` makes for it, prints what
    /// fails, and returns the exit code: the whole program but for the process around it, so
    /// that tests run every command in process.
    static func execute(
        _ arguments: [String], out: @escaping (String) -> Void, err: @escaping (String) -> Void,
        context: (any USMCommand.Type, OutputFlags) -> CommandContext
    ) -> Int32 {
        if let topic = HelpTopic.requested(arguments) {
            out(topic.text)
            return 0
        }
        if let (typed, known) = unknownSubcommand(arguments) {
            let guess = suggestion(for: typed, among: known)
            let hint = guess.map { "; did you mean '\($0)'?" } ?? " (known: \(known.joined(separator: ", ")))"
            return report(
                ValidationError("unknown command '\(typed)'\(hint)"), arguments: arguments, out: out, err: err)
        }
        let command: ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            return report(error, arguments: arguments, out: out, err: err)
        }
        do {
            if let command = command as? any USMCommand {
                try command.run(in: context(type(of: command), command.output))
            } else if !arguments.contains(where: { ["--help", "-h", "--version", "help"].contains($0) }) {
                // A group named without a subcommand (or no arguments at all) does nothing: a usage
                // error, never a silent success.
                err(helpMessage(for: type(of: command)) + "\n")
                return report(
                    ValidationError("a subcommand is needed (listed above)"), arguments: arguments, out: out, err: err)
            } else {
                var command = command
                try command.run()
            }
            return 0
        } catch let code as ExitCode {
            return code.rawValue
        } catch {
            return report(error, arguments: arguments, out: out, err: err)
        }
    }

    /// What an error that escaped a command (or its parsing) prints, and its exit code: help and
    /// version on stdout (0); usage errors as the error line, the envelope and the usage lines (64);
    /// anything else as its sentence and envelope (commands print their own failures first).
    private static func report(_ error: any Error, arguments: [String], out: (String) -> Void, err: (String) -> Void)
        -> Int32
    {
        let json = arguments.contains("--json")
        let code = exitCode(for: error)
        if code == .success {
            out(fullMessage(for: error) + "\n")
            return 0
        }
        let printErr: (String) -> Void = { err(Terminal.escape($0) + "\n") }
        if !(error is USMError) {
            ErrorEnvelope.print(
                command: commandPath(in: arguments), code: "usage", message: message(for: error), status: .usage,
                json: json,
                out: { out($0 + "\n") }, err: printErr)
            // ArgumentParser's usage lines and help hint, without its own "Error:" line.
            let rest = fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false)
                .drop { $0.hasPrefix("Error:") || $0.isEmpty }
            if !rest.isEmpty { err(rest.joined(separator: "\n") + "\n") }
            return ExitStatus.usage.rawValue
        }
        let wrapped = USMError.wrap(error)
        ErrorEnvelope.print(
            command: commandPath(in: arguments), code: wrapped.code, message: wrapped.message,
            status: wrapped.exitStatus,
            json: json, out: { out($0 + "\n") }, err: printErr)
        return wrapped.exitStatus.rawValue
    }

    /// A word where a subcommand belongs that names none (`stauts`), with the names known there;
    /// nil when the arguments name subcommands all the way (or an option comes first: the parser decides).
    static func unknownSubcommand(_ arguments: [String]) -> (String, [String])? {
        var level = configuration.subcommands
        for argument in arguments {
            guard !argument.hasPrefix("-"), !level.isEmpty, argument != "help" else { return nil }
            guard let next = level.first(where: { $0.configuration.commandName == argument }) else {
                return (argument, level.compactMap { $0.configuration.commandName })
            }
            level = next.configuration.subcommands
        }
        return nil
    }

    /// The known name closest to `typed` (edit distance, a transposition counting once) when it is
    /// close enough to be a slip: at most 2 edits, and fewer than half the word.
    static func suggestion(for typed: String, among known: [String]) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
            var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
            for i in 0...a.count { d[i][0] = i }
            for j in 0...b.count { d[0][j] = j }
            for i in 1...a.count {
                for j in 1...b.count {
                    let cost: Int = a[i - 1] == b[j - 1] ? 0 : 1
                    let removal: Int = d[i - 1][j] + 1
                    let insertion: Int = d[i][j - 1] + 1
                    let change: Int = d[i - 1][j - 1] + cost
                    var edits: Int = min(removal, min(insertion, change))
                    if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                        edits = min(edits, d[i - 2][j - 2] + 1)
                    }
                    d[i][j] = edits
                }
            }
            return d[a.count][b.count]
        }
        let word = Array(typed.lowercased())
        var best: (name: String, edits: Int) = ("", Int.max)
        for name in known.sorted() {
            let edits: Int = distance(word, Array(name))
            if edits < best.edits { best = (name, edits) }
        }
        guard best.edits <= 2, best.edits * 2 < max(word.count, 2) else { return nil }
        return best.name
    }

    /// The subcommand path the arguments name (`bundle verify`), or `usm-repair`.
    static func commandPath(in arguments: [String]) -> String {
        var path: [String] = []
        var subcommands = configuration.subcommands
        for argument in arguments where !argument.hasPrefix("-") {
            guard let next = subcommands.first(where: { $0.configuration.commandName == argument }) else { break }
            path.append(argument)
            subcommands = next.configuration.subcommands
        }
        return path.isEmpty ? "usm-repair" : path.joined(separator: " ")
    }

    /// The path from the root to `type` (`bundle verify`), or nil when it is not a subcommand.
    static func path(to type: ParsableCommand.Type) -> String? {
        func search(_ commands: [ParsableCommand.Type], _ prefix: [String]) -> String? {
            for command in commands {
                let path = prefix + [command.configuration.commandName ?? "\(command)"]
                if command == type { return path.joined(separator: " ") }
                if let found = search(command.configuration.subcommands, path) { return found }
            }
            return nil
        }
        return search(configuration.subcommands, [])
    }
}
