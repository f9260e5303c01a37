import ArgumentParser
import USMRepairCore

/// `usm-repair stores`: the cloud stores, every copy, logs and markers.
struct StoresCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "stores",
        abstract:
            "List the cloud stores: every copy on this device, their logs and markers, and which is active (read-only).",
        discussion: """
            Example:
              usm-repair stores --container Notes.xcappdata --json

            Exit codes: 0 listed; 2 bad input; 3 refused; 64 usage; 66 not found; 74 I/O error.
            """)
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        try context.perform(
            { terminal in
                var inspection = Inspection(options: layout.options(context.paths), depth: .status)
                inspection.records = OperationRecords(stateFolder: context.stateFolder)
                return StoreList(report: try inspection.run(progress: terminal.progress))
            },
            text: { list, terminal in
                if list.stores.isEmpty { terminal.out("No cloud store is known here.") }
                for store in list.stores {
                    let flags = [
                        store.active ? "active" : nil, store.content ? "logs present" : "no logs",
                        store.markers.isEmpty ? nil : store.markers.joined(separator: ", "),
                    ].compactMap { $0 }
                    terminal.out("\(store.uuid)  v\(store.cloudVersion)  \(flags.joined(separator: ", "))")
                    for copy in store.copies {
                        let opens =
                            copy.opens.map { $0 ? ", the copy the app opens" : "" } ?? ", which copy opens is unknown"
                        terminal.out(
                            "    \(copy.health) \(copy.objects) objects  \(copy.path)\(copy.peer.map { " (peer \($0), account \(copy.account ?? "?")\(opens))" } ?? "")"
                        )
                    }
                }
            })
    }
}

/// The `stores --json` report.
struct StoreList: Encodable {
    struct Copy: Encodable {
        let path: String
        let location: Layout.Location
        @NullEncoded var peer: String?
        @NullEncoded var account: String?
        @NullEncoded var opens: Bool?
        let health: String
        let objects: Int
    }

    struct Store: Encodable {
        let uuid: String
        let cloudVersion: Int
        let active: Bool
        let content: Bool
        let markers: [String]
        let cached: Bool
        let copies: [Copy]
    }

    let schemaVersion = 1
    let command = "stores"
    @NullEncoded var activeStore: String?
    let stores: [Store]
    let exitCode = 0
    let exitStatus = "ok"

    init(report: StatusReport) {
        let active = report.activeStore?.uuid
        activeStore = active
        stores = report.layout.cloudStores.map { store in
            Store(
                uuid: store.uuid, cloudVersion: store.cloudVersion, active: store.uuid == active,
                content: store.content,
                markers: store.markers, cached: store.cached,
                copies: report.stores.filter { $0.uuid == store.uuid && $0.location != .nominal }.map {
                    Copy(
                        path: $0.path, location: $0.location, peer: $0.copy?.peer, account: $0.copy?.account,
                        opens: $0.opens,
                        health: $0.health.rawValue, objects: $0.objects)
                })
        }
    }
}

/// `usm-repair recover`: finish or undo an interrupted operation.
struct RecoverCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Finish or undo an operation a kill or crash interrupted.",
        discussion: """
            An operation that had not reached its commit step is undone (every file back as it was); \
            one that had is finished. Afterwards the folders are exactly as before the operation or as \
            a clean run leaves them, and no staging, journal, lock or trash remains. Every changing \
            command does this first by itself.

            An operation is recovered with the folder flags it ran with: --container (or --app-dir, \
            --cloud-dir, --prefs) for the maintenance operations and restore SNAPSHOT; --store DST for \
            migrate-store; --app-dir DIR for restore --to DIR. Only operations this machine recorded \
            writing are obeyed (anything else in a layout is reported and left alone, exit 3); an item \
            whose place was taken meanwhile stops recovery (exit 3), the original kept.

            Examples:
              usm-repair recover --container Notes.xcappdata --cloud-dir C
              usm-repair recover --store ~/Cases/4711/Local.sqlite

            --dry-run lists what would be finished or undone and changes nothing. Recovery asks \
            nothing (it completes or undoes an operation consented to when it ran; --yes is \
            accepted, with nothing to answer) and takes no snapshot (--snapshot-dir is refused).

            Exit codes: 0 recovered (or nothing to recover; 20 with --detailed-exitcode when \
            something was, or with --dry-run would be); 3 refused (an operation folder this machine \
            did not write, or a recovery conflict); 4 the operation also works in a ubiquity container \
            not given; 6 another run holds the folders; 64 usage; 66 not found; 74 I/O error.
            """)
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    // Recovery puts back or finishes what an operation's journal names. It asks nothing: it only
    // completes or undoes an operation consented to when it ran (every changing command recovers
    // first by itself), so --yes is accepted, as by every changing command, and there is never a
    // question to answer. It takes no snapshot (the interrupted operation's own is the way back),
    // so it has no --snapshot-dir.
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Output") var output: OutputFlags
    // SnapshotFlags' --snapshot-dir, hidden: parsed only to be refused with a reason.
    @OptionGroup(visibility: .hidden) var snapshots: SnapshotFlags

    func validate() throws {
        if snapshots.snapshotDir != nil {
            throw ValidationError(
                "recover takes no snapshot (it finishes or undoes an operation whose snapshot was taken when it ran): drop --snapshot-dir"
            )
        }
    }

    func run(_ context: CommandContext) throws {
        try context.runChange(
            RecoverChange(options: layout.options(context.paths), executor: context.executor(snapshotDirectory: nil)),
            flags: plan
        ) { report, terminal, _ in
            if report.recovered.isEmpty { terminal.out("Nothing to recover.") }
            for r in report.recovered {
                let outcome =
                    r.outcome == .undone
                    ? "undone (the files are as before it)" : "finished (the files are as it leaves them)"
                terminal.out("\(r.operation): \(report.dryRun ? "would be " : "")\(outcome)")
            }
        }
    }
}
