import Foundation

/// A maintenance operation (the eleven `Maintenance` cases) as a `Change`: recover what a kill
/// left pending, plan, (optionally) run, and inspect the result.
public struct MaintenanceChange: Change {
    /// The operation's own part of the report (`details`).
    public struct Details: Sendable, Encodable {
        /// What the plan does to the customer's data: every store it reads or touches, objects
        /// per entity now and after, where the data goes, and what the app shows before and after.
        @NullEncoded public var ledger: Ledger?
        /// The ledger's first line, for people.
        @NullEncoded public var headline: String?
        public let planID: String
        public let roots: [Plan.Root]
        /// Rows per entity of every store written (by path): before (the source) and after.
        public let rows: [String: [String: Int]]
        /// The next launch before the operation, predicted after it, and (after a run) found by `status` on the result.
        public let nextLaunch: NextLaunchChange
    }

    /// What an operation reports: the one envelope with the operation's details.
    public typealias Report = ChangeReport<Details>

    /// The next launch around an operation.
    public struct NextLaunchChange: Sendable, Encodable {
        @NullEncoded public var before: NextLaunch?
        @NullEncoded public var predicted: NextLaunch?
        /// What `status` predicts on the files the operation left (null in a dry run).
        @NullEncoded public var after: NextLaunch?
    }

    public let options: LayoutOptions
    public let maintenance: Maintenance
    /// Runs the plan (and recovers what a kill left pending): snapshot folder, migration engine,
    /// the record of operations, hooks.
    public let executor: PlanExecutor
    /// Decides and checks the strategy of a build step, at planning.
    public let strategies: StrategyResolver
    /// The losses and duplications the user allowed.
    public let consent: DataConsent
    /// The app's model (`--model`), for a store salvaged at planning (`--salvage`).
    public var model: ManagedObjectModel?

    public init(
        options: LayoutOptions, maintenance: Maintenance, executor: PlanExecutor, strategies: StrategyResolver,
        consent: DataConsent = DataConsent()
    ) {
        self.options = options
        self.maintenance = maintenance
        self.executor = executor
        self.strategies = strategies
        self.consent = consent
    }

    /// A plan with what it was made on.
    public struct Prepared: Sendable {
        public let plan: Plan
        /// The report of the layout the plan was made on.
        public let report: StatusReport
        /// The folders the user named (the layout's): pending operations are obeyed only inside them.
        public let roots: [Plan.Root]
        /// Interrupted operations finished or undone before planning.
        public let recovered: [PlanExecutor.Recovery]
        /// Planned for a dry run.
        public let dryRun: Bool
        /// What planning found outside the files (a Mac app running now, in a dry run).
        public var notes: [String] = []
    }

    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) -> Report {
        report(
            prepared.plan, before: prepared.report, result: nil, after: nil, recovered: prepared.recovered,
            dryRun: prepared.dryRun, notes: prepared.notes)
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? {
        prepared.plan.isNoOp ? nil : .plan(maintenance.command)
    }

    public var command: String { maintenance.commandPath }

    /// Plans (recovering first what a kill left pending, unless `dryRun`, which refuses then) and
    /// returns the plan with the report of the layout it was made on.
    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        ProgressNote.say("planning \(maintenance.command): reading the layout")
        var layout = try Layout.discover(options, records: executor.records)
        try Snapshot.refuseInside(executor.snapshotDirectory, protected: layout.folders, why: "a folder of the layout")
        let recovered = try executor.recoverBeforePlanning(in: layout.planRoots, dryRun: dryRun)
        // One read of the layout plans it, unless recovery has just changed the files.
        if !recovered.isEmpty { layout = try Layout.discover(options, records: executor.records) }
        ProgressNote.say("planning \(maintenance.command): reading the stores")
        let prepared = try Planner.prepare(
            layout, maintenance, strategies: strategies, consent: consent, records: executor.records, model: model)
        var result = Prepared(
            plan: prepared.plan, report: prepared.report, roots: prepared.layout.planRoots, recovered: recovered,
            dryRun: dryRun)
        // A store another process has open: the run refuses it (exit 5); a dry run says so now.
        if dryRun {
            for store in prepared.plan.stores {
                guard let busy = StoreLocks.busy(StoreFileSet(main: URL(fileURLWithPath: store))) else { continue }
                result.notes.append(
                    "\(busy.path) is in use: \(busy.reason)\(busy.pid.map { " (process \($0))" } ?? ""): running this plan now would refuse (exit 5); quit the app first"
                )
            }
        }
        // A Mac app works on these very files while it runs: refused (exit 5), or said in a dry run.
        if let bundleID = options.macApp, !prepared.plan.isNoOp {
            if dryRun {
                if let process = RunningApp.find(bundleID: bundleID).first {
                    result.notes.append(
                        "the app \(bundleID) is running now (process \(process.pid), \(process.executable)): quit it before running this plan, which refuses while it runs"
                    )
                }
            } else {
                try RunningApp.refuseWhileRunning(bundleID: bundleID)
            }
        }
        return result
    }

    /// Runs a plan and inspects the result.
    public func run(_ prepared: Prepared, progress: (String) -> Void) throws -> Report {
        let plan = prepared.plan
        let before = prepared.report
        let recovered = prepared.recovered
        guard !plan.isNoOp else {
            return report(plan, before: before, result: nil, after: nil, recovered: recovered, dryRun: false)
        }
        // Asked again after consent: the app may have been started meanwhile.
        if let bundleID = options.macApp { try RunningApp.refuseWhileRunning(bundleID: bundleID) }
        let result = try executor.run(plan, allowed: prepared.roots, progress: progress)
        // What the next launch will be, from the files as the operation left them (read as far as
        // the prediction needs: the files, headers and small files, not every page).
        var inspection = Inspection(options: options, depth: .light)
        inspection.records = executor.records
        let after = try? inspection.run()
        return report(
            plan, before: before, result: result, after: after, recovered: recovered + result.recovered, dryRun: false)
    }

    /// The report of a plan, run (`result`) or not.
    public func report(
        _ plan: Plan, before: StatusReport, result: PlanExecutor.Result?, after: StatusReport?,
        recovered: [PlanExecutor.Recovery],
        dryRun: Bool, notes extra: [String] = []
    ) -> Report {
        let steps = Report.Step.list(plan, result: result)
        let changed = result != nil && !plan.isNoOp
        var rows: [String: [String: Int]] = [:]
        for (path, counted) in result?.rows ?? [:] { rows[path] = counted }
        for step in plan.steps {
            // A store rebuilt from itself (`rebuild --from local --salvage`) shows the result's rows.
            if case let .build(build) = step.action, rows[build.source] == nil,
                let source = before.stores.first(where: { $0.path == build.source })
            {
                rows[build.source] = Dictionary(source.entities.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
            }
        }
        // After a run, a built store's objects are the ones counted in the result.
        var ledger = plan.ledger
        if let result, var updated = ledger {
            for index in updated.stores.indices {
                guard let actual = result.rows[updated.stores[index].path] else { continue }
                let names = Set((updated.stores[index].now?.entities.keys).map(Array.init) ?? []).union(
                    updated.stores[index].after?.entities.keys ?? [:].keys)
                updated.stores[index].after = Ledger.Counts(
                    names.isEmpty ? actual : actual.filter { names.contains($0.key) })
                if updated.stores[index].matched != nil, let build = result.builds[updated.stores[index].path] {
                    updated.stores[index].matched = build.matched.filter { $0.value > 0 }
                }
            }
            ledger = updated
        }
        return Report(
            command: maintenance.commandPath, operation: plan.operation, dryRun: dryRun, noOp: plan.isNoOp,
            changed: changed, steps: steps, snapshot: result?.snapshot,
            notes: plan.notes + extra + Self.buildNotes(result) + (result?.leftovers ?? []).map(ChangeNotes.leftover)
                + (result?.notes ?? []),
            recovered: recovered, seconds: result?.seconds ?? 0,
            nextStep: NextStep.describe(
                plan, options: options, preferencesPath: before.layout.preferences.map { URL(fileURLWithPath: $0) },
                dryRun: dryRun),
            details: Details(
                ledger: ledger, headline: ledger?.headline(done: changed), planID: plan.id, roots: plan.roots,
                rows: rows,
                nextLaunch: NextLaunchChange(
                    before: plan.nextLaunchBefore, predicted: plan.nextLaunchAfter, after: after?.nextLaunch)))
    }
}

extension MaintenanceChange {
    /// What the migration engine said about each store it built (counters raised, what was left
    /// out and why), named by the store's final path.
    static func buildNotes(_ result: PlanExecutor.Result?) -> [String] {
        (result?.builds ?? [:]).sorted { $0.key < $1.key }.flatMap { path, build in
            (build.notes + build.leftOut).map { "\(URL(fileURLWithPath: path).lastPathComponent): \($0)" }
        }
    }
}

extension Plan.Action {
    /// The paths an action touches, for reports.
    public var paths: [String] {
        switch self {
        case .snapshot, .commit, .purge: []
        case let .checkpoint(source, staged): [source, staged]
        case let .build(build): [build.source, build.staged] + (build.mergeInto.map { [$0] } ?? [])
        case let .writeMarker(_, staged): [staged]
        case let .writePreferences(source, _, staged): [source, staged]
        case let .extract(archive, _, folders): [archive] + folders.values.sorted()
        case let .retire(path, trash): [path, trash]
        case let .install(staged, path, _): [staged, path]
        }
    }
}
