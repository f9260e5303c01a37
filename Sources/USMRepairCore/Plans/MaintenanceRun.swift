import Foundation

/// A maintenance operation from request to result, for the commands and for scripts using the
/// core: recover what a kill left pending, plan, (optionally) run, and inspect the result.
public struct MaintenanceRun {
    /// What an operation reports; its JSON is the `--json` output of every changing command.
    public struct Report: Sendable, Encodable {
        /// One step of the plan, for people and scripts.
        public struct Step: Sendable, Encodable {
            public let index: Int
            public let action: Plan.Action.Kind
            /// The paths it touches (source → destination for moves).
            public let paths: [String]
            public let reason: String
            /// For a `build` step, the strategy (`ios`, `copy-entities`, `manual`, `none`); else null.
            @NullEncoded public var strategy: String?
            /// Seconds it took (null in a dry run).
            @NullEncoded public var seconds: Double?
        }

        public let schemaVersion = 1
        /// The command's path, without flags (`rebuild`, `delete container`).
        public let command: String
        /// The operation with the flags that choose it (`rebuild --from local`).
        public let operation: String
        public let dryRun: Bool
        /// True when the end state already held: nothing was (or would be) changed.
        public let noOp: Bool
        /// True when this run changed files (never in a dry run or a no-op).
        public let changed: Bool
        /// What the plan does to the customer's data: every store it reads or touches, objects
        /// per entity now and after, where the data goes, and what the app shows before and after.
        @NullEncoded public var ledger: Ledger?
        /// The ledger's first line, for people.
        @NullEncoded public var headline: String?
        public let planID: String
        public let roots: [Plan.Root]
        public let steps: [Step]
        public let notes: [String]
        /// The snapshot `restore` puts back (null in a dry run or a no-op).
        @NullEncoded public var snapshot: String?
        /// Rows per entity of every store written (by path): before (the source) and after.
        public let rows: [String: [String: Int]]
        /// The next launch before the operation, predicted after it, and (after a run) found by `status` on the result.
        public let nextLaunch: NextLaunchChange
        /// Interrupted operations finished or undone before this one.
        public let recovered: [PlanExecutor.Recovery]
        public let seconds: Double
        /// What to do next, in words: which folder goes back to the device and how, and what must
        /// be changed on the customer's Mac instead (the ubiquity container). See `NextStep`.
        public let nextStep: String
        /// The code the process exits with (20, `applied`, with `--detailed-exitcode` when files
        /// were changed or, in a dry run, would be) and its name.
        public var exitCode: Int32 = 0
        public var exitStatus = "ok"

        /// Sets the exit code and its name together.
        public mutating func exit(_ status: ExitStatus) {
            exitCode = status.rawValue
            exitStatus = status.name
        }
    }

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
        /// What planning found outside the files (a Mac app running now, in a dry run).
        public var notes: [String] = []
    }

    /// Plans (recovering first what a kill left pending, unless `dryRun`, which refuses then) and
    /// returns the plan with the report of the layout it was made on.
    public func plan(dryRun: Bool) throws -> Prepared {
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
            plan: prepared.plan, report: prepared.report, roots: prepared.layout.planRoots, recovered: recovered)
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
    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> Report {
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
            changed: result != nil && !plan.isNoOp, ledger: ledger,
            headline: ledger?.headline(done: result != nil && !plan.isNoOp), planID: plan.id,
            roots: plan.roots,
            steps: steps,
            notes: plan.notes + extra + Self.buildNotes(result) + (result?.leftovers ?? []).map(Self.leftoverNote)
                + (result?.notes ?? []),
            snapshot: result?.snapshot, rows: rows,
            nextLaunch: NextLaunchChange(
                before: plan.nextLaunchBefore, predicted: plan.nextLaunchAfter, after: after?.nextLaunch),
            recovered: recovered, seconds: result?.seconds ?? 0,
            nextStep: NextStep.describe(
                plan, options: options, preferencesPath: before.layout.preferences.map { URL(fileURLWithPath: $0) },
                dryRun: dryRun))
    }
}

extension MaintenanceRun {
    /// What the migration engine said about each store it built (counters raised, what was left
    /// out and why), named by the store's final path.
    static func buildNotes(_ result: PlanExecutor.Result?) -> [String] {
        (result?.builds ?? [:]).sorted { $0.key < $1.key }.flatMap { path, build in
            (build.notes + build.leftOut).map { "\(URL(fileURLWithPath: path).lastPathComponent): \($0)" }
        }
    }

    /// The note for a lock file or empty private folder of usm-repair's that could not be removed.
    public static func leftoverNote(_ leftover: String) -> String {
        "usm-repair could not remove its own lock or empty folder \(leftover); the change is complete, and the next usm-repair run in this folder (recover, status's advice) removes it"
    }
}

extension MaintenanceRun.Report.Step {
    /// The steps of `plan` for a report, numbered from 1, with their times when it ran.
    static func list(_ plan: Plan, result: PlanExecutor.Result?) -> [Self] {
        let timings = Dictionary((result?.steps ?? []).map { ($0.index, $0.seconds) }, uniquingKeysWith: { a, _ in a })
        return plan.steps.enumerated().map { index, step in
            var strategy: String?
            if case let .build(build) = step.action { strategy = build.strategy.id }
            return Self(
                index: index + 1, action: step.action.kind, paths: step.action.paths, reason: step.reason,
                strategy: strategy,
                seconds: timings[index])
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
