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

    @Flag(
        name: .customLong("graph"),
        help: ArgumentHelp(
            "Print the container as a Graphviz DOT graph (markers, cloud stores with their copies and logs, the local store, the preferences' cache, and the next launch as an edge to the store the app opens; red for errors). Render it with: dot -Tsvg -o status.svg"
        ))
    var graph = false

    func validate() throws {
        if graph, output.json { throw ValidationError("--graph prints DOT; it cannot be combined with --json") }
    }

    func run(_ context: CommandContext) throws {
        let inspection = Inspection(options: layout.options(context.paths), depth: .status)
        guard graph else { return try context.report(inspection) }
        try context.report(inspection) { report, terminal in
            for line in StatusGraph.dot(report).split(separator: "\n") { terminal.outWhole(String(line)) }
        }
    }
}
