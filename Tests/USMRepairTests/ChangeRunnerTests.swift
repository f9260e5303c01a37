import Foundation
import Synchronization
import Testing
@testable import USMRepairCore

/// `ChangeRunner.run`, the one runner of every changing command, on an in-memory `Change`: what
/// it calls in which order, when it asks, and the exit code it writes into the report.
@Suite("change runner: prepare, preview or ask and run, the exit code", .timed)
struct ChangeRunnerTests {
    /// A change that records what the runner called; `status` is its own exit status,
    /// `refuse` makes `prepare` throw, `question` is its consent.
    final class Probe: Change, Sendable {
        struct Details: Encodable, Sendable {}
        let calls = Mutex<[String]>([])
        let noOp: Bool
        let status: USMRepairCore.ExitStatus
        let refuse: Bool
        let question: ChangeConsent?

        init(
            noOp: Bool = false, status: USMRepairCore.ExitStatus = .ok, refuse: Bool = false,
            question: ChangeConsent? = nil
        ) {
            self.noOp = noOp
            self.status = status
            self.refuse = refuse
            self.question = question
        }

        var command: String { "probe" }
        var recorded: [String] { calls.withLock { $0 } }

        func prepare(dryRun: Bool, progress: (String) -> Void) throws -> Bool {
            calls.withLock { $0.append("prepare") }
            if refuse { throw USMError.preconditionFailed("refused while planning") }
            return dryRun
        }

        func report(_ dryRun: Bool, ran: Bool) -> ChangeReport<Details> {
            ChangeReport(
                command: command, dryRun: dryRun, noOp: noOp, changed: ran && !noOp, steps: [], snapshot: nil,
                notes: [], recovered: [], seconds: 0, nextStep: "-", status: status, details: Details())
        }

        func preview(_ prepared: Bool, progress: (String) -> Void) -> ChangeReport<Details> {
            calls.withLock { $0.append("preview") }
            return report(prepared, ran: false)
        }

        func consent(_ prepared: Bool) -> ChangeConsent? { question }

        func run(_ prepared: Bool, progress: (String) -> Void) -> ChangeReport<Details> {
            calls.withLock { $0.append("run") }
            return report(false, ran: true)
        }
    }

    static let question = ChangeConsent.plan("probe")

    @Test("a dry run prepares and previews; it never asks or runs")
    func dryRun() throws {
        let probe = Probe(question: Self.question)
        let report = try ChangeRunner.run(probe, dryRun: true, detailedExitCode: true) { _, _ in
            Issue.record("a dry run asked")
        }
        #expect(probe.recorded == ["prepare", "preview"])
        #expect(report.exitCode == USMRepairCore.ExitStatus.applied.rawValue, "a dry run that would change: 20")
    }

    @Test("a run asks the change's question, shown its preview, before running; a refusal stops it")
    func consent() throws {
        let probe = Probe(question: Self.question)
        var asked: [ChangeConsent] = []
        _ = try ChangeRunner.run(probe, dryRun: false, detailedExitCode: false) {
            (question: ChangeConsent, preview: () throws -> ChangeReport<Probe.Details>) in
            asked.append(question)
            let shown = try preview()
            #expect(shown.dryRun == false)
        }
        #expect(asked == [Self.question])
        #expect(probe.recorded == ["prepare", "preview", "run"])
        let refused = Probe(question: Self.question)
        #expect(throws: USMError.self) {
            try ChangeRunner.run(refused, dryRun: false, detailedExitCode: false) { _, _ in
                throw USMError.confirmationRequired("no")
            }
        }
        #expect(refused.recorded == ["prepare"], "nothing ran after a no")
    }

    @Test("no question (nothing to do, a new store, recover): no ask, the run")
    func noQuestion() throws {
        let probe = Probe(noOp: true)
        let report = try ChangeRunner.run(probe, dryRun: false, detailedExitCode: true) { _, _ in
            Issue.record("asked without a question")
        }
        #expect(probe.recorded == ["prepare", "run"])
        #expect(report.exitCode == 0 && report.exitStatus == "ok", "nothing done: 0 even with --detailed-exitcode")
    }

    @Test("a refusal while planning comes before any question, in the dry run and the run alike")
    func refusalAtPlanning() {
        for dryRun in [true, false] {
            let probe = Probe(refuse: true, question: Self.question)
            #expect(throws: USMError.self) {
                try ChangeRunner.run(probe, dryRun: dryRun, detailedExitCode: true) { _, _ in
                    Issue.record("asked before refusing")
                }
            }
            #expect(probe.recorded == ["prepare"])
        }
    }

    @Test("--detailed-exitcode: 20 when changed and the change's own status is ok; its own status otherwise")
    func exitCode() throws {
        let changed = try ChangeRunner.run(Probe(), dryRun: false, detailedExitCode: true) { _, _ in }
        #expect(changed.exitCode == 20 && changed.exitStatus == "applied")
        let plain = try ChangeRunner.run(Probe(), dryRun: false, detailedExitCode: false) { _, _ in }
        #expect(plain.exitCode == 0)
        // salvage that lost something: 1, not 20.
        let lossy = try ChangeRunner.run(
            Probe(status: USMRepairCore.ExitStatus.problemsFound), dryRun: false, detailedExitCode: true
        ) { _, _ in
        }
        #expect(lossy.exitCode == USMRepairCore.ExitStatus.problemsFound.rawValue)
    }
}
