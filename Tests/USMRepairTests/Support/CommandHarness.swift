import Foundation
import Synchronization
import TestSupport
import USMRepairCore
@testable import usm_repair

/// Runs `usm-repair <arguments>` in process, as the executable's `main` does but for the process
/// around it: the same parsing, the same command code and printers, the same exit codes, with the
/// world injected (environment, a capturing terminal, hooks into the plan executor). Tests that
/// need a real process use `Launcher` (see there for when).
enum USM {
    /// Captured output, written from any thread.
    private final class Capture: Sendable {
        private let text = Mutex("")
        func append(_ s: String) { text.withLock { $0 += s } }
        var value: String { text.withLock { $0 } }
    }

    /// The environment every in-process run gets: the test process's, with the state folder
    /// (snapshots, the record of operations) in the tests' private one.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["XDG_STATE_HOME"] = CLI.stateHome.path
        env["TMPDIR"] = TestTemporary.base.path
        for (key, value) in extra { env[key] = value }
        return env
    }

    /// The current folder of runs that name none: a private one, so that nothing a command writes
    /// by default (`archive` without `-o`) lands in the test process's folder.
    static let directory: URL = {
        let url = CLI.stateHome.appendingPathComponent("cwd", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Runs one command in `directory` (its current folder). `progress`: stderr counts as a
    /// terminal (the progress lines are captured). Output is not a terminal, so lines stay
    /// whole unless `environment` names `COLUMNS` (the test process's own is not read). `answers` are typed at the prompt (which then counts as a terminal).
    static func run(
        _ arguments: [String], environment extra: [String: String] = [:], hooks: PlanExecutor.Hooks = .none,
        answers: [String]? = nil, outputFailure: USMError? = nil, in directory: URL = USM.directory,
        progress: Bool = false
    ) -> CLI.Result {
        let out = Capture()
        let err = Capture()
        let env = environment(extra)
        var remaining = answers ?? []
        let status = USMRepairCommand.execute(arguments, out: out.append, err: err.append) { command, output in
            let terminal = Terminal(
                colors: false, progress: progress, interactive: answers != nil, out: out.append, err: err.append,
                readAnswer: { remaining.isEmpty ? nil : remaining.removeFirst() }, outputFailure: { outputFailure },
                width: output.json ? nil : TerminalWidth.columns(environment: extra) { nil })
            var context = CommandContext(
                terminal: terminal, output: output, command: command.commandPath, environment: env,
                executable: CLI.binary,
                arguments: ["usm-repair"] + arguments,
                paths: PathResolver(currentDirectory: directory, home: env["HOME"]))
            context.hooks = hooks
            context.scratch = Scratch.forEnvironment(env)
            context.childStandardError = { err.append(String(decoding: $0, as: UTF8.self)) }
            return context
        }
        return CLI.Result(status: status, stdout: out.value, stderr: err.value)
    }
}

extension PlanExecutor.Hooks {
    /// Stops a run right after step `step` is journaled done, as a kill would (nothing undone).
    static func interrupt(after step: Int) -> Self {
        Self(afterStep: { if $0 == step { throw PlanExecutor.Interruption() } })
    }

    /// The exit code of a run stopped by `interrupt(after:)` (what the error escaping the command maps to).
    static let interruptedStatus: Int32 = ExitStatus.ioError.rawValue
}
