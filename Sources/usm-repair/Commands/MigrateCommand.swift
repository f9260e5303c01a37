import ArgumentParser
import USMRepairCore

/// `usm-repair migrate cloud-to-local|local-to-cloud`.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Move the data between the cloud store and the local store.",
        discussion: """
            Examples:
              usm-repair migrate cloud-to-local --container Notes.xcappdata --dry-run
              usm-repair migrate local-to-cloud --container Notes.xcappdata --yes
            """,
        subcommands: [MigrateCloudToLocalCommand.self, MigrateLocalToCloudCommand.self])
}

struct MigrateCloudToLocalCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloud-to-local",
        abstract: "Replace (or --merge into) the local store with the active cloud store's data, and turn iCloud off.",
        discussion: """
            The data comes from this device's copy of the active store (--peer/--account when it holds \
            several; --uuid for another store), through a migration strategy; iCloud metadata is \
            stripped and the WAL merged. The cloud side is left as it is. Next launch: the local store (E1). \
            A damaged copy is refused; with --salvage the strategy builds from every row salvage can \
            read of it (the copy is not changed; the dry run counts what is lost).

            Default strategy: \(StrategyChoice.appDefaultRule).

            Examples:
              usm-repair migrate cloud-to-local --container Notes.xcappdata --dry-run
              usm-repair migrate cloud-to-local --container Notes.xcappdata --merge \\
                --yes --json
              usm-repair migrate cloud-to-local --container Notes.xcappdata --salvage \\
                --replace --dry-run

            \(operationExitCodes)
            """)
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Strategy") var strategy: StrategyFlags
    @OptionGroup(title: "Copy") var copy: CopyFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Data") var data: DataFlags
    @OptionGroup(title: "Salvage") var salvage: SalvageFlags
    @OptionGroup(title: "Output") var output: OutputFlags
    @Flag(
        name: .customLong("merge"),
        help: "Merge into the existing local store instead of replacing it (copy-entities or manual).")
    var merge = false
    @Option(
        name: .customLong("uuid"),
        help: ArgumentHelp("The cloud store to take the data from (default: the active one).", valueName: "uuid"))
    var uuid: String?

    func validate() throws {
        if data.discardCloud {
            throw ValidationError("--discard-cloud goes with rebuild --from local and migrate local-to-cloud")
        }
        if merge, data.replace { throw ValidationError("--replace and --merge cannot be used together") }
        if !merge, data.allowDuplicates { throw ValidationError("--allow-duplicates goes with --merge") }
    }

    func run(_ context: CommandContext) throws {
        var context = context
        context.model = try strategy.loadedModel(context.paths)
        try context.runOperation(
            .migrateCloudToLocal(
                uuid: uuid, strategy: strategy.choice, merge: merge, copy: copy.choice,
                salvage: salvage.choice(context.paths)),
            layout: layout, plan: plan, snapshots: snapshots,
            data: data.consent)
    }
}

struct MigrateLocalToCloudCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "local-to-cloud",
        abstract: "Leave the state in which the app seeds a new cloud store from the local store at its next launch.",
        discussion: """
            The same as rebuild --from local: the local store's WAL merged into its main file; every \
            StoreUUID and CorruptedUUID marker and every cached StoreUUID removed; iCloud on; the old \
            store's copies and logs removed unless --keep-old. Next launch: a new cloud store seeded from \
            the local store (E2). usm-repair never builds a cloud store itself.

            Example:
              usm-repair migrate local-to-cloud --container Notes.xcappdata --cloud-dir C \\
                --keep-old --yes

            \(operationExitCodes)
            """)
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Salvage") var salvage: SalvageFlags
    @OptionGroup(title: "Output") var output: OutputFlags
    @Flag(name: .customLong("keep-old"), help: "Keep the old cloud store's logs and this device's copies.")
    var keepOld = false
    @Flag(
        name: .customLong("with-older-markers"),
        help: "Also remove StoreUUID markers of older cloud versions (stops iOS 6 devices from syncing).")
    var withOlderMarkers = false
    @Flag(
        name: .customLong("discard-cloud"),
        help:
            "Abandon the active cloud store even when it holds objects the local store lacks (the app stops showing them)."
    )
    var discardCloud = false

    func run(_ context: CommandContext) throws {
        try context.runOperation(
            .rebuildFromLocal(
                keepOld: keepOld, withOlderMarkers: withOlderMarkers, asMigrate: true,
                salvage: salvage.choice(context.paths)), layout: layout,
            plan: plan, snapshots: snapshots,
            data: DataConsent(discardCloud: discardCloud))
    }
}
