import ArgumentParser
import USMRepairCore

/// `usm-repair status`: what is there, what state it is in, and what to run next.
struct StatusCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the layout, every store's state, and what to run next (read-only).",
        discussion: """
            Reads every store through a private copy of its file set, so rows that exist only in an \
            un-checkpointed -wal are counted while the user's files stay byte-identical. Runs SQLite's \
            quick_check; `check` runs the full invariants.

            Exit codes: 0 every store present is healthy; 1 an error-level problem was found (the \
            advice says what to run); 2 a store is damaged or not Core Data, or a \
            marker or the preferences hold garbage; 3 refused (symlink leaving the folder); 64 usage; \
            66 a named path does not exist; 74 a file or folder could not be read; 75 no room for the \
            private copy.

            Examples:
              usm-repair status --container ~/Downloads/Notes.xcappdata
              usm-repair status --app-dir "Application Support" --cloud-dir iCloud --json
              usm-repair status --store Customer.sqlite -v
              usm-repair status --mac-app com.example.notes
              usm-repair status --mac-app com.example.notes --home ~/Cases/4711/jo
            """
    )

    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        try context.report(Inspection(options: layout.options(context.paths), depth: .status))
    }
}
