import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair bundle`: work with bundles without extracting them.
struct BundleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Work with bundles written by archive.",
        subcommands: [BundleVerifyCommand.self]
    )
}

/// `usm-repair bundle verify ARCHIVE`: every file against the manifest.
struct BundleVerifyCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every entry of a bundle against its manifest (type, size, SHA-256, mode, time) and its .sha256 sidecar.",
        discussion: """
            Exit codes: 0 everything matches; 1 differences found (listed); 2 not a bundle, truncated \
            or corrupt; 3 refused (hostile entries); 64 usage; 66 not found.
            """
    )

    @Argument(help: ArgumentHelp("The bundle to verify.", valueName: "archive"), completion: .file())
    var archive: String

    @OptionGroup(title: "Output") var output: OutputFlags

    func run(_ context: CommandContext) throws {
        try context.perform({ _ in
            try BundleVerifier.verify(URL(fileURLWithPath: archive))
        }, text: { report, terminal in
            for mismatch in report.mismatches { terminal.out("differs: \(mismatch.path): \(mismatch.problem)") }
            guard !output.quiet else { return }
            terminal.out(report.ok
                ? "OK: \(report.matched) of \(report.entries) entries match the manifest; sidecar \(report.sidecar)"
                : "\(report.mismatches.count) difference(s); \(report.matched) of \(report.entries) entries match; sidecar \(report.sidecar)")
        }, status: { $0.ok ? .ok : .problemsFound })
    }
}
