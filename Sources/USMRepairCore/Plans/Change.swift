import Foundation

/// A command that changes files, as one type (issue 30: one door for every change): the eleven
/// operations (`MaintenanceChange`), `migrate-store`, `salvage`, `dedupe`, `restore` (both forms),
/// `recover` and `snapshots prune`. `ChangeRunner.run` is the only thing that runs one:
/// 1. `prepare` decides every refusal (so a dry run refuses what the run refuses), recovers an
///    interrupted run first (a dry run refuses then, exit 7) and checks the Mac app;
/// 2. a dry run reports `preview` and stops;
/// 3. otherwise, when `consent` asks a question, the runner's `ask` shows the plan (the preview,
///    headed as a plan, with every step's reason) and needs a yes (or `--yes`);
/// 4. `run` runs it and reports; the runner sets the real exit code into the report.
public protocol Change {
    /// What `prepare` found and planned, handed back to `preview`, `consent` and `run`.
    associatedtype Prepared
    /// The command's own part of the report (the envelope's `details`).
    associatedtype Details: Encodable & Sendable

    /// The command's path (`delete container`, `migrate-store`): the envelope's `command`.
    var command: String { get }

    /// Refusals, recovery first, the plan. Changes nothing but what recovery puts back.
    func prepare(dryRun: Bool, progress: (String) -> Void) throws -> Prepared

    /// The report of what `prepared` would do (the dry run's, and the plan shown before the question).
    func preview(_ prepared: Prepared, progress: (String) -> Void) throws -> ChangeReport<Details>

    /// The question before running `prepared`; nil when it needs none (nothing to do, or a new
    /// store created where there was none).
    func consent(_ prepared: Prepared) -> ChangeConsent?

    /// Runs `prepared` (after consent) and reports what it did.
    func run(_ prepared: Prepared, progress: (String) -> Void) throws -> ChangeReport<Details>
}

/// The question a change asks before it runs, and the refusal when nobody can answer.
public struct ChangeConsent: Sendable, Equatable {
    /// The refusal without a terminal and without `--yes` (exit 3).
    public let unattended: String
    /// The question after the plan.
    public let question: String

    public init(unattended: String, question: String) {
        self.unattended = unattended
        self.question = question
    }

    /// The usual question: "\(command) changes files: run it with --yes".
    public static func plan(_ command: String, snapshot: Bool = true) -> Self {
        Self(
            unattended: "\(command) changes files: run it with --yes (see the plan with --dry-run)",
            question: snapshot ? "Run this plan? A snapshot is taken first." : "Run this plan?")
    }
}

/// The one runner of every change.
public enum ChangeRunner {
    /// Prepares `change`; a dry run reports the preview; otherwise asks through `ask` (given the
    /// question and a way to make the preview to show) and runs. The report's `exitCode` is the
    /// code the process exits with: the change's own status, or `applied` (20) with
    /// `detailedExitCode` when files were changed (in a dry run, would be) and the status is `ok`.
    public static func run<C: Change>(
        _ change: C, dryRun: Bool, detailedExitCode: Bool, progress: (String) -> Void = { _ in },
        ask: (ChangeConsent, () throws -> ChangeReport<C.Details>) throws -> Void
    ) throws -> ChangeReport<C.Details> {
        let prepared = try change.prepare(dryRun: dryRun, progress: progress)
        var report: ChangeReport<C.Details>
        if dryRun {
            report = try change.preview(prepared, progress: progress)
        } else {
            if let question = change.consent(prepared) {
                try ask(question) { try change.preview(prepared, progress: { _ in }) }
            }
            report = try change.run(prepared, progress: progress)
        }
        if detailedExitCode, report.exitCode == ExitStatus.ok.rawValue, report.dryRun ? !report.noOp : report.changed {
            report.exit(.applied)
        }
        return report
    }
}

/// The one JSON envelope of every changing command (schema 3): what every change shares at the
/// top, the command's own part under `details`.
public struct ChangeReport<Details: Encodable & Sendable>: Sendable, Encodable {
    public typealias Step = ChangeStep

    /// 3 since the one envelope (the operations' reports were 1, migrate-store's 2).
    public let schemaVersion = 3
    /// The command's path, without flags (`rebuild`, `delete container`, `snapshots prune`).
    public let command: String
    /// The command with the flags that choose what it does (`rebuild --from local`).
    public let operation: String
    public let dryRun: Bool
    /// True when there was (or would be) nothing to do.
    public let noOp: Bool
    /// True when this run changed files (never in a dry run or a no-op).
    public let changed: Bool
    public let steps: [Step]
    /// The snapshot `restore` puts back (null in a dry run, a no-op, or a change that takes none).
    @NullEncoded public var snapshot: String?
    public var notes: [String]
    /// Interrupted operations finished or undone before this one.
    public let recovered: [PlanExecutor.Recovery]
    public let seconds: Double
    /// What to do next, in words.
    public let nextStep: String
    /// The code the process exits with and its name.
    public private(set) var exitCode: Int32
    public private(set) var exitStatus: String
    /// The command's own part.
    public var details: Details

    public init(
        command: String, operation: String? = nil, dryRun: Bool, noOp: Bool, changed: Bool, steps: [Step],
        snapshot: String?, notes: [String], recovered: [PlanExecutor.Recovery], seconds: Double, nextStep: String,
        status: ExitStatus = .ok, details: Details
    ) {
        self.command = command
        self.operation = operation ?? command
        self.dryRun = dryRun
        self.noOp = noOp
        self.changed = changed
        self.steps = steps
        self.snapshot = snapshot
        self.notes = notes
        self.recovered = recovered
        self.seconds = seconds
        self.nextStep = nextStep
        self.exitCode = status.rawValue
        self.exitStatus = status.name
        self.details = details
    }

    /// Sets the exit code and its name together.
    public mutating func exit(_ status: ExitStatus) {
        exitCode = status.rawValue
        exitStatus = status.name
    }
}

/// Notes every change can add.
public enum ChangeNotes {
    /// The note for a lock file or empty private folder of usm-repair's that could not be removed.
    public static func leftover(_ leftover: String) -> String {
        "usm-repair could not remove its own lock or empty folder \(leftover); the change is complete, and the next usm-repair run in this folder (recover, status's advice) removes it"
    }
}

/// One step, for people and scripts.
public struct ChangeStep: Sendable, Encodable {
    public let index: Int
    /// The plan action (`snapshot`, `build`, `install`...), or what the command does
    /// (`remove` for `snapshots prune`, `recover`).
    public let action: String
    /// The paths it touches (source → destination for moves).
    public let paths: [String]
    public let reason: String
    /// For a `build` step, the strategy (`ios`, `copy-entities`, `manual`, `none`); else null.
    @NullEncoded public var strategy: String?
    /// Seconds it took (null in a dry run).
    @NullEncoded public var seconds: Double?

    public init(
        index: Int, action: String, paths: [String], reason: String, strategy: String? = nil,
        seconds: Double? = nil
    ) {
        self.index = index
        self.action = action
        self.paths = paths
        self.reason = reason
        self.strategy = strategy
        self.seconds = seconds
    }

    /// The steps of `plan`, numbered from 1, with their times when it ran.
    public static func list(_ plan: Plan, result: PlanExecutor.Result?) -> [Self] {
        let timings = Dictionary(
            (result?.steps ?? []).map { ($0.index, $0.seconds) }, uniquingKeysWith: { a, _ in a })
        return plan.steps.enumerated().map { index, step in
            var strategy: String?
            if case let .build(build) = step.action { strategy = build.strategy.id }
            return Self(
                index: index + 1, action: step.action.kind.rawValue, paths: step.action.paths,
                reason: step.reason, strategy: strategy, seconds: timings[index])
        }
    }
}
