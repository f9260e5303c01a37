import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair restore ARCHIVE --to DIR`: put a bundle or snapshot back, byte for byte, into a
/// folder; `usm-repair restore SNAPSHOT`: put a snapshot back where it was taken (the undo of an operation).
struct RestoreCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put a snapshot back where it was taken (undo an operation), or a bundle's folders under --to.",
        discussion: """
            Everything is verified against the manifest first; hostile entries (absolute paths, '..', \
            links leaving the bundle, hard links, devices, duplicates, entries larger than declared) \
            refuse the whole archive.

            Without --to, the archive must be a snapshot (every changing command prints one) and goes \
            back in place: every item it holds is put back at the path it was read from (bytes, modes, \
            times), and the paths that did not exist then (those the operation created) are removed. \
            This runs as a plan like the operations: the current state is snapshotted first (so the \
            undo can be undone), the items are extracted beside their places and checked, and every \
            step is journaled, so a kill leaves a state that `usm-repair recover` (or the next changing \
            command) finishes or undoes, across all folders. --dry-run prints the plan.

            With --to, the bundle's folders are extracted into a private folder inside --to and each \
            root is moved into place with one rename. Replacing an existing folder needs --yes (or a \
            yes at the prompt) and is snapshotted first (--snapshot-dir; default \
            $XDG_STATE_HOME/usm-repair/snapshots), outside the folders being replaced, and the \
            snapshot is read back and verified before anything is replaced.

            Exit codes: 0 restored (or, with --dry-run, would be); 1 the archive does not match its \
            manifest; 2 not a bundle, truncated or corrupt; 3 refused (hostile entry, or changes \
            without --yes); 5 a store to replace is open in another process; 6 another usm-repair run \
            is changing these folders; 7 an interrupted operation is pending (with --dry-run); 8 a \
            folder the snapshot was taken from is gone; 9 the files changed since planning; 64 usage \
            (a bundle without --to, a --snapshot-dir inside a folder being replaced); 66 archive not \
            found; 74 I/O error; 75 out of space.

            Examples:
              usm-repair snapshots
              cd ~/.local/state/usm-repair/snapshots
              usm-repair restore --dry-run \\
                delete-container-Notes.xcappdata-20261121T101500Z-1a2b3c4d.tar.zst
              usm-repair restore --yes \\
                delete-container-Notes.xcappdata-20261121T101500Z-1a2b3c4d.tar.zst
              usm-repair restore ticket-4711.tar.zst --to ~/Cases/4711
              usm-repair restore ticket-4711.tar.zst --to ~/Cases/4711 --yes
            """
    )

    @Argument(help: ArgumentHelp("The snapshot or bundle to restore.", valueName: "archive"), completion: .file())
    var archive: String

    @Option(
        name: .customLong("to"),
        help: ArgumentHelp(
            "The folder to restore a bundle's folders into (without it, a snapshot goes back where it was taken).",
            valueName: "dir"),
        completion: .directory)
    var to: String?

    @OptionGroup(title: "Plan") var plan: ChangeFlags

    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags

    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        let executor = context.executor(snapshotDirectory: snapshots.directory(context.paths))
        guard let to else {
            // The snapshot back in place, as a journaled plan.
            let change = SnapshotRestoreChange(archive: context.paths.url(archive), executor: executor)
            return try context.runChange(change, flags: plan) { report, terminal, preview in
                guard !output.quiet || report.dryRun || preview else { return }
                UndoPrinter(terminal: terminal, verbose: output.verbose).print(report, preview: preview)
            }
        }
        var change = BundleRestoreChange(
            options: RestoreOptions(
                archive: context.paths.url(archive, tilde: false),
                target: context.paths.url(to, directory: true, tilde: false)),
            executor: executor)
        // --verbose: every entry as it is written into the private folder.
        if output.verbose && !output.json {
            let terminal = context.terminal
            change.onEntry = { terminal.out("extracted: \($0)") }
        }
        try context.runChange(change, flags: plan) { report, terminal, preview in
            guard !output.quiet || report.dryRun || preview else { return }
            let result = report.details
            let dry = report.dryRun || preview
            if preview { terminal.out(terminal.paint("Plan: \(report.operation)", .bold)) }
            for root in result.roots {
                if dry {
                    terminal.out("Would \(root.replaced ? "replace" : "restore") \(root.path)")
                } else {
                    terminal.out("\(root.replaced ? "Replaced" : "Restored") \(root.path)")
                }
            }
            if preview { PlanPrinter.printSteps(report.steps, reasons: true, to: terminal) }
            if let snapshot = report.snapshot {
                terminal.out("What was replaced is in \(snapshot) (usm-repair restore it to undo)")
            }
            for note in report.notes { terminal.out("Note: \(note)") }
            if preview { return }
            if report.dryRun {
                terminal.out("\(result.entries) entries verified against the manifest. Dry run: nothing was changed.")
            } else {
                terminal.out("\(result.entries) entries, \(result.bytes) bytes, verified against the manifest")
            }
            if !result.status.isEmpty {
                terminal.out(terminal.paint("Next:", .bold) + " \(report.nextStep)")
            }
        }
    }
}
