import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair snapshots [list|prune]`: the snapshots every changing command takes.
struct SnapshotsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshots",
        abstract: "List the snapshots changing commands took (the undo of each), or prune old ones.",
        discussion: """
            Examples:
              usm-repair snapshots
              usm-repair snapshots --json
              usm-repair snapshots prune --older-than 30d --dry-run
              usm-repair snapshots prune --keep 10 --yes
              usm-repair snapshots prune --keep 3 --group-by container --yes
            """,
        subcommands: [SnapshotsListCommand.self, SnapshotsPruneCommand.self],
        defaultSubcommand: SnapshotsListCommand.self)
}

struct SnapshotsListCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the snapshots: the command each undoes, when, the folders it holds, its size (read-only).",
        discussion: """
            Each snapshot is undone with usm-repair restore SNAPSHOT --yes. A file in the folder that \
            is not a usm-repair snapshot is listed with why, and never pruned.

            Exit codes: 0 listed; 64 usage; 74 the folder cannot be read.

            Examples:
              usm-repair snapshots list
              usm-repair snapshots list --snapshot-dir /srv/usm-snapshots --json
            """)

    @OptionGroup(title: "Snapshots") var snapshots: SnapshotFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    struct Listing: Encodable {
        let schemaVersion = 1
        let command = "snapshots list"
        let folder: String
        let snapshots: [SnapshotCatalog.Entry]
        let bytes: Int64
        let exitCode = 0
        let exitStatus = "ok"
    }

    func run(_ context: CommandContext) throws {
        let dir = context.snapshotFolder(snapshots)
        try context.perform(
            { _ in
                let entries = try SnapshotCatalog.list(dir)
                return Listing(folder: dir.path, snapshots: entries, bytes: entries.reduce(0) { $0 + $1.bytes })
            },
            text: { listing, terminal in
                guard !output.quiet else { return }
                if listing.snapshots.isEmpty { terminal.out("No snapshots in \(listing.folder).") }
                for entry in listing.snapshots { SnapshotsPrinter.print(entry, to: terminal) }
                if !listing.snapshots.isEmpty {
                    terminal.out(
                        "\(listing.snapshots.count) file(s), \(SnapshotsPrinter.size(listing.bytes)) in \(listing.folder); undo one with usm-repair restore SNAPSHOT --yes"
                    )
                }
            })
    }
}

struct SnapshotsPruneCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract:
            "Remove old snapshots: those older than a time, or all but the newest N (or both: old and not among the newest N).",
        discussion: """
            A pruned snapshot is gone, and with it the undo of its operation: --dry-run lists what \
            would go. Only files that read as usm-repair snapshots are ever removed.

            Exit codes: 0 done (or nothing to prune); 3 refused (no --yes without a terminal); \
            64 usage; 74 a file could not be removed.

            Examples:
              usm-repair snapshots prune --older-than 30d --dry-run
              usm-repair snapshots prune --keep 10 --yes
              usm-repair snapshots prune --keep 3 --group-by container --yes
              usm-repair snapshots prune --older-than 12w --keep 3 --yes --json
            """)

    @OptionGroup(title: "Plan") var plan: ChangeFlags

    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @Option(
        name: .customLong("older-than"),
        help: ArgumentHelp(
            "Remove snapshots taken longer ago than this: a number with m, h, d or w (minutes, hours, days, weeks), e.g. 30d.",
            valueName: "age"))
    var olderThan: String?
    @Option(
        name: .customLong("keep"), help: ArgumentHelp("Keep the newest N snapshots (remove the rest).", valueName: "n"))
    var keep: Int?
    @Option(
        name: .customLong("group-by"),
        help: ArgumentHelp(
            "With --keep: keep the newest N of each container (whose data the snapshot's name says: the download, Mac app, preferences or store), not of all.",
            valueName: "container"))
    var groupBy: String?
    @OptionGroup(title: "Output") var output: OutputFlags

    func validate() throws {
        if olderThan == nil, keep == nil {
            throw ValidationError("say which snapshots go: --older-than AGE and/or --keep N")
        }
        if let olderThan, SnapshotCatalog.duration(olderThan) == nil {
            throw ValidationError("--older-than takes a number with m, h, d or w (e.g. 30d), not '\(olderThan)'")
        }
        if let keep, keep < 0 { throw ValidationError("--keep takes 0 or more") }
        if let groupBy, groupBy != "container" {
            throw ValidationError("--group-by takes 'container', not '\(groupBy)'")
        }
        if groupBy != nil, keep == nil {
            throw ValidationError("--group-by container counts --keep per container: give --keep N")
        }
    }

    func run(_ context: CommandContext) throws {
        let change = PruneChange(
            folder: context.snapshotFolder(snapshots), olderThan: olderThan.flatMap(SnapshotCatalog.duration),
            keep: keep,
            byContainer: groupBy == "container")
        try context.runChange(change, flags: plan) { report, terminal, preview in
            let result = report.details
            if preview {
                terminal.out(terminal.paint("Plan: \(report.operation)", .bold))
                for entry in result.removed { SnapshotsPrinter.print(entry, to: terminal) }
                return
            }
            guard !output.quiet else { return }
            for entry in result.removed {
                terminal.out("\(report.dryRun ? "would remove" : "removed"): \(entry.path)")
            }
            terminal.out(
                "\(report.dryRun ? "Dry run: would remove" : "Removed") \(result.removed.count) snapshot(s), \(SnapshotsPrinter.size(result.bytes)); \(result.kept) kept in \(result.folder)"
            )
        }
    }
}

/// The text form of one snapshot.
enum SnapshotsPrinter {
    static func print(_ entry: SnapshotCatalog.Entry, to terminal: Terminal) {
        guard entry.problem == nil, let command = entry.command else {
            terminal.out(entry.path)
            terminal.out("    not listed: \(entry.problem ?? "unreadable")")
            return
        }
        let folders = entry.layout.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "; ")
        terminal.out("\(entry.createdAt ?? "?")  \(command)  \(size(entry.bytes))")
        terminal.out("    \(entry.path)")
        terminal.out("    folders: \(folders)")
    }

    static func size(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(bytes) bytes" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }
}
