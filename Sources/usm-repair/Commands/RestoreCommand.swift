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

    @OptionGroup(title: "Output") var output: OutputFlags

    private func snapshotDirectory(_ context: CommandContext) -> URL? { plan.snapshotDirectory(context.paths) }

    func run(_ context: CommandContext) throws {
        guard let to else { return try undo(context) }
        let snapshotDirectory = snapshotDirectory(context)
        let options = RestoreOptions(
            archive: context.paths.url(archive, tilde: false),
            target: context.paths.url(to, directory: true, tilde: false), yes: plan.yes,
            snapshotDirectory: snapshotDirectory, dryRun: plan.dryRun)
        let verbose = output.verbose && !output.json
        try context.perform(
            { terminal in
                // --verbose: every entry as it is written into the private folder.
                var result = try BundleRestorer(options: options).run(
                    executor: context.executor(snapshotDirectory: snapshotDirectory), confirm: context.confirm,
                    onEntry: verbose ? { terminal.out("extracted: \($0)") } : nil,
                    progress: { terminal.progressLine($0) })
                result.exit(plan.status(changed: !result.roots.isEmpty))
                return result
            },
            text: { result, terminal in
                guard !output.quiet || result.dryRun else { return }
                for root in result.roots {
                    if result.dryRun {
                        terminal.out("Would \(root.replaced ? "replace" : "restore") \(root.path)")
                    } else {
                        terminal.out("\(root.replaced ? "Replaced" : "Restored") \(root.path)")
                    }
                }
                if let snapshot = result.snapshot {
                    terminal.out("What was replaced is in \(snapshot) (usm-repair restore it to undo)")
                }
                for note in result.notes { terminal.out("Note: \(note)") }
                if result.dryRun {
                    terminal.out(
                        "\(result.entries) entries verified against the manifest. Dry run: nothing was changed.")
                } else {
                    terminal.out("\(result.entries) entries, \(result.bytes) bytes, verified against the manifest")
                }
                if !result.status.isEmpty {
                    let command = result.status.map(ShellWords.quote).joined(separator: " ")
                    terminal.out(
                        terminal.paint("Next:", .bold)
                            + " \(result.dryRun ? "after it, " : "")see what was restored: \(command)")
                }
            }, status: { ExitStatus(rawValue: $0.exitCode) ?? .ok })
    }

    /// The snapshot back in place, as a journaled plan.
    private func undo(_ context: CommandContext) throws {
        let url = context.paths.url(archive)
        try context.perform(
            { terminal -> SnapshotUndo.Report in
                let executor = context.executor(snapshotDirectory: snapshotDirectory(context))
                let prepared = try SnapshotUndo.prepare(snapshot: url, dryRun: plan.dryRun, executor: executor)
                let preview = SnapshotUndo.report(
                    prepared.plan, paths: prepared.paths, archive: url, result: nil, recovered: prepared.recovered,
                    dryRun: true)
                let applied = plan.detailedExitCode && !prepared.plan.isNoOp
                if plan.dryRun || prepared.plan.isNoOp {
                    var preview = preview
                    if applied { preview.exit(.applied) }
                    return preview
                }
                try context.consent(
                    yes: plan.yes, terminal: terminal,
                    unattended:
                        "restore puts the snapshot back in place: run it with --yes (see the plan with --dry-run)",
                    question: "Put the snapshot back? What is there now is snapshotted first."
                ) {
                    UndoPrinter(terminal: terminal, verbose: output.verbose).print(preview)
                }
                let result = try executor.run(prepared.plan, progress: { terminal.progressLine($0) })
                var report = SnapshotUndo.report(
                    prepared.plan, paths: prepared.paths, archive: url, result: result, recovered: prepared.recovered,
                    dryRun: false)
                if applied { report.exit(.applied) }
                return report
            },
            text: { report, terminal in
                guard !output.quiet || report.dryRun else { return }
                UndoPrinter(terminal: terminal, verbose: output.verbose).print(report)
            }, status: { ExitStatus(rawValue: $0.exitCode) ?? .ok })
    }
}
