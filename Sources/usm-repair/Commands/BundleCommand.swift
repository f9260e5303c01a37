import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair bundle`: work with bundles without extracting them.
struct BundleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Work with bundles written by archive.",
        discussion: """
            Examples:
              usm-repair bundle verify ticket-4711.tar.zst
              usm-repair bundle verify ticket-4711.tar.zst --json
            """,
        subcommands: [BundleVerifyCommand.self]
    )
}

/// `usm-repair bundle verify ARCHIVE`: every file against the manifest.
struct BundleVerifyCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Check every entry of a bundle against its manifest (type, size, SHA-256, mode, time) and its .sha256 sidecar.",
        discussion: """
            Each store in the bundle is also opened (a private, read-only copy) and its Z_UUID and rows \
            per entity compared with the manifest. A bundle carries no signature: it proves its \
            integrity against accidents, not against someone who rewrites manifest and sidecar.

            Exit codes: 0 everything matches; 1 differences found (listed); 2 not a bundle, truncated \
            or corrupt; 3 refused (hostile entries); 64 usage; 66 not found; 75 no room for the \
            private copies.

            Examples:
              usm-repair bundle verify ticket-4711.tar.zst
              usm-repair bundle verify ticket-4711.tar.zst --verbose
              usm-repair bundle verify ticket-4711.tar.zst --json
            """
    )

    @Argument(help: ArgumentHelp("The bundle to verify.", valueName: "archive"), completion: .file())
    var archive: String

    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        let verbose = output.verbose && !output.json
        try context.perform(
            { terminal in
                // --verbose: every entry as it is checked (differences are listed again at the end).
                try BundleVerifier.verify(
                    context.paths.url(archive, tilde: false),
                    onEntry: verbose
                        ? { path, problems in
                            if problems.isEmpty { terminal.out("matches: \(path)") }
                        } : nil)
            },
            text: { report, terminal in
                for mismatch in report.mismatches {
                    terminal.out("differs: \(mismatch.path.isEmpty ? "(more)" : mismatch.path): \(mismatch.problem)")
                }
                if report.mismatchCount > report.mismatches.count {
                    terminal.out("... and \(report.mismatchCount - report.mismatches.count) more difference(s)")
                }
                guard !output.quiet else { return }
                if output.verbose {
                    terminal.out(
                        "stores checked against the manifest (Z_UUID, rows per entity): \(report.storesChecked)")
                }
                terminal.out(
                    report.ok
                        ? "OK: \(report.matched) of \(report.entries) entries match the manifest; \(report.storesChecked) store(s) checked; sidecar \(report.sidecar)"
                        : "\(report.mismatchCount) difference(s); \(report.matched) of \(report.entries) entries match; sidecar \(report.sidecar)"
                )
            }, status: { $0.ok ? .ok : .problemsFound })
    }
}
