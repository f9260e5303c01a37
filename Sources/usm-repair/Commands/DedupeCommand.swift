import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair dedupe`: the duplicated objects of the local store (or `--store FILE`) removed.
struct DedupeCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "dedupe",
        abstract: "Remove duplicated objects from the local store (or --store FILE), keeping one of each.",
        discussion: """
            Two objects are the same when they are of the same entity, hold equal values in every \
            attribute and their to-one relationships lead to objects that are the same (decided by \
            refinement: two equal books by two different authors stay two); to-many relationships are \
            not compared. --key ENTITY=ATTR[,ATTR...] identifies an entity by those attributes only. \
            One object per group survives (--keep oldest, the lowest key, or newest); every to-one \
            reference to a removed copy then points at it, many-to-many pairs are united without \
            repeats, Z_MAX is never behind. The store is copied whole into staging, de-duplicated and \
            checked there, and installed after a snapshot (restore SNAPSHOT undoes it). A store without \
            duplicates is nothing to do. The active cloud store's copy is never changed here: migrate \
            cloud-to-local --merge, dedupe, then rebuild --from local.

            Exit codes: 0 done or nothing to do (20 with --detailed-exitcode when done); 2 not a Core \
            Data store; 5 the store is damaged; 7 an interrupted operation is pending; 8 refused (a \
            cloud copy); 10 verification failed (nothing installed); 64 usage; 66 not found; 74 I/O \
            error; 75 out of space.

            Examples:
              usm-repair dedupe --container Notes.xcappdata --dry-run
              usm-repair dedupe --store Customer.sqlite --keep newest --yes
              usm-repair dedupe --store Customer.sqlite --key Tag=name --yes --json
            """)

    @OptionGroup(title: "Layout") var layout: LayoutFlags

    @Option(
        name: .customLong("key"),
        help: ArgumentHelp("Identify ENTITY by these attributes only (repeatable).", valueName: "entity=attr,..."))
    var keys: [String] = []

    @Option(
        name: .customLong("keep"),
        help: ArgumentHelp("Which copy survives: oldest or newest (by key order).", valueName: "which"))
    var keep: String = "oldest"

    @OptionGroup(title: "Plan") var plan: ChangeFlags

    @OptionGroup(title: "Output") var output: OutputFlags

    func validate() throws {
        guard ["oldest", "newest"].contains(keep) else { throw ValidationError("--keep takes oldest or newest") }
        if layout.document != nil { throw ValidationError("dedupe works on the local store or --store FILE") }
    }

    func run(_ context: CommandContext) throws {
        try context.perform(
            { terminal -> DedupeReport in
                let store = try target(context)
                let operation = DedupeOperation(
                    request: DedupeRequest(store: store, keys: keys, newest: keep == "newest", dryRun: true),
                    engine: MigrationEngine(registry: context.strategies),
                    executor: context.executor(snapshotDirectory: plan.snapshotDirectory(context.paths)))
                var preview = try operation.run(progress: { terminal.progressLine($0) })
                preview.detailed(plan.detailedExitCode)
                if plan.dryRun || preview.noOp { return preview }
                try context.consent(
                    yes: plan.yes, terminal: terminal,
                    unattended: "dedupe changes files: run it with --yes (see what goes with --dry-run)",
                    question: "Remove these duplicates? A snapshot is taken first."
                ) { Self.print(preview, terminal) }
                var request = operation.request
                request.dryRun = false
                request.counted = (preview.before, preview.removed)
                var report = try DedupeOperation(
                    request: request, engine: operation.engine, executor: operation.executor
                ).run(progress: { terminal.progressLine($0) })
                report.detailed(plan.detailedExitCode)
                return report
            },
            text: { report, terminal in
                guard !output.quiet || report.dryRun else {
                    if let snapshot = report.snapshot {
                        terminal.err("to undo: usm-repair restore \(ShellWords.quote(snapshot)) --yes")
                    }
                    return
                }
                Self.print(report, terminal)
            },
            status: { report in plan.status(changed: report.changed) })
    }

    /// The store: `--store FILE`, or the layout's local store. A cloud copy is refused.
    func target(_ context: CommandContext) throws -> StoreFileSet {
        let options = layout.options(context.paths)
        if let file = options.store {
            let components = file.standardizedFileURL.pathComponents
            if components.contains(Layout.ubiquitySupportFolder) || components.contains("CloudStore.nosync") {
                throw USMError.preconditionFailed(
                    "\(file.path) is a copy of a cloud store: Core Data would replace it from the logs. Bring its objects into the local store (usm-repair migrate cloud-to-local --merge), run dedupe there, then share the result (usm-repair rebuild --from local)"
                )
            }
            return StoreFileSet(main: file)
        }
        let found = try Layout.discover(options, records: context.executor(snapshotDirectory: nil).records)
        guard let local = found.stores.first(where: { $0.location == .local }) else {
            throw USMError.notFound(
                path: found.appDirectory?.appendingPathComponent("\(options.storeName).sqlite").path ?? "-",
                what: "local store")
        }
        return local.files
    }

    static func print(_ report: DedupeReport, _ terminal: Terminal) {
        if report.removed.isEmpty {
            terminal.out("\(report.store): no duplicates; nothing to do.")
            return
        }
        let verb = report.dryRun ? "would remove" : "removed"
        terminal.out(
            "\(report.store): \(verb) \(report.removed.values.reduce(0, +)) duplicated objects (keeping the \(report.keep) of each group):"
        )
        for (name, n) in report.removed.sorted(by: { $0.key < $1.key }) {
            terminal.out("  \(name): \(report.before[name] ?? 0) -> \((report.before[name] ?? 0) - n)")
        }
        for note in report.notes { terminal.out("Note: \(note)") }
        if let snapshot = report.snapshot {
            terminal.out("To undo: usm-repair restore \(ShellWords.quote(snapshot)) --yes")
        }
    }
}
