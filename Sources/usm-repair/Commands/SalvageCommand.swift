import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair salvage SRC DST`: every intact row of a damaged store into a new, healthy one.
struct SalvageCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Build a healthy Core Data store from every intact row of a damaged one.",
        discussion: """
            For the store SQLite will not open or check ("database disk image is malformed", a torn \
            page, a truncated file, a -wal whose frames do not match, a zeroed header). SRC's file set \
            is read with usm-repair's own reader of the SQLite file format, never changed: the header \
            (or a page size found from the pages), the -wal frames of its last valid commit, every \
            table from its root, and pages no intact tree leads to, placed in a table only when their \
            rows fit it and nothing else. Core Data is then made consistent (Z_MAX, Z_PRIMARYKEY, \
            to-one keys and join rows pointing at lost rows cut, external-data references checked, \
            Z_METADATA kept) and the result is staged, verified and installed by the migration engine \
            as migrate-store does. The report lists per table the rows salvaged, the cells known lost, \
            the pages that could not be read and why, and every reference cut.

            Exit codes: 0 salvaged, nothing lost; 1 salvaged, something lost or cut (the report says \
            what); 2 nothing to salvage from (not an SQLite file, no schema and no --schema-from); 3 \
            DST exists (--overwrite --yes replaces it, snapshotted first); 10 the result failed \
            verification (nothing installed); 64 usage; 66 SRC or DST's folder not found; 74 I/O \
            error, or SRC changed while it was read; 75 out of space.

            Examples:
              usm-repair salvage Damaged.sqlite Salvaged.sqlite
              usm-repair salvage Damaged.sqlite Salvaged.sqlite --dry-run --json
              usm-repair salvage Damaged.sqlite Out.sqlite --schema-from Sibling.sqlite
              usm-repair salvage Damaged.sqlite Out.sqlite --model Garage.xcdatamodeld
            """)

    @Argument(
        help: ArgumentHelp("The damaged store's main file (its -wal beside it is read too).", valueName: "src"),
        completion: .file())
    var source: String

    @Argument(help: ArgumentHelp("The new store's main file.", valueName: "dst"), completion: .file())
    var destination: String

    @OptionGroup var schema: SchemaFromFlag<SalvageSchemaHelp>

    @OptionGroup var model: ModelFlag<SalvageModelHelp>

    @OptionGroup var replacing: ReplacingFlags

    @OptionGroup(title: "Plan") var plan: ChangeFlags

    @OptionGroup(title: "Plan") var snapshots: SnapshotFlags

    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        // Every path flag through the one resolver (`~`, relative to the working folder).
        func files(_ path: String) -> StoreFileSet { StoreFileSet(main: context.paths.url(path)) }
        let request = SalvageRequest(
            source: files(source), destination: files(destination), schemaFrom: schema.schemaFrom.map(files),
            model: try model.loaded(context.paths),
            overwrite: replacing.overwrite, keepUbiquityMetadata: replacing.keepUbiquityMetadata)
        let salvage = SalvageChange(
            request: request, engine: MigrationEngine(registry: context.strategies),
            executor: context.executor(snapshotDirectory: snapshots.directory(context.paths)))
        try context.runChange(salvage, flags: plan) { report, terminal, preview in
            SalvagePrinter(terminal: terminal, verbose: output.verbose, quiet: output.quiet).print(
                report, preview: preview)
        }
    }
}
