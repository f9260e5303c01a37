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

            Default strategy: \(StrategyChoice.migrateStoreDefaultRule).

            The result keeps the identity (Z_UUID) of the store it replaces (--overwrite), of its \
            source after a whole-store repair recipe, of DST in a merge; otherwise, or with \
            --new-identity, it gets a new one.

            Exit codes: 0 migrated; 2 bad input (not a Core Data store, damaged, schema mismatch, \
            invalid recipe); 3 refused (DST exists, uniqueness conflict, plugin touched what it \
            must not, --yes missing); 8 refused to lose data without a flag (CloudKit mirroring rows \
            in a merge: --drop-cloudkit); 10 migration failed (strategy, recipe step, plugin or \
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

    @OptionGroup(title: "Strategy") var strategy: StrategyFlags

    @Flag(name: .customLong("into"), help: "Merge into the existing store DST (copy-entities and manual).")
    var into = false

    @OptionGroup var duplicates: AllowDuplicatesFlag<IntoDuplicatesHelp>

    var allowDuplicates: Bool { duplicates.allowDuplicates }

    @OptionGroup var replacing: ReplacingFlags

    @Flag(
        name: .customLong("new-identity"),
        help: ArgumentHelp(
            "Give the result a new store UUID (Z_UUID) even where it keeps the replaced store's (--overwrite) or its source's (a whole-store repair recipe)."
        ))
    var newIdentity = false

    @OptionGroup(title: "Plan") var plan: ChangeFlags

    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags

    @OptionGroup(title: "Output") var output: OutputFlags

    func validate() throws {
        if into && replacing.overwrite { throw ValidationError("--into and --overwrite cannot be used together") }
        if allowDuplicates && !into { throw ValidationError("--allow-duplicates goes with --into") }
        if into && newIdentity {
            throw ValidationError("--new-identity cannot be used with --into: a merge keeps the destination's identity")
        }
    }

    func run(_ context: CommandContext) throws {
        let choice = strategy.choice
        var options = choice.options(
            keepUbiquityMetadata: replacing.keepUbiquityMetadata, recipeSearchPath: context.recipeSearchPath,
            environment: context.environment)
        options.newIdentity = newIdentity
        options.allowDuplicates = allowDuplicates
        options.model = try strategy.loadedModel(context.paths)
        let request = MigrationRequest(
            source: StoreFileSet(main: context.paths.url(source)),
            destination: StoreFileSet(main: context.paths.url(destination)),
            strategy: choice.resolvedID(), mode: into ? .merge : replacing.overwrite ? .overwrite : .create,
            options: options)
        let migration = MigrateStoreChange(
            request: request, engine: MigrationEngine(registry: context.strategies),
            executor: context.executor(snapshotDirectory: snapshots.directory(context.paths)))
        try context.runChange(migration, flags: plan) { report, terminal, preview in
            guard !output.quiet || preview else { return }
            MigrationPrinter(terminal: terminal, verbose: output.verbose).print(report, preview: preview)
        }
    }
}
