import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair restore ARCHIVE --to DIR`: put a bundle or snapshot back, byte for byte.
struct RestoreCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Verify a bundle, then put its folders back under --to, atomically, modes and times kept.",
        discussion: """
            Everything is verified against the manifest first; hostile entries (absolute paths, '..', \
            links leaving the bundle, hard links, devices, duplicates, entries larger than declared) \
            refuse the whole archive. Files are extracted into a private folder inside --to and each \
            root is moved into place with one rename. Replacing an existing folder needs --yes (or a \
            yes at the prompt) and is snapshotted first (--snapshot-dir; default \
            $XDG_STATE_HOME/usm-repair/snapshots), outside the folders being replaced, and the \
            snapshot is read back and verified before anything is replaced.

            Exit codes: 0 restored; 1 the archive does not match its manifest; 2 not a bundle, \
            truncated or corrupt; 3 refused (hostile entry, or existing folders without --yes); \
            64 usage (also a --snapshot-dir inside a folder being replaced); 66 archive not found; \
            74 I/O error; 75 out of space.

            Examples:
              usm-repair restore ticket-4711.tar.zst --to ~/Cases/4711
              usm-repair restore ticket-4711.tar.zst --to ~/Cases/4711 --yes
              usm-repair restore restore-20261121T101500Z-1a2b3c4d.tar.zst --to ~/Case -y
            """
    )

    @Argument(help: ArgumentHelp("The bundle or snapshot to restore.", valueName: "archive"), completion: .file())
    var archive: String

    @Option(name: .customLong("to"), help: ArgumentHelp("The folder to restore into.", valueName: "dir"), completion: .directory)
    var to: String

    @Flag(name: [.short, .customLong("yes")], help: "Replace existing folders without asking (they are snapshotted first).")
    var yes = false

    @Option(name: .customLong("snapshot-dir"), help: ArgumentHelp(
        "Where to keep the snapshot of what is replaced (default $XDG_STATE_HOME/usm-repair/snapshots or ~/.local/state/usm-repair/snapshots).", valueName: "dir"),
        completion: .directory)
    var snapshotDir: String?

    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        let options = RestoreOptions(
            archive: URL(fileURLWithPath: archive), target: URL(fileURLWithPath: to, isDirectory: true), yes: yes,
            snapshotDirectory: snapshotDir.map { URL(fileURLWithPath: $0, isDirectory: true) })
        let verbose = output.verbose && !output.json
        try context.perform({ terminal in
            // --verbose: every entry as it is written into the private folder.
            try BundleRestorer(options: options).run(confirm: context.confirm, onEntry: verbose ? { terminal.out("extracted: \($0)") } : nil)
        }, text: { result, terminal in
            guard !output.quiet else { return }
            for root in result.roots {
                terminal.out("\(root.replaced ? "Replaced" : "Restored") \(root.path)")
            }
            if let snapshot = result.snapshot { terminal.out("What was replaced is in \(snapshot) (usm-repair restore it to undo)") }
            terminal.out("\(result.entries) entries, \(result.bytes) bytes, verified against the manifest")
        })
    }
}
