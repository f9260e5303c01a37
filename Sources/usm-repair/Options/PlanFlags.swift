import ArgumentParser
import Foundation
import USMRepairCore

/// The flags of every command that changes files.
struct PlanFlags: ParsableArguments {
    @Flag(name: .customLong("dry-run"), help: "Print the plan (every step, path and reason, and the next launch before and after) and change nothing.")
    var dryRun = false

    @Flag(name: [.short, .customLong("yes")], help: "Run without asking (needed when stdin is not a terminal).")
    var yes = false

    @Option(name: .customLong("snapshot-dir"), help: ArgumentHelp(
        "Where the snapshot of everything changed goes (default $XDG_STATE_HOME/usm-repair/snapshots or ~/.local/state/usm-repair/snapshots; never inside the layout).",
        valueName: "dir"), completion: .directory)
    var snapshotDir: String?

    /// `--snapshot-dir`, nil for the default (the state folder's `snapshots`).
    var snapshotDirectory: URL? {
        snapshotDir.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath, isDirectory: true) }
    }
}

/// Which copy of a cloud store to use when this device holds several.
struct CopyFlags: ParsableArguments {
    @Option(name: .customLong("peer"), help: ArgumentHelp("The peer folder of the copy to use (mobile~<UUID>), when there are several.", valueName: "peer"))
    var peer: String?

    @Option(name: .customLong("account"), help: ArgumentHelp("The account folder of the copy to use (a UUID, or local), when there are several.", valueName: "account"))
    var account: String?

    var choice: CopyChoice { CopyChoice(peer: peer, account: account) }
}

/// The migration strategy of commands that move data.
struct StrategyFlags: ParsableArguments {
    @Option(name: .customLong("strategy"), help: ArgumentHelp(
        "How the data moves: ios, copy-entities, manual, none (usm-repair strategies lists them). Default: what the app's UbiquityStoreManager uses, ios from an iOS 7+ store, copy-entities from an iOS 6 one or for --merge.",
        valueName: "id"))
    var strategy: String?

    @Option(name: .customLong("recipe"), help: ArgumentHelp("For --strategy manual: a recipe name or file.", valueName: "recipe"))
    var recipe: String?

    var choice: StrategyChoice { StrategyChoice(id: strategy, argument: recipe) }
}
