import Foundation

/// `migrate-store SRC DST` as a plan run by `PlanExecutor`, like every other change on disk: a
/// kill at any instant is finished or undone by `recover` (or the next run in DST's folder), and
/// nothing of it is left beside DST.
///
/// The plan works in DST's folder (`<folder>/.usm-repair/`):
/// 1. `snapshot` — when DST exists (`--overwrite`, `--into`): its file set, outside that folder;
/// 2. `build` — the engine fills and verifies a staged store from a private copy of SRC (merging
///    into a copy of DST for `--into`);
/// 3. `retire` — DST's old members, when it exists;
/// 4. `install` — the staged main file and its external-data folder;
/// 5. `commit`, `purge`.
public struct MigrateStoreChange: Change {
    public let request: MigrationRequest
    public let engine: MigrationEngine
    /// The executor (snapshot folder, record of operations, hooks); its builder is this migration's
    /// (`StoreBuilder` with DST and the mode).
    public let executor: PlanExecutor

    public init(request: MigrationRequest, engine: MigrationEngine, executor: PlanExecutor) {
        self.request = request
        self.engine = engine
        self.executor = executor
    }

    /// The plan's shape, shared with `salvage` and `dedupe`.
    var replacement: StoreReplacement {
        StoreReplacement(destination: request.destination, operation: "migrate-store", noun: "new store")
    }

    public var command: String { "migrate-store" }

    public typealias Prepared = StoreReplacement.Prepared<Void>

    /// Checks the request and plans it; recovers first what a kill left pending in DST's folder
    /// (a dry run refuses then, exit 7).
    /// - Throws: `usage`, `notFound`, `destinationExists`, `unknownStrategy`, `recipeInvalid`...
    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        let started = Date()
        let source = request.source
        let destination = request.destination
        let merge = request.mode == .merge
        let replacement = self.replacement
        let recovered = try replacement.prepare(
            source: source, sameStore: "the source and the destination are the same store", executor: executor,
            dryRun: dryRun,
            also: {
                _ = try engine.registry.resolve(
                    request.choice, defaultID: request.strategy, merge: merge,
                    recipeSearchPath: request.options.recipeSearchPath,
                    environment: request.options.environment)
            })
        let exists = !destination.existingMembers().isEmpty
        if merge {
            guard FileStatus.lookup(destination.main.path) != nil else {
                throw USMError.notFound(path: destination.main.path, what: "destination store to merge into")
            }
            // Models that differ where the merge cannot follow: refused while planning, before a snapshot.
            if request.strategy == StrategyRegistry.defaultID {
                try EntityCopy.preflight(source: source, destination: destination, model: request.options.model)
            }
        } else if exists && request.mode == .create {
            throw USMError.destinationExists(path: destination.main.path)
        }
        let plan = try replacement.plan(
            replacing: merge || (request.mode == .overwrite && exists),
            why:
                "the \(request.strategy) strategy fills a staged store from a private copy of the source; it is verified before anything is installed",
            label: destination.main.deletingPathExtension().lastPathComponent
        ) { staged in
            .init(
                source: source.main.path, staged: staged, strategy: request.choice,
                mergeInto: merge ? destination.main.path : nil,
                keepUbiquityMetadata: request.options.keepUbiquityMetadata)
        }
        return Prepared(
            plan: plan, recovered: recovered, dryRun: dryRun, replacing: request.mode == .overwrite && exists,
            started: started, extra: ())
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? { replacement.consent(prepared) }

    /// The envelope around the engine's report.
    func report(_ prepared: Prepared, _ details: MigrationReport, result: PlanExecutor.Result?) -> ChangeReport<
        MigrationReport
    > {
        let destination = request.destination.main.path
        return replacement.report(
            prepared, command: command,
            operation: [
                "migrate-store", request.mode == .merge ? "--into" : request.mode == .overwrite ? "--overwrite" : nil,
            ]
            .compactMap { $0 }.joined(separator: " "), details: details, result: result,
            done:
                "the app opens \(destination) as it opens any store of its model; usm-repair check \(ShellWords.quote(destination)) checks it"
        )
    }

    /// What the run would build: the engine's preview (its steps, the rows it would copy).
    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<
        MigrationReport
    > {
        let merge = request.mode == .merge
        let details = try engine.preview(
            source: request.source, shownAs: request.destination, strategy: request.strategy,
            options: request.options, mergeInto: merge ? request.destination : nil, mode: request.mode)
        return report(prepared, details, result: nil)
    }

    /// Runs the plan: the engine builds and verifies the staged store, the executor installs it.
    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<
        MigrationReport
    > {
        let builder = StoreBuilder(
            engine: engine, recipeSearchPath: request.options.recipeSearchPath,
            environment: request.options.environment, model: request.options.model,
            newIdentity: request.options.newIdentity, shownAs: request.destination, mode: request.mode)
        let (result, installSeconds) = try replacement.run(
            prepared, executor: executor, builder: builder.builder, progress: progress)
        guard var details = result.builds[request.destination.main.path] else {
            throw USMError.unexpected("the migration's plan ran without building \(request.destination.main.path)")
        }
        details.snapshot = result.snapshot
        details.durations["install"] = installSeconds
        return report(prepared, details, result: result)
    }
}
