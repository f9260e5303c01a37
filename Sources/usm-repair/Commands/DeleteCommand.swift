import ArgumentParser
import USMRepairCore

/// `usm-repair delete container|cloud-store|local-store`.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract:
            "Delete the ubiquity container, a cloud store or the local store, leaving the state the app takes up at its next launch.",
        discussion: """
            Examples:
              usm-repair delete container --container Notes.xcappdata --dry-run
              usm-repair delete cloud-store --container Notes.xcappdata --local-only --yes
              usm-repair delete local-store --container Notes.xcappdata --yes
            """,
        subcommands: [DeleteContainerCommand.self, DeleteCloudStoreCommand.self, DeleteLocalStoreCommand.self])
}

/// The exit codes every changing command documents in its help.
let operationExitCodes = """
    Exit codes: 0 done (or nothing to do); 2 bad input; 3 refused (no --yes without a terminal, \
    symlink leaving the folder); 4 the ubiquity container is needed (--cloud-dir); 5 a store is \
    open in another process; 6 another usm-repair run is changing these folders; 7 an interrupted \
    operation is pending (with --dry-run; otherwise it is recovered first); 8 a precondition \
    fails; 9 the files changed since planning; 64 usage; 66 not found; 74 I/O error; 75 out of space.
    """

struct DeleteContainerCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "container",
        abstract:
            "Remove everything in the ubiquity container, this device's copies of its stores and the cached StoreUUIDs.",
        discussion: """
            Next launch: the app seeds a new cloud store from the local store (E2; an empty one without it, E3); \
            the local store's WAL is merged into its main file first. The deletion reaches every device. \
            --local-only leaves the container alone and removes only this device's copies and the cache: \
            Core Data rebuilds the active store from its logs (E6).

            Examples:
              usm-repair delete container --container Notes.xcappdata \\
                --cloud-dir "Mobile Documents/T~com~x" --dry-run
              usm-repair delete container --container Notes.xcappdata --local-only \\
                --yes --json
              usm-repair delete container --mac-app com.example.notes --dry-run

            \(operationExitCodes)
            """)
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Output") var output: OutputFlags
    @Flag(name: .customLong("local-only"), help: "Keep the container; remove only this device's copies and the cache.")
    var localOnly = false

    func run(_ context: CommandContext) throws {
        try context.runOperation(
            .deleteContainer(localOnly: localOnly), layout: layout, plan: plan, snapshots: snapshots)
    }
}

struct DeleteCloudStoreCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloud-store",
        abstract: "Remove a cloud store (default: the active one): its logs, markers, copies and the cache.",
        discussion: """
            Next launch, for the active store: a new cloud store seeded from the local store (E2). \
            --local-only removes only this device's copy (its store/ file set): markers and logs stay, \
            and Core Data rebuilds it from CloudLogs/<UUID> (E6; empty without logs, E7).

            Examples:
              usm-repair delete cloud-store --container Notes.xcappdata --cloud-dir C \\
                --uuid 0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B --dry-run
              usm-repair delete cloud-store --container Notes.xcappdata --local-only \\
                --peer mobile~8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A --yes

            \(operationExitCodes)
            """)
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Copy") var copy: CopyFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Output") var output: OutputFlags
    @Option(
        name: .customLong("uuid"),
        help: ArgumentHelp("The store to remove (default: the active store).", valueName: "uuid"))
    var uuid: String?
    @Flag(name: .customLong("local-only"), help: "Remove only this device's copy; Core Data rebuilds it from the logs.")
    var localOnly = false
    @Flag(
        name: .customLong("with-older-markers"),
        help: "Also remove StoreUUID markers of older cloud versions (stops iOS 6 devices from syncing).")
    var withOlderMarkers = false

    func run(_ context: CommandContext) throws {
        try context.runOperation(
            .deleteCloudStore(uuid: uuid, localOnly: localOnly, copy: copy.choice, withOlderMarkers: withOlderMarkers),
            layout: layout, plan: plan, snapshots: snapshots)
    }
}

struct DeleteLocalStoreCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "local-store",
        abstract: "Remove the local store's whole file set (-wal, -shm, -journal, .<Name>_SUPPORT).",
        discussion: """
            With iCloud off the app creates a new, empty local store at its next launch; with iCloud on \
            the launch is unaffected, but a later seeding of a new cloud store starts empty (E3).

            Example:
              usm-repair delete local-store --container Notes.xcappdata --yes

            \(operationExitCodes)
            """)
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        try context.runOperation(.deleteLocalStore, layout: layout, plan: plan, snapshots: snapshots)
    }
}
