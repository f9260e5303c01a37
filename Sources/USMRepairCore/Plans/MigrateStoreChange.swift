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
    /// The executor (snapshot folder, record of operations, hooks); its builder is this migration's.
    public let executor: PlanExecutor

    public init(request: MigrationRequest, engine: MigrationEngine, executor: PlanExecutor) {
        self.request = request
        self.engine = engine
        self.executor = executor
    }

    /// The plan's shape, shared with `salvage`.
    var replacement: StoreReplacement {
        StoreReplacement(destination: request.destination, operation: "migrate-store", noun: "new store")
    }

    /// The folder the plan works in: DST's.
    public var root: Plan.Root { replacement.root }

    public var command: String { "migrate-store" }

    /// The plan with what it was made on.
    public struct Prepared {
        public let plan: Plan
        /// Interrupted operations finished or undone before planning.
        public let recovered: [PlanExecutor.Recovery]
        /// Planned for a dry run.
        public let dryRun: Bool
        /// When planning began (the report's `durations.total`).
        let started: Date
        /// DST exists and is replaced (`--overwrite`): asked first.
        let replacing: Bool
    }

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
            if (request.choice.id ?? request.strategy) == StrategyRegistry.defaultID {
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
            plan: plan, recovered: recovered, dryRun: dryRun, started: started,
            replacing: request.mode == .overwrite && exists)
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? {
        guard prepared.replacing else { return nil }
        let path = request.destination.main.path
        return ChangeConsent(
            unattended: "\(path) exists; replacing it needs --yes (it is snapshotted first)",
            question: "Replace \(path)? It is snapshotted first.")
    }

    /// The envelope around the engine's report.
    func report(_ prepared: Prepared, _ details: MigrationReport, result: PlanExecutor.Result?) -> ChangeReport<
        MigrationReport
    > {
        var details = details
        details.durations["total"] = Date().timeIntervalSince(prepared.started)
        let destination = request.destination.main.path
        return ChangeReport(
            command: command,
            operation: [
                "migrate-store", request.mode == .merge ? "--into" : request.mode == .overwrite ? "--overwrite" : nil,
            ]
            .compactMap { $0 }.joined(separator: " "), dryRun: prepared.dryRun,
            noOp: false, changed: result != nil,
            steps: ChangeStep.list(prepared.plan, result: result), snapshot: result?.snapshot,
            notes: details.notes + (result?.leftovers ?? []).map(ChangeNotes.leftover),
            recovered: prepared.recovered + (result?.recovered ?? []),
            seconds: details.durations["total"] ?? 0,
            nextStep: result == nil
                ? "run it without --dry-run to build, verify and install \(destination)"
                : "the app opens \(destination) as it opens any store of its model; usm-repair check \(ShellWords.quote(destination)) checks it",
            status: details.exitStatus, details: details)
    }

    /// What the run would build: the engine's preview (its steps, the rows it would copy).
    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<
        MigrationReport
    > {
        let merge = request.mode == .merge
        let details = try engine.preview(
            source: request.source, shownAs: request.destination, strategy: request.choice.id ?? request.strategy,
            options: request.options, mergeInto: merge ? request.destination : nil, mode: request.mode)
        return report(prepared, details, result: nil)
    }

    /// Runs the plan: the engine builds and verifies the staged store, the executor installs it.
    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<
        MigrationReport
    > {
        let plan = prepared.plan
        let engine = self.engine
        let request = self.request
        let executor = self.executor.with(builder: { build in
            var options = build.strategy.options(
                keepUbiquityMetadata: build.keepUbiquityMetadata, recipeSearchPath: request.options.recipeSearchPath,
                environment: request.options.environment)
            options.newIdentity = request.options.newIdentity
            options.model = request.options.model
            return try engine.build(
                source: StoreFileSet(main: URL(fileURLWithPath: build.source)),
                staged: URL(fileURLWithPath: build.staged),
                shownAs: request.destination, strategy: build.strategy.id ?? request.strategy, options: options,
                mergeInto: build.mergeInto.map { StoreFileSet(main: URL(fileURLWithPath: $0)) }, mode: request.mode)
        })
        let result = try executor.run(plan, progress: progress)
        guard var details = result.builds[request.destination.main.path] else {
            throw USMError.unexpected("the migration's plan ran without building \(request.destination.main.path)")
        }
        details.snapshot = result.snapshot
        details.durations["install"] = StoreReplacement.installSeconds(plan, result)
        return report(prepared, details, result: result)
    }
}
