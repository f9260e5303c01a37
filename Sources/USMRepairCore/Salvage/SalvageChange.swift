import Foundation
import Synchronization

/// What `salvage` was asked: values only, so the CLI and the repair operations call it alike.
public struct SalvageRequest: Sendable {
    /// The damaged store's file set (only ever read).
    public var source: StoreFileSet
    /// Where the salvaged store goes.
    public var destination: StoreFileSet
    /// A healthy store of the same model (`--schema-from`), for what the damaged one lost.
    public var schemaFrom: StoreFileSet?
    /// The app's model (`--model`): relationships when the store has no model cache, entity numbers.
    public var model: ManagedObjectModel?
    /// Replace an existing destination (snapshotted first).
    public var overwrite: Bool
    /// Keep `com.apple.coredata.ubiquity.*` keys in the result's metadata.
    public var keepUbiquityMetadata: Bool

    public init(
        source: StoreFileSet, destination: StoreFileSet, schemaFrom: StoreFileSet? = nil,
        model: ManagedObjectModel? = nil,
        overwrite: Bool = false, keepUbiquityMetadata: Bool = false
    ) {
        self.source = source
        self.model = model
        self.destination = destination
        self.schemaFrom = schemaFrom
        self.overwrite = overwrite
        self.keepUbiquityMetadata = keepUbiquityMetadata
    }
}

/// `salvage SRC DST`: the damaged file set read with salvage's own reader into a private store,
/// made consistent (`CoreDataConsistency`), then built, verified and installed at DST by the
/// migration engine (`ios` from that private store) as a journaled plan, like `migrate-store`:
/// 1. `snapshot` — when DST exists (`--overwrite`): its file set, outside its folder;
/// 2. `build` — salvage, the Core Data pass, the engine's staging and verification;
/// 3. `retire` — DST's old members; 4. `install` — the staged main file and `_SUPPORT` folder;
/// 5. `commit`, `purge`. A kill at any instant is finished or undone by `recover --store DST`.
public struct SalvageChange: Change {
    public let request: SalvageRequest
    public let engine: MigrationEngine
    public let executor: PlanExecutor

    public init(request: SalvageRequest, engine: MigrationEngine, executor: PlanExecutor) {
        self.request = request
        self.engine = engine
        self.executor = executor
    }

    /// The plan's shape, shared with `migrate-store` and `dedupe`.
    var replacement: StoreReplacement {
        StoreReplacement(destination: request.destination, operation: "salvage", noun: "salvaged store")
    }

    public var command: String { "salvage" }

    public typealias Prepared = StoreReplacement.Prepared<Void>

    /// Checks the request and plans it; recovers first what a kill left pending in DST's folder
    /// (a dry run refuses then, exit 7).
    /// - Throws: `usage` (SRC is DST), `notFound`, `destinationExists`, `interruptedOperation`...
    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        let started = Date()
        let request = self.request
        let replacement = self.replacement
        let recovered = try replacement.prepare(
            source: request.source,
            sameStore:
                "the source and the destination are the same store; salvage never writes over the damaged store",
            executor: executor, dryRun: dryRun,
            also: {
                if let sibling = request.schemaFrom, FileStatus.lookup(sibling.main.path) == nil {
                    throw USMError.notFound(path: sibling.main.path, what: "--schema-from store")
                }
            })
        let replacing = !request.destination.existingMembers().isEmpty
        if replacing, !request.overwrite { throw USMError.destinationExists(path: request.destination.main.path) }
        let plan = try replacement.plan(
            replacing: replacing,
            why:
                "every intact row of the damaged file set is read into a private store, made consistent, then staged and verified by the migration engine",
            label: nil
        ) { staged in
            .init(
                source: request.source.main.path, staged: staged, strategy: StrategyChoice(id: "ios"), mergeInto: nil,
                keepUbiquityMetadata: request.keepUbiquityMetadata, operation: "salvage")
        }
        return Prepared(
            plan: plan, recovered: recovered, dryRun: dryRun, replacing: replacing, started: started, extra: ())
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? { replacement.consent(prepared) }

    /// The envelope around salvage's report.
    func report(_ prepared: Prepared, _ details: SalvageReport, result: PlanExecutor.Result?) -> ChangeReport<
        SalvageReport
    > {
        replacement.report(
            prepared, command: command, operation: request.overwrite ? "salvage --overwrite" : "salvage",
            details: details, result: result,
            done:
                "usm-repair check \(ShellWords.quote(request.destination.main.path)) checks the salvaged store; the lines above say what was lost"
        )
    }

    /// The schema sibling (`--schema-from`), read.
    private func sibling() throws -> SiblingSchema? {
        try request.schemaFrom.map { files -> SiblingSchema in
            let scratch = try TemporaryDirectory(prefix: "usm-repair-sibling")
            defer { scratch.remove() }
            return try SiblingSchema.read(files, scratch: scratch.url)
        }
    }

    /// What the run would salvage: salvage's reader into a private scratch store (nothing at DST).
    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<
        SalvageReport
    > {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-salvage")
        defer { scratch.remove() }
        let details = try Self.salvage(
            request, sibling: try sibling(), into: scratch.url.appendingPathComponent(request.destination.fileName),
            dryRun: prepared.dryRun, progress: progress)
        return report(prepared, details, result: nil)
    }

    /// Runs the plan: salvage, the Core Data pass and the engine build the staged store; the
    /// executor installs it.
    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<
        SalvageReport
    > {
        let request = self.request
        let engine = self.engine
        let sibling = try sibling()
        let box = Mutex<SalvageReport?>(nil)
        let (result, installSeconds) = try replacement.run(
            prepared, executor: executor,
            builder: { build in
                var options = MigrationOptions(keepUbiquityMetadata: build.keepUbiquityMetadata)
                options.operation = "salvage"
                let (report, migration) = try Self.build(
                    request, sibling: sibling, engine: engine, staged: URL(fileURLWithPath: build.staged),
                    options: options)
                box.withLock { $0 = report }
                return migration
            }, progress: progress)
        guard var details = box.withLock({ $0 }) else {
            throw USMError.unexpected("the salvage plan ran without building \(request.destination.main.path)")
        }
        details.snapshot = result.snapshot
        details.durations["install"] = installSeconds
        return report(prepared, details, result: result)
    }

    /// Salvages `request.source` into a private store and has the migration engine build, verify
    /// and finish the result at `staged` with `strategy` from that store (merging into a copy of
    /// `mergeInto` when given; its external data read from the source's folder; its `Z_UUID` kept
    /// when the metadata was and `keepIdentity`). Installs nothing. The executor's builder for
    /// `salvage`'s plan, and for the build step of an operation that seeds from a salvaged copy
    /// (`SalvageSeed`; the migration report carries what salvage could not read).
    /// `options`: the strategy's options; the salvage's own (`supportFilesOf`, `keepStoreUUID`,
    /// `model`) are set here.
    static func build(
        _ request: SalvageRequest, sibling: SiblingSchema? = nil, engine: MigrationEngine, staged: URL,
        strategy: String = "ios", options: MigrationOptions, mergeInto: StoreFileSet? = nil, keepIdentity: Bool = true,
        progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) throws -> (SalvageReport, MigrationReport) {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-salvage")
        defer { scratch.remove() }
        let intermediate = scratch.url.appendingPathComponent(request.destination.fileName)
        var report = try Self.salvage(request, sibling: sibling, into: intermediate, progress: { _ in })
        let clock = Date()
        var options = options
        options.supportFilesOf = request.source
        if keepIdentity {
            options.newIdentity = false
            options.keepStoreUUID = report.metadata == "kept"
        }
        options.model = request.model
        var migration = try engine.build(
            source: StoreFileSet(main: intermediate), staged: staged, shownAs: request.destination, strategy: strategy,
            options: options, mergeInto: mergeInto, mode: mergeInto == nil ? .create : .merge, progress: progress)
        migration.source = .init(path: request.source.main.path, storeUUID: report.source.storeUUID)
        // What the build could not read is the loss a plan's report must show.
        migration.notes += report.unreadable.map { "salvage: not read: \($0)" }
        for table in report.tables where table.lostCells > 0 || table.lostPages > 0 || !table.dropped.isEmpty {
            migration.leftOut.append(
                "salvage: \(table.name): \(table.lostCells) cells and \(table.lostPages) pages could not be read\(table.dropped.isEmpty ? "" : ", \(table.dropped.values.reduce(0, +)) rows left out")"
            )
        }
        for cut in report.referencesCut {
            migration.leftOut.append(
                "salvage: \(cut.table).\(cut.column): \(cut.rows) \(cut.kind) references cut (they pointed at lost rows)"
            )
        }
        report.verification = migration.verification
        report.destination.storeUUID = migration.destination.storeUUID
        report.durations["build"] = Date().timeIntervalSince(clock)
        return (report, migration)
    }

    /// Reads `request.source` into a private store at `url` and makes it consistent.
    /// `dryRun`: the report says it was read for a dry run (nothing is installed from it).
    static func salvage(
        _ request: SalvageRequest, sibling: SiblingSchema?, into url: URL, dryRun: Bool = false,
        progress: (String) -> Void
    ) throws -> SalvageReport {
        var clock = Date()
        let outcome = try Salvager(source: request.source, sibling: sibling).run(
            into: url, dryRun: dryRun, progress: progress)
        var report = outcome.report
        report.destination = .init(path: request.destination.main.path)
        report.durations["read"] = Date().timeIntervalSince(clock)
        clock = Date()
        progress("making the salvaged rows a consistent Core Data store")
        do {
            try CoreDataConsistency(sibling: sibling, model: request.model, source: request.source).run(
                url, report: &report)
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: url)
        }
        report.source.storeUUID = report.metadata == "kept" ? try Self.storeUUID(url) : nil
        report.durations["consistency"] = Date().timeIntervalSince(clock)
        return report
    }

    /// `Z_METADATA.Z_UUID` of the private store.
    private static func storeUUID(_ url: URL) throws -> String? {
        let queue = try StagedStore.open(url, readonly: true)
        defer { try? queue.close() }
        return try queue.read { db in try String.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA LIMIT 1") }
    }
}
