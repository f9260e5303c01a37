import ArgumentParser
import Foundation
import USMRepairCore

/// Runs a command's core operation and prints its result, turning errors into messages and exit codes.
struct Runner {
    let output: OutputFlags

    /// Runs `body`, prints its result as JSON (`--json`) or through `text`, and exits with the
    /// code `status` gives; a `USMError` becomes its message and documented exit code.
    func perform<Result: Encodable>(
        _ body: (Terminal) throws -> Result, text: (Result, Terminal) -> Void, status: (Result) -> ExitStatus = { _ in .ok }
    ) throws {
        let terminal = Terminal(quiet: output.quiet, json: output.json)
        let result: Result
        do {
            result = try body(terminal)
            terminal.endProgress()
        } catch let error as USMError {
            terminal.endProgress()
            fail(error, terminal: terminal)
        } catch {
            // Every error a user can cause is a USMError; anything else is still a failure to read
            // or write, never ArgumentParser's generic exit 1 (which means "problems found" here).
            terminal.endProgress()
            fail(.unreadable(path: "", reason: "\(error)"), terminal: terminal)
        }
        if output.json {
            terminal.out(try JSONOutput.encode(result))
        } else {
            text(result, terminal)
        }
        let code = status(result)
        if code != .ok { throw ExitCode(code.rawValue) }
    }

    /// Runs a `status` or `check` inspection and prints its report.
    func report(_ inspection: Inspection) throws {
        try perform({ terminal in
            try inspection.run(progress: terminal.progress)
        }, text: { report, terminal in
            ReportPrinter(terminal: terminal, verbose: output.verbose, quiet: output.quiet).print(report)
        }, status: { $0.exitCode })
    }

    /// Prints an error (as JSON on stdout with --json, always as a sentence on stderr) and exits.
    func fail(_ error: USMError, terminal: Terminal) -> Never {
        if output.json {
            let payload: [String: Any] = [
                "schemaVersion": 1,
                "error": ["code": error.code, "message": error.message],
                "exitCode": Int(error.exitStatus.rawValue),
                "exitStatus": error.exitStatus.name,
            ]
            if let data = try? JSONSerialization.data(withJSONObject: payload, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) {
                terminal.out(String(decoding: data, as: UTF8.self))
            }
        }
        terminal.err("usm-repair: error: \(error.message)")
        Foundation.exit(error.exitStatus.rawValue)
    }
}
