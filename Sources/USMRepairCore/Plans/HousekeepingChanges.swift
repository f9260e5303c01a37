import Foundation

/// `snapshots prune` as a `Change`: the snapshots the rules choose (`SnapshotCatalog.select`)
/// removed from the snapshot folder. It takes no snapshot itself (what it removes is the undo of
/// other operations), so it asks before removing them.
public struct PruneChange: Change {
    /// The folder pruned (`--snapshot-dir`, else the state folder's).
    public let folder: URL
    public let olderThan: TimeInterval?
    public let keep: Int?
    public let byContainer: Bool

    public init(folder: URL, olderThan: TimeInterval?, keep: Int?, byContainer: Bool) {
        self.folder = folder
        self.olderThan = olderThan
        self.keep = keep
        self.byContainer = byContainer
    }

    public var command: String { "snapshots prune" }

    /// What `snapshots prune` removes and keeps: the `details` of its envelope.
    public struct Details: Sendable, Encodable {
        public let folder: String
        /// The snapshots removed (or, in a dry run, that would be).
        public let removed: [SnapshotCatalog.Entry]
        public let bytes: Int64
        /// How many snapshots stay.
        public let kept: Int
    }

    public struct Prepared {
        public let chosen: [SnapshotCatalog.Entry]
        public let kept: Int
        public let dryRun: Bool
    }

    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        let entries = try SnapshotCatalog.list(folder)
        let chosen = SnapshotCatalog.select(entries, olderThan: olderThan, keep: keep, byContainer: byContainer)
        let snapshots = entries.filter { $0.problem == nil }.count
        return Prepared(chosen: chosen, kept: snapshots - chosen.count, dryRun: dryRun)
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? {
        guard !prepared.chosen.isEmpty else { return nil }
        return ChangeConsent(
            unattended:
                "snapshots prune removes snapshots (and the undo they hold): run it with --yes (see what goes with --dry-run)",
            question: "Remove these \(prepared.chosen.count) snapshot(s)? Their operations can no longer be undone.")
    }

    func report(_ prepared: Prepared, removed: Bool, seconds: Double = 0) -> ChangeReport<Details> {
        let rule = [
            olderThan.map { _ in "older than --older-than" },
            keep.map { "beyond the newest \($0)\(byContainer ? " of its container" : "")" },
        ].compactMap { $0 }.joined(separator: " and ")
        let steps = prepared.chosen.enumerated().map { index, entry in
            ChangeStep(
                index: index + 1, action: "remove", paths: [entry.path],
                reason:
                    "\(entry.command ?? "a snapshot") of \(entry.createdAt ?? "an unknown time"), \(rule): the undo it holds goes with it"
            )
        }
        return ChangeReport(
            command: command, operation: command, dryRun: prepared.dryRun, noOp: prepared.chosen.isEmpty,
            changed: removed && !prepared.chosen.isEmpty, steps: steps, snapshot: nil, notes: [], recovered: [],
            seconds: seconds,
            nextStep: prepared.chosen.isEmpty
                ? "nothing to remove"
                : removed
                    ? "usm-repair snapshots lists the \(prepared.kept) kept"
                    : "run it without --dry-run to remove them",
            details: Details(
                folder: folder.path, removed: prepared.chosen, bytes: prepared.chosen.reduce(0) { $0 + $1.bytes },
                kept: prepared.kept))
    }

    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) -> ChangeReport<Details> {
        report(prepared, removed: false)
    }

    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<Details> {
        let started = Date()
        _ = try SnapshotCatalog.remove(prepared.chosen)
        return report(prepared, removed: true, seconds: Date().timeIntervalSince(started))
    }
}

/// `recover` as a `Change`: what a kill left pending in a layout's folders finished or undone.
/// It asks nothing (`consent` is nil): recovery only completes or puts back an operation that was
/// consented to when it ran, as every changing command does first by itself; and it takes no
/// snapshot (the interrupted operation's own is the way back).
public struct RecoverChange: Change {
    public let options: LayoutOptions
    public let executor: PlanExecutor

    public init(options: LayoutOptions, executor: PlanExecutor) {
        self.options = options
        self.executor = executor
    }

    public var command: String { "recover" }

    /// The folders recovery looked in: the `details` of its envelope.
    public struct Details: Sendable, Encodable {
        public let roots: [Plan.Root]
    }

    public struct Prepared {
        public let roots: [Plan.Root]
        /// What would be finished or undone.
        public let pending: [PlanExecutor.Recovery]
        public let dryRun: Bool
    }

    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        let layout = try Layout.discover(options, records: executor.records)
        let roots = layout.planRoots
        return Prepared(roots: roots, pending: try executor.pendingRecoveries(roots: roots), dryRun: dryRun)
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? { nil }

    func report(_ prepared: Prepared, recovered: [PlanExecutor.Recovery]?, seconds: Double = 0) -> ChangeReport<
        Details
    > {
        let shown = recovered ?? prepared.pending
        let steps = shown.enumerated().map { index, recovery in
            ChangeStep(
                index: index + 1, action: "recover", paths: [recovery.journal],
                reason: recovery.outcome == .undone
                    ? "\(recovery.operation) had not committed: it is undone (the files are as before it)"
                    : "\(recovery.operation) had committed: it is finished (the files are as it leaves them)")
        }
        return ChangeReport(
            command: command, operation: command, dryRun: prepared.dryRun, noOp: shown.isEmpty,
            changed: recovered.map { !$0.isEmpty } ?? false, steps: steps, snapshot: nil, notes: [],
            // A dry run lists what would be finished or undone here too.
            recovered: shown, seconds: seconds,
            nextStep: shown.isEmpty
                ? "nothing to recover"
                : recovered == nil ? "run it without --dry-run to recover" : "usm-repair status shows the folders now",
            details: Details(roots: prepared.roots))
    }

    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) -> ChangeReport<Details> {
        report(prepared, recovered: nil)
    }

    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<Details> {
        let started = Date()
        let recovered = try executor.recover(roots: prepared.roots)
        return report(prepared, recovered: recovered, seconds: Date().timeIntervalSince(started))
    }
}
