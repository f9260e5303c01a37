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
            74 I/O error, 75 out of space (README, "Exit codes").

            Examples:
              usm-repair status --container ~/Downloads/Notes.xcappdata
              usm-repair check --store Customer.sqlite
              usm-repair archive --container Notes.xcappdata -o ticket-4711.tar.zst
              usm-repair bundle verify ticket-4711.tar.zst
              usm-repair restore ticket-4711.tar.zst --to ~/Cases/4711
            """,
        version: USMRepair.version,
        subcommands: [
            StatusCommand.self, CheckCommand.self, StoresCommand.self, ArchiveCommand.self, RestoreCommand.self, BundleCommand.self,
            DeleteCommand.self, MigrateCommand.self, RebuildCommand.self, SwitchCommand.self, CloudCommand.self,
            CorruptionCommand.self, RecoverCommand.self, MigrateStoreCommand.self, StrategiesCommand.self,
        ]
    )

    /// Parses, runs, and is the only place the process exits. Usage errors print the same
    /// `usm-repair: error:` line as every other failure (and the JSON envelope with `--json`).
    static func main() {
        // A file passing `ulimit -f` must be a write error (EFBIG, reported as out of space), not
        // a signal that kills the process before it can say anything or clean up.
        signal(SIGXFSZ, SIG_IGN)
        let arguments = Array(CommandLine.arguments.dropFirst())
        let command: ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }  // --help, --version
            reportUsage(error, arguments: arguments)
        }
        do {
            var command = command
            try command.run()
            Foundation.exit(0)
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            if error is ValidationError {
                reportUsage(error, arguments: arguments)
            }
            // Commands print their own failures; anything that escapes them is still reported.
            let wrapped = USMError.wrap(error)
            ErrorEnvelope.print(
                command: commandPath(in: arguments), code: wrapped.code, message: wrapped.message, status: wrapped.exitStatus,
                json: arguments.contains("--json"), out: { print($0) },
                err: { FileHandle.standardError.write(Data((Terminal.escape($0) + "\n").utf8)) })
            Foundation.exit(wrapped.exitStatus.rawValue)
        }
    }

    private static func reportUsage(_ error: any Error, arguments: [String]) -> Never {
        let message = self.message(for: error)
        ErrorEnvelope.print(
            command: commandPath(in: arguments), code: "usage", message: message, status: .usage,
            json: arguments.contains("--json"), out: { print($0) },
            err: { FileHandle.standardError.write(Data((Terminal.escape($0) + "\n").utf8)) })
        // ArgumentParser's usage lines and help hint, without its own "Error:" line.
        let rest = fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false)
            .drop { $0.hasPrefix("Error:") || $0.isEmpty }
        if !rest.isEmpty { FileHandle.standardError.write(Data((rest.joined(separator: "\n") + "\n").utf8)) }
        Foundation.exit(ExitStatus.usage.rawValue)
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
