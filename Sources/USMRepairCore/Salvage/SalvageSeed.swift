import Foundation

/// A damaged store an operation reads with `--salvage` (`rebuild --from local --salvage`,
/// `migrate cloud-to-local --salvage`): salvage's own reader reads its file set into a private
/// store (SQLite never opens the damaged files), and the operation's strategy builds from that
/// copy. Twice, with the same reader and the same files: at planning (`preview`), so that the
/// dry run and the prompt count what is kept and what is lost before anything is written; and in
/// the plan's build step (`build`), whose result the executor installs.
public struct SalvageSeed {
    /// The salvage's report: tables, losses, cuts, what could not be read.
    public let report: SalvageReport
    /// The salvaged private store as `status` reads it (its objects per entity).
    public let inspected: StoreReport
    /// The salvaged private store: what the plan's comparisons read in place of the damaged one.
    public let files: StoreFileSet
    private let scratch: TemporaryDirectory

    /// Salvages `source` into a private scratch folder (removed by `remove`).
    /// - Throws: what `salvage` throws (`notSQLite`, `sourceDamaged` without a schema, `notCoreData`...).
    public static func preview(source: StoreFileSet, schemaFrom: StoreFileSet?, model: ManagedObjectModel?) throws
        -> SalvageSeed
    {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-salvage-plan")
        do {
            let sibling = try schemaFrom.map { try Self.sibling($0) }
            let folder = scratch.url.appendingPathComponent("store", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let files = StoreFileSet(main: folder.appendingPathComponent(source.fileName))
            let request = SalvageRequest(source: source, destination: files, schemaFrom: schemaFrom, model: model)
            let report = try SalvageChange.salvage(
                request, sibling: sibling, into: files.main, dryRun: true, progress: { _ in })
            let inspected = StoreInspector(depth: .status).inspect(
                files, role: .store, confinement: Confinement(root: folder))
            if let failure = inspected.readFailure { throw failure }
            return SalvageSeed(report: report, inspected: inspected, files: files, scratch: scratch)
        } catch {
            scratch.remove()
            throw error
        }
    }

    /// Removes the private copy.
    public func remove() { scratch.remove() }

    /// The objects the salvaged copy holds, as the ledger counts objects.
    public var counts: Ledger.Counts? { Ledger.counts(inspected) }

    /// What the ledger says of the damaged store: objects readable, rows known lost, references
    /// cut; `counted`, the objects SQLite could count in it at planning (nil when it could not).
    public func ledger(counted: Int?) -> Ledger.Salvage {
        // Rows of the tables that hold the app's objects (not Core Data's bookkeeping, history or
        // join tables): a lost row there is a lost object.
        let tables = Set(inspected.entities.filter { !$0.system }.compactMap { $0.table?.uppercased() })
        let objectTables = report.tables.filter { tables.contains($0.name.uppercased()) }
        return Ledger.Salvage(
            readable: counts ?? Ledger.Counts([:]),
            lost: objectTables.map(\.lostCells).reduce(0, +),
            lostPages: objectTables.map(\.lostPages).reduce(0, +) + report.unplacedPages,
            leftOut: objectTables.map { $0.dropped.values.reduce(0, +) }.reduce(0, +),
            referencesCut: report.referencesCut.map(\.rows).reduce(0, +),
            unreadable: report.unreadable, counted: counted)
    }

    /// The build step of a plan whose source is damaged: `build.source` salvaged into a private
    /// store, then `build.strategy` from it into `build.staged` (merging into a copy of
    /// `build.mergeInto`), verified by the migration engine. Installs nothing; the executor does.
    /// `options`: the strategy's options as the executor's builder makes them.
    public static func build(
        _ build: Plan.StoreBuild, salvage: Plan.SalvageSource, engine: MigrationEngine, options: MigrationOptions,
        model: ManagedObjectModel?, progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) throws -> MigrationReport {
        let staged = URL(fileURLWithPath: build.staged)
        let schemaFrom = salvage.schemaFrom.map { StoreFileSet(main: URL(fileURLWithPath: $0)) }
        let request = SalvageRequest(
            source: StoreFileSet(main: URL(fileURLWithPath: build.source)), destination: StoreFileSet(main: staged),
            schemaFrom: schemaFrom, model: model, keepUbiquityMetadata: build.keepUbiquityMetadata)
        return try SalvageChange.build(
            request, sibling: try schemaFrom.map { try Self.sibling($0) }, engine: engine, staged: staged,
            strategy: build.strategy.resolvedID(), options: options,
            mergeInto: build.mergeInto.map { StoreFileSet(main: URL(fileURLWithPath: $0)) },
            keepIdentity: salvage.keepIdentity, progress: progress
        ).1
    }

    /// The schema of a healthy store of the same model (`--schema-from`).
    static func sibling(_ files: StoreFileSet) throws -> SiblingSchema {
        guard FileStatus.lookup(files.main.path) != nil else {
            throw USMError.notFound(path: files.main.path, what: "--schema-from store")
        }
        let scratch = try TemporaryDirectory(prefix: "usm-repair-sibling")
        defer { scratch.remove() }
        return try SiblingSchema.read(files, scratch: scratch.url)
    }
}
