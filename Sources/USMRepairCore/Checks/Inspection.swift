import Foundation

/// The read-only operations: discover a layout, inspect every store in it, judge, advise.
/// Behind `status` (depth `.status`) and `check` (depth `.check`).
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

    /// Creates an inspection.
    public init(options: LayoutOptions, depth: StoreInspector.Depth, ignoredCodes: Set<ProblemCode> = [], strict: Bool = false) {
        self.init(options: options, depth: depth, ignoredCodes: ignoredCodes, privateCopies: [:], strict: strict)
    }

    init(options: LayoutOptions, depth: StoreInspector.Depth, ignoredCodes: Set<ProblemCode>, privateCopies: [String: URL],
         strict: Bool = false) {
        self.options = options
        self.depth = depth
        self.ignoredCodes = ignoredCodes
        self.privateCopies = privateCopies
        self.strict = strict
    }

    /// Runs it. `progress` is called before each store with (index, count, path).
    /// - Throws: `USMError` when the options name nothing usable (missing folder, bad flags).
    public func run(progress: (Int, Int, String) -> Void = { _, _, _ in }) throws -> StatusReport {
        try run(layout: try Layout.discover(options), progress: progress)
    }

    /// Runs it on a layout already discovered.
    func run(layout: Layout, progress: (Int, Int, String) -> Void = { _, _, _ in }) throws -> StatusReport {
        let inspector = StoreInspector(depth: depth)
        var stores: [StoreReport] = []
        for (i, entry) in layout.stores.enumerated() {
            progress(i, layout.stores.count, entry.files.main.path)
            var report = inspector.inspect(
                entry.files, role: entry.role, confinement: Confinement(root: entry.root),
                privateCopy: privateCopies[entry.files.main.path])
            report.uuid = entry.uuid
            report.cloudVersion = entry.cloudVersion
            if entry.role == .cloud {
                let active = layout.activeMarker
                report.active = active?.value == entry.uuid && active?.cloudVersion == entry.cloudVersion
            }
            stores.append(report)
        }
        return judge(layout: layout, stores: stores)
    }

    private func judge(layout: Layout, stores: [StoreReport]) -> StatusReport {
        let forCheck = depth == .check
        let threshold: Problem.Severity = strict ? .warning : .error
        let stores = stores.map { store in
            var marked = store
            marked.problems = mark(store.problems)
            return marked
        }
        let layoutProblems = mark(layout.problems)
        var exit = layout.exitStatus
        for store in stores {
            exit = exit.worst(store.exitStatus(forCheck: forCheck, threshold: threshold))
        }
        if forCheck, layoutProblems.contains(where: { !$0.ignored && $0.severity >= threshold }) {
            exit = exit.worst(.problemsFound)
        }

        let active = layout.activeMarker.map { marker in
            StatusReport.ActiveStore(
                uuid: marker.value!, cloudVersion: marker.cloudVersion, marker: marker.name,
                exists: stores.contains { $0.uuid == marker.value && $0.cloudVersion == marker.cloudVersion && $0.exists })
        }
        let corruption = layout.corruptionMarker.map { marker in
            StatusReport.Corruption(
                uuid: marker.value!, affectsActiveStore: marker.value == active?.uuid, cloudVersion: marker.cloudVersion,
                marker: marker.name)
        }
        let all = layoutProblems + stores.flatMap(\.problems)
        let summary = StatusReport.Summary(
            stores: stores.count, present: stores.filter(\.exists).count, healthy: stores.filter { $0.health == .ok }.count,
            errors: all.filter { $0.severity == .error }.count, warnings: all.filter { $0.severity == .warning }.count)
        let mode = layout.options.store != nil ? "store" : "layout"
        let summaryLayout = StatusReport.LayoutSummary(
            mode: mode, container: layout.options.container?.path, appDir: layout.appDirectory?.path,
            cloudDir: layout.cloudDirectory?.path, preferences: layout.preferencesPath?.path, storeName: options.storeName,
            markers: layout.markers, cloudContent: layout.cloudContent, leftovers: layout.leftovers)
        let cloudEnabled = layout.preferences?.cloudEnabled
        let advice = Advice.lines(
            layout: layout, stores: stores, active: active, corruption: corruption, cloudEnabled: cloudEnabled, isCheck: forCheck)
        return StatusReport(
            command: forCheck ? "check" : "status", cloudEnabled: cloudEnabled, activeStore: active, corruption: corruption,
            stores: stores, layout: summaryLayout, problems: layoutProblems, advice: advice, summary: summary, exitCode: exit)
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
