import ArgumentParser
import USMRepairCore

/// `usm-repair rebuild --from local|cloud`.
struct RebuildCommand: USMCommand {
    enum Source: String, ExpressibleByArgument, CaseIterable { case local, cloud }

    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract:
            "Rebuild the cloud content from a healthy store: leave the state in which the app seeds a new cloud store.",
        discussion: """
            --from local: the local store's WAL merged; every StoreUUID and CorruptedUUID marker and \
            every cached StoreUUID removed; iCloud on; the old store's copies and logs removed unless \
            --keep-old. Next launch: a new cloud store seeded from the local store (E2). A damaged local \
            store is refused; with --salvage it is replaced by a store built from every row salvage can \
            read of it (the damaged file set goes into the snapshot; the dry run counts what is lost).
            --from cloud: first the active cloud store's data into a new local store (a strategy; the old \
            local store is kept in the snapshot), then as --from local: the new cloud store holds the cloud data. \
            With --merge the cloud store's data is merged into the local store instead (objects already \
            there matched, not copied twice; --allow-duplicates copies them): the new cloud store holds both.
            --from cloud --in-app: the active store marked corrupt instead, so that the app rebuilds it \
            from its own copy 30 s after launch (E9; depends on the app's delegate; the local store is untouched).

            Default strategy of --from cloud: \(StrategyChoice.appDefaultRule).

            Examples:
              usm-repair rebuild --from local --container Notes.xcappdata --cloud-dir C \\
                --dry-run
              usm-repair rebuild --from cloud --container Notes.xcappdata --cloud-dir C \\
                --strategy ios --yes --json
              usm-repair rebuild --from local --mac-app com.example.notes --dry-run
              usm-repair rebuild --from local --salvage --container Notes.xcappdata \\
                --cloud-dir C --dry-run

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
    @Option(
        name: .customLong("from"),
        help: ArgumentHelp("local or cloud: the healthy store the new cloud content comes from.", valueName: "source"))
    var from: Source
    @Flag(
        name: .customLong("in-app"),
        help: "With --from cloud: mark the active store corrupt so that the app rebuilds it itself.")
    var inApp = false
    @Flag(
        name: .customLong("merge"),
        help:
            "With --from cloud: merge the cloud store's data into the local store (its own objects stay; objects already there are matched, not copied twice)."
    )
    var merge = false
    @Flag(name: .customLong("keep-old"), help: "Keep the old cloud store's logs and this device's copies.")
    var keepOld = false
    @Flag(
        name: .customLong("with-older-markers"),
        help: "Also remove StoreUUID markers of older cloud versions (stops iOS 6 devices from syncing).")
    var withOlderMarkers = false

    func validate() throws {
        if inApp, from != .cloud { throw ValidationError("--in-app goes with --from cloud") }
        if from == .local || inApp {
            let given = [
                strategy.strategy.map { _ in "--strategy" }, strategy.recipe.map { _ in "--recipe" },
                strategy.plugin.map { _ in "--plugin" },
                strategy.params.isEmpty ? nil : "--param",
            ].compactMap { $0 }
            if let flag = given.first {
                throw ValidationError(
                    "\(flag) chooses how data moves into the local store: it goes with rebuild --from cloud, not \(inApp ? "--in-app" : "--from local")"
                )
            }
        }
        if merge, from != .cloud || inApp { throw ValidationError("--merge goes with rebuild --from cloud") }
        if merge, data.replace { throw ValidationError("--replace and --merge cannot be used together") }
        if data.allowDuplicates, !merge {
            throw ValidationError("--allow-duplicates goes with --merge (rebuild --from cloud, migrate cloud-to-local)")
        }
        if data.replace, from != .cloud || inApp {
            throw ValidationError("--replace goes with rebuild --from cloud (which replaces the local store)")
        }
        if data.discardCloud, from != .local { throw ValidationError("--discard-cloud goes with rebuild --from local") }
        if salvage.salvage, from != .local {
            throw ValidationError("--salvage goes with rebuild --from local (and migrate cloud-to-local)")
        }
    }

    func run(_ context: CommandContext) throws {
        let maintenance: Maintenance =
            switch (from, inApp) {
            case (.local, _):
                .rebuildFromLocal(
                    keepOld: keepOld, withOlderMarkers: withOlderMarkers, salvage: salvage.choice(context.paths))
            case (.cloud, true): .rebuildInApp(copy: copy.choice)
            case (.cloud, false):
                .rebuildFromCloud(
                    strategy: strategy.choice, copy: copy.choice, keepOld: keepOld, withOlderMarkers: withOlderMarkers,
                    merge: merge)
            }
        var context = context
        context.model = try strategy.loadedModel(context.paths)
        try context.runOperation(maintenance, layout: layout, plan: plan, snapshots: snapshots, data: data.consent)
    }
}
