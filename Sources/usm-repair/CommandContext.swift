import ArgumentParser
import ManualStrategy
import Foundation
import USMRepairCore

/// A subcommand that runs with a context: parsing stays in ArgumentParser, the work goes to the
/// core, and printing and exit codes go through the context, so every command can run in process
/// (tests) and only the top level turns a thrown `ExitCode` into the process's exit.
protocol USMCommand: ParsableCommand {
    /// The output flags of the command.
    var output: OutputFlags { get }
    /// Does the command's work.
    func run(_ context: CommandContext) throws
}

extension USMCommand {
    func run() throws {
        try run(in: CommandContext.live(output: output, command: Self.commandPath, arguments: CommandLine.arguments))
    }

    /// Runs the command in `context`, with the context's scratch registry and plugin stderr as the
    /// run's. What earlier runs were killed leaving in that registry (private copies, partial
    /// archives, extraction folders) goes first: only items their records prove theirs.
    func run(in context: CommandContext) throws {
        context.scratch.cleanUpAbandoned()
        try Scratch.$current.withValue(context.scratch) {
            try ChildProcess.$standardErrorSink.withValue(
                context.childStandardError.map(ChildProcess.StandardErrorSink.init)
            ) {
                // Each store is captured once per command: the plan's comparison and the build share it.
                try ProgressNote.withSink(context.terminal.noteSink()) { try CaptureCache.scope { try run(context) } }
            }
        }
    }

    /// The command as typed, e.g. `bundle verify`: the name the JSON envelope carries.
    static var commandPath: String {
        USMRepairCommand.path(to: Self.self) ?? (configuration.commandName ?? "\(Self.self)")
    }
}

/// What a command needs from the world, injected so that every command runs in process in tests
/// (swiftly's `SwiftlyCoreContext` is the model): where to print and whether a person can answer
/// (`terminal`), the environment (read once, in `live`), the executable's path (recipes are found
/// beside it), the strategies to choose from, and hooks into the plan executor.
struct CommandContext {
    let terminal: Terminal
    let output: OutputFlags
    /// The command's path (`status`, `bundle verify`), recorded in every JSON envelope.
    let command: String
    /// The process's environment (`XDG_STATE_HOME`, `HOME`, `PATH`, `USM_REPAIR_RECIPES`, `NO_COLOR`...).
    var environment: [String: String]
    /// The running executable (`argv[0]`).
    var executable: URL
    /// The command line as typed (`argv`), recorded in bundle and snapshot manifests.
    var arguments: [String]
    /// Where relative paths and `~` lead.
    var paths: PathResolver
    /// The registry of this run's private copies and partial files (`Scratch.current` while it runs).
    var scratch = Scratch.shared
    /// Where an external plugin's stderr goes (`ChildProcess.standardError` while the command
    /// runs): nil, this process's stderr, which the plugin inherits.
    var childStandardError: (@Sendable (Data) -> Void)?
    /// The migration strategies to choose from.
    var strategies = StrategyRegistry(builtInStrategies)
    /// Seams into the plan executor (tests stop a run after a chosen step, as a kill would).
    var hooks = PlanExecutor.Hooks.none
    /// The app's model (`--model`), for the migration engine's build steps.
    var model: ManagedObjectModel?

    /// `arguments`: the whole command line, the program's name first.
    static func live(output: OutputFlags, command: String, arguments: [String]) -> CommandContext {
        let environment = ProcessInfo.processInfo.environment
        return CommandContext(
            terminal: .live(quiet: output.quiet, json: output.json, environment: environment), output: output,
            command: command,
            environment: environment, executable: runningExecutable,
            arguments: arguments, paths: .live(environment: environment))
    }

    /// The running binary's own path (recipes are found relative to it): the system's answer
    /// (`/proc/self/exe`), not `argv[0]`, which is only `usm-repair` when found on `PATH`.
    static var runningExecutable: URL {
        Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments.first ?? "usm-repair")
    }

    /// The recipe names found where this binary looks for them (shell completion of `--recipe`).
    static func recipeNames() -> [String] {
        let search = RecipeCatalog.searchPath(
            environment: ProcessInfo.processInfo.environment, executable: runningExecutable)
        return RecipeCatalog.list(search: search).map(\.id)
    }

    /// usm-repair's own folder: snapshots, scratch records, the record of operations.
    var stateFolder: URL { StateFolder.base(environment: environment) }

    /// Where recipes named without a path are looked for.
    var recipeSearchPath: [URL] { RecipeCatalog.searchPath(environment: environment, executable: executable) }

    /// Strategies decided and checked at planning: this registry, these recipe folders, this environment.
    var strategyResolver: StrategyResolver {
        StrategyResolver(registry: strategies, recipeSearchPath: recipeSearchPath, environment: environment)
    }

    /// The snapshot folder: `--snapshot-dir`, else the state folder's `snapshots`.
    func snapshotFolder(_ flags: SnapshotFlags) -> URL { snapshotFolder(flags.directory(paths)) }

    private func snapshotFolder(_ directory: URL?) -> URL {
        directory ?? stateFolder.appendingPathComponent("snapshots", isDirectory: true)
    }

    /// The plan executor every changing command runs with: the snapshot folder (`--snapshot-dir`,
    /// else the state folder's), the migration engine over `strategies`, this machine's record of
    /// operations, the hooks.
    func executor(snapshotDirectory: URL?) -> PlanExecutor {
        PlanExecutor(
            snapshotDirectory: snapshotFolder(snapshotDirectory),
            builder: StoreBuilder(
                engine: MigrationEngine(registry: strategies), recipeSearchPath: recipeSearchPath,
                environment: environment, model: model, newIdentity: true, damagedSourceFailsPrecondition: true,
                progress: terminal.rowCounter("building")
            ).builder,
            records: OperationRecords(stateFolder: stateFolder), hooks: hooks, commandLine: arguments)
    }

    /// Asks before a destructive step; false when nobody can answer (scripts pass `--yes`).
    func confirm(_ question: String) -> Bool { terminal.ask(question) }

    /// Runs `body`, prints its result as JSON (`--json`) or through `text`, and throws the exit
    /// code that `status` gives when it is not 0. A `USMError` becomes its sentence on stderr (and
    /// the error envelope on stdout with `--json`) and its documented exit code.
    /// `json`, when given, writes the JSON in pieces instead (reports that can be large).
    func perform<Result: Encodable>(
        _ body: (Terminal) throws -> Result, text: (Result, Terminal) -> Void,
        status: (Result) -> ExitStatus = { _ in .ok },
        json: ((Result, (String) -> Void) throws -> Void)? = nil
    ) throws {
        let result: Result
        do {
            result = try body(terminal)
            terminal.endProgress()
        } catch {
            terminal.endProgress()
            throw fail(USMError.wrap(error))
        }
        if output.json, let json {
            try json(result, terminal.write)
        } else if output.json {
            terminal.json(try JSONOutput.encode(result))
        } else {
            text(result, terminal)
        }
        // The work is done; output that could not be written is still a failure to report.
        if let failure = terminal.outputFailure() {
            terminal.err("usm-repair: error: \(failure.message)")
            throw ExitCode(failure.exitStatus.rawValue)
        }
        let code = status(result)
        if code != .ok { throw ExitCode(code.rawValue) }
    }

    /// Runs a `status` or `check` inspection and prints its report (`text`, when given, prints it instead).
    func report(_ inspection: Inspection, text: ((StatusReport, Terminal) -> Void)? = nil) throws {
        var inspection = inspection
        inspection.records = OperationRecords(stateFolder: stateFolder)
        inspection.strategies = strategyResolver
        try perform(
            { terminal in
                try inspection.run(progress: terminal.progress)
            },
            text: { report, terminal in
                if let text { return text(report, terminal) }
                ReportPrinter(
                    terminal: terminal, verbose: output.verbose, quiet: output.quiet,
                    currentDirectory: paths.currentDirectory.path
                ).print(report)
            }, status: { $0.exitCode }, json: { report, write in try report.writeJSON(write) })
    }

    /// Plans a maintenance operation and runs it as every change runs (`runChange`).
    func runOperation(
        _ maintenance: Maintenance, layout: LayoutFlags, plan flags: ChangeFlags, snapshots: SnapshotFlags,
        data: DataConsent = DataConsent()
    ) throws {
        var operation = MaintenanceChange(
            options: layout.options(paths), maintenance: maintenance,
            executor: executor(snapshotDirectory: snapshots.directory(paths)),
            strategies: strategyResolver, consent: data)
        operation.model = model
        try runChange(operation, flags: flags) { report, terminal, preview in
            guard !output.quiet || report.dryRun || preview else { return }
            PlanPrinter(terminal: terminal, verbose: output.verbose).print(report, preview: preview)
        }
    }

    /// The one door of every changing command: `ChangeRunner` prepares, reports a dry run, asks
    /// (`--yes`, or the plan headed as a plan with its reasons, then the question on a terminal;
    /// refused without one) and runs; the report is printed as JSON (`--json`) or by `text`
    /// (`preview`: the plan shown before the question), and the process exits with the report's
    /// `exitCode`. With `--quiet` the way back (the undo) goes to stderr; `text` decides what else.
    /// `change` is made inside, so that what making it throws is reported like any refusal.
    func runChange<C: Change>(
        _ change: @autoclosure () throws -> C, flags: ChangeFlags,
        text: @escaping (ChangeReport<C.Details>, Terminal, _ preview: Bool) -> Void
    ) throws {
        try perform(
            { terminal in
                try ChangeRunner.run(
                    try change(), dryRun: flags.dryRun, detailedExitCode: flags.detailedExitCode,
                    progress: { terminal.progressLine($0) }
                ) { consent, preview in
                    guard !flags.yes else { return }
                    guard terminal.interactive else { throw USMError.confirmationRequired(consent.unattended) }
                    text(try preview(), terminal, true)
                    guard confirm(consent.question) else {
                        throw USMError.confirmationRequired("not confirmed; nothing was changed")
                    }
                }
            },
            text: { report, terminal in
                // Quiet, but never without the way back: the undo goes to stderr.
                if output.quiet, !report.dryRun, let snapshot = report.snapshot {
                    terminal.err("to undo: usm-repair restore \(ShellWords.quote(snapshot)) --yes")
                }
                text(report, terminal, false)
            },
            status: { ExitStatus(rawValue: $0.exitCode) ?? .ok })
    }

    /// Prints an error (the envelope on stdout with `--json`, always a sentence on stderr) and
    /// returns the exit code to throw.
    func fail(_ error: USMError) -> ExitCode {
        ErrorEnvelope.print(
            command: command, code: error.code, message: error.message, status: error.exitStatus, json: output.json,
            out: terminal.json, err: terminal.err)
        return ExitCode(error.exitStatus.rawValue)
    }
}

/// The JSON printed for every failure, usage errors included: one shape for scripts.
struct ErrorEnvelope: Encodable {
    struct Body: Encodable {
        let code: String
        let message: String
    }

    let schemaVersion = 1
    let command: String
    let error: Body
    let exitCode: Int32
    let exitStatus: String

    static func print(
        command: String, code: String, message: String, status: ExitStatus, json: Bool,
        out: (String) -> Void, err: (String) -> Void
    ) {
        if json {
            let envelope = ErrorEnvelope(
                command: command, error: Body(code: code, message: message), exitCode: status.rawValue,
                exitStatus: status.name)
            if let text = try? JSONOutput.encode(envelope) { out(text) }
        }
        err("usm-repair: error: \(message)")
    }
}
