import ArgumentParser
import USMRepairCore

/// `usm-repair switch <UUID>`.
struct SwitchCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch",
        abstract: "Make another cloud store the active one.",
        discussion: """
            Writes StoreUUID of the store's cloud version (36 upper-case characters, atomically), \
            removes higher versions' markers and that version's CorruptedUUID, and the cached \
            StoreUUIDs. Next launch: the store (E4, or E6 rebuilt from its logs; an iOS 6 store is \
            upgraded 30 s later, E8). `usm-repair stores` lists the candidates.

            Example:
              usm-repair switch A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF \\
                --container Notes.xcappdata --cloud-dir C --yes

            \(operationExitCodes)
            """)
    @Argument(help: ArgumentHelp("The store UUID to make active.", valueName: "uuid"))
    var uuid: String
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        try context.runOperation(.switchActive(uuid: uuid), layout: layout, plan: plan, snapshots: snapshots)
    }
}

/// `usm-repair cloud enable|disable`.
struct CloudCommand: USMCommand {
    enum Setting: String, ExpressibleByArgument, CaseIterable { case enable, disable }

    static let configuration = CommandConfiguration(
        commandName: "cloud",
        abstract: "Turn iCloud on or off for the app (USMCloudEnabledKey).",
        discussion: """
            Rewrites the preferences in their own format (binary or XML) with every other key kept. \
            enable also removes cached StoreUUIDs that differ from the marker. Next launch: the local \
            store (disable, E1) or the cloud store (enable).

            Example:
              usm-repair cloud disable --container Notes.xcappdata --yes

            \(operationExitCodes)
            """)
    @Argument(help: ArgumentHelp("enable or disable.", valueName: "setting"))
    var setting: Setting
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        try context.runOperation(
            .setCloud(enabled: setting == .enable), layout: layout, plan: plan, snapshots: snapshots)
    }
}

/// `usm-repair corruption mark [UUID] | clear`.
struct CorruptionCommand: USMCommand {
    enum Action: String, ExpressibleByArgument, CaseIterable { case mark, clear }

    static let configuration = CommandConfiguration(
        commandName: "corruption",
        abstract: "Mark a cloud store corrupt (default: the active one), or clear every corruption marker.",
        discussion: """
            mark writes CorruptedUUID of the active cloud version: every healthy device rebuilds the \
            store 30 s after its next load (E9). clear removes every CorruptedUUID marker.

            Examples:
              usm-repair corruption mark --container Notes.xcappdata --cloud-dir C --yes
              usm-repair corruption clear --container Notes.xcappdata --cloud-dir C --yes

            \(operationExitCodes)
            """)
    @Argument(help: ArgumentHelp("mark or clear.", valueName: "action"))
    var action: Action
    @Argument(help: ArgumentHelp("For mark: the store to mark (default: the active store).", valueName: "uuid"))
    var uuid: String?
    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Plan") var plan: ChangeFlags
    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    func validate() throws {
        if action == .clear, uuid != nil {
            throw ValidationError("clear takes no UUID: it removes every corruption marker")
        }
    }

    func run(_ context: CommandContext) throws {
        try context.runOperation(
            action == .mark ? .markCorruption(uuid: uuid) : .clearCorruption, layout: layout, plan: plan,
            snapshots: snapshots)
    }
}
