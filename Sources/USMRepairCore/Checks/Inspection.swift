import Foundation

/// The read-only operations: discover a layout, inspect every store in it, predict the next
/// launch, find the traps, judge, advise. Behind `status` (depth `.status`) and `check` (depth `.check`).
public struct Inspection: Sendable {
    /// The options naming the layout.
    public let options: LayoutOptions
    /// `status` or `check`.
    public let depth: StoreInspector.Depth
    /// Problem codes the user chose to accept (`--ignore`): still reported, marked ignored, not counted for the exit code.
    public let ignoredCodes: Set<ProblemCode>
    /// `check --strict`: warnings fail the check too (errors always do; information never).
    public let strict: Bool

    /// Private copies already taken of some stores (main file path → the copy to open), so a
    /// bundle reports on exactly the bytes it archives.
    let privateCopies: [String: URL]
    /// Main files read at `status` depth when the inspection's depth is `light` (the stores an
    /// operation reads or seeds from).
    var deeper: Set<String> = []
    /// This machine's record of the operations it wrote: a pending operation folder it did not
    /// write is reported as `untrusted-operation`.
    public var records = OperationRecords()
    /// The strategies a changing command resolves: when set, the advice's changing commands are
    /// planned and kept only when they hold (`Advice.verified`).
    public var strategies: StrategyResolver?

    /// Creates an inspection.
    public init(
        options: LayoutOptions, depth: StoreInspector.Depth, ignoredCodes: Set<ProblemCode> = [], strict: Bool = false
    ) {
        self.init(options: options, depth: depth, ignoredCodes: ignoredCodes, privateCopies: [:], strict: strict)
    }

    init(
        options: LayoutOptions, depth: StoreInspector.Depth, ignoredCodes: Set<ProblemCode>,
        privateCopies: [String: URL],
        strict: Bool = false
    ) {
        self.options = options
        self.depth = depth
        self.ignoredCodes = ignoredCodes
        self.privateCopies = privateCopies
        self.strict = strict
    }

    /// Runs it. `progress` is called before each store with (index, count, path).
    /// - Throws: `USMError` when the options name nothing usable (missing folder, bad flags).
    public func run(progress: (Int, Int, String) -> Void = { _, _, _ in }) throws -> StatusReport {
        try run(layout: try Layout.discover(options, records: records), progress: progress)
    }

    /// Runs it on a layout already discovered.
    func run(layout: Layout, progress: (Int, Int, String) -> Void = { _, _, _ in }) throws -> StatusReport {
        var inspector = StoreInspector(depth: depth)
        inspector.findsDuplicates = depth == .status
        let full = StoreInspector(depth: .status)
        var stores: [StoreReport] = []
        for (i, entry) in layout.stores.enumerated() {
            progress(i, layout.stores.count, entry.files.main.path)
            var report = (deeper.contains(entry.files.main.path) ? full : inspector).inspect(
                entry.files, role: entry.role, confinement: Confinement(root: entry.root),
                privateCopy: privateCopies[entry.files.main.path])
            report.location = entry.location
            report.copy = entry.copy
            report.opens = entry.opens
            report.document = entry.document
            report.uuid = entry.uuid
            report.cloudVersion = entry.cloudVersion
            // Another process with the store open (the app runs): said now, not only when a run refuses.
            if depth != .light, report.exists, let busy = StoreLocks.busy(entry.files), !busy.path.hasSuffix("-journal")
            {
                report.problems.append(
                    Problem(
                        .storeInUse,
                        "\(busy.reason)\(busy.pid.map { " (process \($0))" } ?? ""): quit the app before changing it",
                        subject: busy.path))
            }
            for index in report.problems.indices { report.problems[index].store = entry.files.main.path }
            stores.append(report)
        }
        return judge(layout: layout, stores: stores)
    }

    private func judge(layout: Layout, stores: [StoreReport]) -> StatusReport {
        let forCheck = depth == .check
        let threshold: Problem.Severity = strict ? .warning : .error
        let byPath = Dictionary(stores.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let next = layout.isSingleStore ? nil : NextLaunch.predict(layout, reports: byPath)
        var traps = layout.problems
        if let next { traps += LayoutTraps.problems(layout, reports: byPath, next: next) }
        let layoutProblems = mark(traps)
        var stores = stores.map { store in
            var marked = store
            marked.problems = mark(store.problems)
            return marked
        }
        let activeUUID = next.flatMap { next in
            next.store.flatMap { $0 == "local" ? nil : $0 } ?? layout.activeMarker?.raw
        }
        for index in stores.indices where stores[index].role == .cloud {
            stores[index].active = activeUUID != nil && stores[index].uuid == activeUUID
        }

        var exit = layout.exitStatus
        for store in stores {
            exit = exit.worst(store.exitStatus(forCheck: forCheck, threshold: threshold))
        }
        let counted = (layoutProblems + stores.flatMap(\.problems)).filter { !$0.ignored }
        for problem in counted { exit = exit.worst(problem.code.exitStatus) }
        if forCheck, counted.contains(where: { $0.severity >= threshold }) { exit = exit.worst(.problemsFound) }

        let active = Self.activeStore(layout: layout, next: next)
        let corruption = layout.corruptionMarker.flatMap { marker -> StatusReport.Corruption? in
            guard let raw = marker.raw else { return nil }
            return StatusReport.Corruption(
                uuid: raw, affectsActiveStore: active?.uuid == raw, cloudVersion: marker.cloudVersion,
                marker: marker.name)
        }
        let all = layoutProblems + stores.flatMap(\.problems)
        let summary = StatusReport.Summary(
            stores: stores.count, present: stores.filter(\.exists).count,
            healthy: stores.filter { $0.health == .ok }.count,
            errors: all.filter { $0.severity == .error }.count, warnings: all.filter { $0.severity == .warning }.count,
            activeStoreMarkedCorrupt: corruption?.affectsActiveStore ?? false, nextLaunch: next?.outcome.rawValue)
        let mode = layout.options.store != nil ? "store" : layout.options.document != nil ? "document" : "layout"
        let summaryLayout = StatusReport.LayoutSummary(
            mode: mode, container: layout.options.container?.path, appDir: layout.appDirectory?.path,
            cloudDir: layout.cloudDirectory?.path, cloudSource: layout.cloudSource?.rawValue,
            preferences: layout.preferencesPath?.path,
            storeName: options.storeName,
            markers: layout.markers, cloudContent: layout.cloudContent, cloudStores: layout.cloudStores,
            cachedStoreUUIDs: layout.preferences?.cachedStoreUUIDs ?? [],
            accountMaps: layout.preferences?.accountMaps ?? [],
            leftovers: layout.leftovers, documents: layout.documents, macApp: layout.macApp)
        let cloudEnabled = layout.preferences?.cloudEnabled
        let suggestions = Advice.suggestions(
            layout: layout, stores: stores, next: next, corruption: corruption, problems: layoutProblems,
            isCheck: forCheck)
        var report = StatusReport(
            command: forCheck ? "check" : "status", cloudEnabled: cloudEnabled, activeStore: active,
            corruption: corruption,
            nextLaunch: next, stores: stores, layout: summaryLayout, problems: layoutProblems,
            advice: Advice.lines(suggestions),
            summary: summary, exitCode: exit)
        // Each changing command the advice gives is planned as its dry run would be, and kept only
        // when it holds (verified advice needs the strategies, which the command layer supplies).
        if let strategies, !layout.isSingleStore {
            report.actions = Advice.verified(suggestions, layout: layout, report: report, strategies: strategies)
            report.advice = report.actions.map(\.text)
        } else {
            report.actions = Advice.actions(suggestions)
        }
        return report
    }

    /// The active store as the app finds it (usm-behaviour.md §1.4): the cache first, then the marker.
    static func activeStore(layout: Layout, next: NextLaunch?) -> StatusReport.ActiveStore? {
        guard !layout.isSingleStore else { return nil }
        let version = layout.activeVersion ?? Marker.desiredVersion
        let cached = Set(
            layout.deviceCachedStoreUUIDs(version: version).cached.compactMap(\.value).filter { !$0.isEmpty })
        let cachedUUID = cached.count == 1 ? cached.first : nil
        let marker = layout.activeMarker
        guard let uuid = marker?.raw ?? cachedUUID else { return nil }
        let copies = Marker.isValidUUID(uuid) ? layout.copies(of: uuid).filter { $0.opens != false } : []
        return StatusReport.ActiveStore(
            uuid: uuid, cloudVersion: version, marker: marker?.name, markerUUID: marker?.raw, cachedUUID: cachedUUID,
            source: cachedUUID != nil ? "cache" : "marker", valid: Marker.isValidUUID(uuid), exists: !copies.isEmpty,
            copies: copies.count, content: layout.cloudContent.contains { $0.uuid == uuid })
    }

    /// The problems with those the user accepted marked as ignored.
    private func mark(_ problems: [Problem]) -> [Problem] {
        guard !ignoredCodes.isEmpty else { return problems }
        return problems.map { problem in
            var marked = problem
            marked.ignored = ignoredCodes.contains(problem.code)
            return marked
        }
    }
}
