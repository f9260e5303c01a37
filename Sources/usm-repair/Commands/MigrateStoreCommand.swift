import ArgumentParser
import Foundation
import ManualStrategy
import USMRepairCore

/// `usm-repair migrate-store SRC DST`: seed a new store from another, or merge one into another,
/// through a strategy; verified before it is installed.
struct MigrateStoreCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-store",
        abstract: "Migrate one Core Data store into a new (or, with --into, an existing) store through a strategy.",
        discussion: """
            The source is read through a private consistent copy (rows only in its -wal included; \
            its files stay byte-identical). The destination is built in a staging folder beside DST, \
            verified (integrity_check, every invariant of check, rows per entity, content digests, \
            external data) and renamed into place, in WAL mode with no -wal or -shm left. On any \
            failure nothing is left at DST. DST must not exist unless --into (merge; copy-entities \
            and manual) or --overwrite --yes (the old file set is snapshotted first).

            Exit codes: 0 migrated; 2 bad input (not a Core Data store, damaged, schema mismatch, \
            invalid recipe); 3 refused (DST exists, uniqueness conflict, plugin touched what it \
            must not, --yes missing); 10 migration failed (strategy, recipe step, plugin or \
            verification; nothing installed); 64 usage (unknown strategy...); 66 not found \
            (source, recipe, plugin); 74 I/O error (read-only or full destination folder); 75 out of space.

            Examples:
              usm-repair migrate-store Cloud.sqlite Local.sqlite
              usm-repair migrate-store A.sqlite B.sqlite --into --on-conflict keep-source
              usm-repair migrate-store Cloud.sqlite Local.sqlite --recipe strip-ubiquity
            """)

    @Argument(help: ArgumentHelp("The source store's main file.", valueName: "src"), completion: .file())
    var source: String

    @Argument(help: ArgumentHelp("The destination store's main file.", valueName: "dst"), completion: .file())
    var destination: String

    @Option(name: .customLong("strategy"), help: ArgumentHelp(
        "ios, copy-entities (default), manual or none (usm-repair strategies lists them).", valueName: "id"))
    var strategy: String?

    @Flag(name: .customLong("into"), help: "Merge into the existing store DST (copy-entities and manual).")
    var into = false

    @Option(name: .customLong("recipe"), help: ArgumentHelp("A recipe name (Recipes/) or path; implies --strategy manual.", valueName: "name|path"))
    var recipe: String?

    @Option(name: .customLong("plugin"), help: ArgumentHelp(
        "An external plugin: usm-repair-strategy-<name> on PATH, or a path; implies --strategy manual.", valueName: "name|path"))
    var plugin: String?

    @Option(name: .customLong("param"), help: ArgumentHelp("A recipe or plugin parameter (repeatable).", valueName: "key=value"))
    var params: [String] = []

    @Option(name: .customLong("on-conflict"), help: ArgumentHelp(
        "Rows breaking a uniqueness constraint in a merge: refuse (default), keep-destination or keep-source.", valueName: "policy"))
    var onConflict: ConflictPolicy = .refuse

    @Option(name: .customLong("plugin-timeout"), help: ArgumentHelp("Seconds before an external plugin is stopped (default 600).", valueName: "seconds"))
    var pluginTimeout: Double = 600

    @Flag(name: .customLong("dry-run"), help: "Print the plan (steps and their SQL) and change nothing.")
    var dryRun = false

    @Flag(name: .customLong("keep-ubiquity-metadata"), help: "Keep com.apple.coredata.ubiquity.* keys in the result's metadata.")
    var keepUbiquityMetadata = false

    @Flag(name: .customLong("overwrite"), help: "Replace an existing DST (snapshotted first; needs --yes or a yes at the prompt).")
    var overwrite = false

    @Flag(name: [.short, .customLong("yes")], help: "Do not ask before replacing DST.")
    var yes = false

    @Option(name: .customLong("snapshot-dir"), help: ArgumentHelp(
        "Where the snapshot of a replaced or merged-into DST goes (default $XDG_STATE_HOME/usm-repair/snapshots).", valueName: "dir"),
        completion: .directory)
    var snapshotDir: String?

    @OptionGroup(title: "Output") var output: OutputFlags

    func validate() throws {
        if into && overwrite { throw ValidationError("--into and --overwrite cannot be used together") }
        if recipe != nil && plugin != nil { throw ValidationError("--recipe and --plugin cannot be used together") }
        if let strategy, strategy != "manual", recipe != nil || plugin != nil {
            throw ValidationError("--recipe and --plugin go with --strategy manual, not \(strategy)")
        }
        if pluginTimeout <= 0 { throw ValidationError("--plugin-timeout must be a positive number of seconds") }
        for param in params where !param.contains("=") || param.hasPrefix("=") {
            throw ValidationError("--param takes KEY=VALUE, not \(param.debugDescription)")
        }
    }

    func run(_ context: CommandContext) throws {
        let environment = context.environment
        var parameters: [String: String] = [:]
        for param in params {
            let parts = param.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            parameters[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        let options = MigrationOptions(
            recipe: recipe, plugin: plugin, parameters: parameters, onConflict: onConflict,
            keepUbiquityMetadata: keepUbiquityMetadata, pluginTimeout: pluginTimeout,
            recipeSearchPath: context.recipeSearchPath, environment: environment)
        let destinationFiles = StoreFileSet(main: URL(fileURLWithPath: (destination as NSString).expandingTildeInPath))
        let request = MigrationRequest(
            source: StoreFileSet(main: URL(fileURLWithPath: (source as NSString).expandingTildeInPath)),
            destination: destinationFiles,
            strategy: strategy ?? (recipe != nil || plugin != nil ? "manual" : StrategyRegistry.defaultID),
            mode: into ? .merge : overwrite ? .overwrite : .create, options: options, dryRun: dryRun,
            snapshotDirectory: snapshotDir.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath, isDirectory: true) }
                ?? context.stateFolder.appendingPathComponent("snapshots", isDirectory: true))
        try context.perform({ _ in
            if overwrite, !dryRun, !yes, !destinationFiles.existingMembers().isEmpty,
               !context.confirm("Replace \(destinationFiles.main.path)? It is snapshotted first.") {
                throw USMError.confirmationRequired("\(destinationFiles.main.path) exists; replacing it needs --yes (it is snapshotted first)")
            }
            return try MigrationEngine(registry: context.strategies).run(request)
        }, text: { report, terminal in
            MigrationPrinter(terminal: terminal, verbose: output.verbose, quiet: output.quiet).print(report)
        })
    }
}

extension ConflictPolicy: ExpressibleByArgument {}
