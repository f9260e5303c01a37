import ArgumentParser
import Foundation
import USMRepairCore

/// The flags of every command that changes files (issue 30: one group, declared once): the eleven
/// operations, `migrate-store`, `salvage`, `dedupe`, `restore` (both forms), `recover` and
/// `snapshots prune`, all run by `CommandContext.runChange`. `--json` is `OutputFlags`', which
/// every command has; `--snapshot-dir` is `SnapshotFlags`', of every one that snapshots.
struct ChangeFlags: ParsableArguments {
    @Flag(
        name: .customLong("dry-run"),
        help:
            "Print the plan (every step, path and reason; for the layout operations the next launch before and after) and change nothing."
    )
    var dryRun = false

    @Flag(name: [.short, .customLong("yes")], help: "Run without asking (needed when stdin is not a terminal).")
    var yes = false

    @Flag(
        name: .customLong("detailed-exitcode"),
        help: ArgumentHelp(
            "Exit 20 when files were changed (or, with --dry-run, would be) and 0 when there was nothing to do (refusals and failures keep their codes)."
        ))
    var detailedExitCode = false

}

/// `--snapshot-dir`, of every changing command that takes a snapshot (all but `recover`, which
/// finishes or undoes an operation whose snapshot was taken when it ran) and of `snapshots prune`,
/// whose folder it is.
struct SnapshotFlags: ParsableArguments {
    @Option(
        name: .customLong("snapshot-dir"),
        help: ArgumentHelp(
            "The snapshot folder: where the snapshot of everything changed goes, and the folder snapshots prune prunes (default $XDG_STATE_HOME/usm-repair/snapshots or ~/.local/state/usm-repair/snapshots; never inside the layout).",
            valueName: "dir"), completion: .directory)
    var snapshotDir: String?

    /// `--snapshot-dir`, nil for the default (the state folder's `snapshots`).
    func directory(_ paths: PathResolver) -> URL? {
        snapshotDir.map { paths.url($0, directory: true) }
    }
}

/// The flags of the commands that put a store built in staging in place of DST (`migrate-store`,
/// `salvage`): declared once, shown among the command's own options.
struct ReplacingFlags: ParsableArguments {
    @Flag(
        name: .customLong("keep-ubiquity-metadata"),
        help: "Keep com.apple.coredata.ubiquity.* keys in the result's metadata.")
    var keepUbiquityMetadata = false

    @Flag(
        name: .customLong("overwrite"),
        help: "Replace an existing DST (snapshotted first; needs --yes or a yes at the prompt).")
    var overwrite = false
}

/// The losses and duplications a command may cause only when the user names them.
struct DataFlags: ParsableArguments {
    @Flag(
        name: .customLong("replace"),
        help:
            "Replace the local store even when it holds objects the incoming data lacks (they stay only in the snapshot)."
    )
    var replace = false

    @Flag(
        name: .customLong("discard-cloud"),
        help:
            "Abandon the active cloud store even when it holds objects the local store lacks (the app stops showing them)."
    )
    var discardCloud = false

    @OptionGroup var duplicates: AllowDuplicatesFlag<MergeDuplicatesHelp>

    var allowDuplicates: Bool { duplicates.allowDuplicates }

    var consent: DataConsent {
        DataConsent(replace: replace, discardCloud: discardCloud, allowDuplicates: allowDuplicates)
    }
}

/// `--salvage` and `--schema-from`: a damaged store the operation reads is salvaged instead of refused.
struct SalvageFlags: ParsableArguments {
    @Flag(
        name: .customLong("salvage"),
        help: ArgumentHelp(
            "When the store the data comes from is damaged, build from every row salvage's own reader can still read (the dry run counts what is kept and lost); a healthy store is read as it is."
        ))
    var salvage = false

    @OptionGroup var schema: SchemaFromFlag<SalvageOptionSchemaHelp>

    var schemaFrom: String? { schema.schemaFrom }

    func validate() throws {
        if schemaFrom != nil, !salvage { throw ValidationError("--schema-from goes with --salvage") }
    }

    /// The choice, nil without `--salvage`.
    func choice(_ paths: PathResolver) -> SalvageChoice? {
        salvage ? SalvageChoice(schemaFrom: schemaFrom.map { paths.url($0).path }) : nil
    }
}

/// Which copy of a cloud store to use when this device holds several.
struct CopyFlags: ParsableArguments {
    @Option(
        name: .customLong("peer"),
        help: ArgumentHelp(
            "The peer folder of the copy to use (mobile~<UUID>), when there are several.", valueName: "peer"))
    var peer: String?

    @Option(
        name: .customLong("account"),
        help: ArgumentHelp(
            "The account folder of the copy to use (a UUID, or local), when there are several.", valueName: "account"))
    var account: String?

    var choice: CopyChoice { CopyChoice(peer: peer, account: account) }
}

/// The migration strategy of every command that moves data (`migrate cloud-to-local`,
/// `rebuild --from cloud`, `migrate-store`): one set of flags, resolved once at planning by the
/// registry (an unknown id, a recipe or plugin that is not found, a recipe with another strategy,
/// a strategy that cannot merge: refused before anything is written).
struct StrategyFlags: ParsableArguments {
    @Option(
        name: .customLong("strategy"),
        help: ArgumentHelp(
            "How the data moves: ios, copy-entities, manual, none (usm-repair strategies lists them and each command's default).",
            valueName: "id"), completion: .list(builtInStrategies.map { $0.description.id }))
    var strategy: String?

    @Option(
        name: .customLong("recipe"),
        help: ArgumentHelp(
            "A recipe name (usm-repair strategies lists those found) or path; implies --strategy manual.",
            valueName: "name|path"),
        completion: .custom { _, _, _ in CommandContext.recipeNames() })
    var recipe: String?

    @Option(
        name: .customLong("plugin"),
        help: ArgumentHelp(
            "An external plugin: usm-repair-strategy-<name> on PATH, or a path; implies --strategy manual.",
            valueName: "name|path"))
    var plugin: String?

    @Option(
        name: .customLong("param"),
        help: ArgumentHelp("A recipe or plugin parameter (repeatable).", valueName: "key=value"))
    var params: [String] = []

    @Option(
        name: .customLong("on-conflict"),
        help: ArgumentHelp(
            "Rows breaking a uniqueness constraint in a merge: refuse (default), keep-destination or keep-source.",
            valueName: "policy"))
    var onConflict: ConflictPolicy = .refuse

    @Flag(
        name: .customLong("drop-cloudkit"),
        help: ArgumentHelp(
            "Leave out NSPersistentCloudKitContainer's mirroring rows (ANSCK*) where they cannot follow the objects' keys (a merge): CloudKit then exports those objects again as new records."
        ))
    var dropCloudKit = false

    @Option(
        name: .customLong("plugin-timeout"),
        help: ArgumentHelp(
            "Seconds an external plugin (with everything it started), or one statement of a recipe, may take (default 600).",
            valueName: "seconds"))
    var pluginTimeout: Double = 600

    @OptionGroup var model: ModelFlag<StrategyModelHelp>

    /// `--model` read, nil when not given (`ModelFlag.loaded`).
    func loadedModel(_ paths: PathResolver) throws -> ManagedObjectModel? { try model.loaded(paths) }

    func validate() throws {
        if recipe != nil && plugin != nil { throw ValidationError("--recipe and --plugin cannot be used together") }
        if let strategy, strategy != "manual", recipe != nil || plugin != nil {
            throw ValidationError("--recipe and --plugin go with --strategy manual, not \(strategy)")
        }
        if !(pluginTimeout > 0) { throw ValidationError("--plugin-timeout must be a positive number of seconds") }
        for param in params where !param.contains("=") || param.hasPrefix("=") {
            throw ValidationError("--param takes KEY=VALUE, not \(param.debugDescription)")
        }
    }

    /// `--param` values by key.
    var parameters: [String: String] {
        var values: [String: String] = [:]
        for param in params {
            let parts = param.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            values[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return values
    }

    var choice: StrategyChoice {
        StrategyChoice(
            id: strategy, recipe: recipe, plugin: plugin, parameters: parameters, onConflict: onConflict,
            timeout: pluginTimeout,
            dropCloudKit: dropCloudKit)
    }
}

extension ConflictPolicy: ExpressibleByArgument {}

/// The help text of a flag declared once (below) but explained in the words of the command that
/// takes it: the spelling, value name, completion and parsing stay one declaration.
protocol FlagHelpText {
    static var text: String { get }
}

/// `--model`: the app's model file, of `salvage` and of every command with `StrategyFlags`.
struct ModelFlag<Help: FlagHelpText>: ParsableArguments {
    @Option(
        name: .customLong("model"), help: ArgumentHelp(Help.text, valueName: "path"), completion: .file())
    var model: String?

    /// `--model` read, nil when not given; its path resolved as every path flag is (`~` the
    /// context's `HOME`, a relative path in the context's current folder).
    /// - Throws: `notFound`, `modelInvalid` (exit 2).
    func loaded(_ paths: PathResolver) throws -> ManagedObjectModel? {
        try model.map { try ModelFile.load(paths.url($0)) }
    }
}

/// `--schema-from`: a healthy store of the same model, of `salvage` and of `SalvageFlags`.
struct SchemaFromFlag<Help: FlagHelpText>: ParsableArguments {
    @Option(
        name: .customLong("schema-from"), help: ArgumentHelp(Help.text, valueName: "store"), completion: .file())
    var schemaFrom: String?
}

/// `--allow-duplicates`: of `DataFlags` (a `--merge`) and of `migrate-store --into`.
struct AllowDuplicatesFlag<Help: FlagHelpText>: ParsableArguments {
    @Flag(name: .customLong("allow-duplicates"), help: ArgumentHelp(Help.text))
    var allowDuplicates = false
}

enum StrategyModelHelp: FlagHelpText {
    static let text =
        "The app's model (.xcdatamodeld, .xcdatamodel, its contents XML, .momd or .mom): where relationships point when the source store holds no model cache."
}

enum SalvageModelHelp: FlagHelpText {
    static let text =
        "The app's model (.xcdatamodeld, .xcdatamodel, its contents XML, .momd or .mom): relationships when SRC has no model cache, entity numbers when Z_PRIMARYKEY was lost."
}

enum SalvageOptionSchemaHelp: FlagHelpText {
    static let text =
        "With --salvage: a healthy store of the same model, for the tables, entities and metadata the damaged store lost."
}

enum SalvageSchemaHelp: FlagHelpText {
    static let text =
        "A healthy store of the same model: the tables, entities and metadata the damaged one lost are taken from it."
}

enum MergeDuplicatesHelp: FlagHelpText {
    static let text = "Merge objects the destination already holds (they appear twice)."
}

enum IntoDuplicatesHelp: FlagHelpText {
    static let text = "With --into: copy objects DST already holds (by default they are matched, not copied twice)."
}
