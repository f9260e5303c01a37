import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair archive`: one file holding a whole iCloud/Core Data situation, for a colleague or a bug report.
struct ArchiveCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Bundle everything the layout holds into one archive with a manifest (read-only on your folders).",
        discussion: """
            Every store's file set (-wal, -shm, .<Name>_SUPPORT included, main file and -wal captured \
            together), CloudLogs with its markers and transaction logs, the preferences plist and \
            leftovers; manifest.json first (tool, command line, time, host, the full status report, \
            every file's size, mode, mtime and SHA-256, rows per entity), and PATH.sha256 beside it.

            Exit codes: 0 written; 2 a path is not what it must be; 3 refused (over --max-size, \
            output exists without --overwrite); 64 usage (also an --output name that says another \
            format); 66 not found; 74 I/O error, a file kept changing while it was read, or the \
            bundle was written without what could not be read (listed); 75 out of space.

            Examples:
              usm-repair archive --container Notes.xcappdata -o ticket-4711.tar.zst
              usm-repair archive --container Customer.xcappdata --redact -o redacted.zip
              usm-repair archive --store Customer.sqlite --metadata-only --max-size 5M
            """
    )

    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp(
            "The archive to write (default usm-bundle-<UTC time>.<format> here). Never inside the layout's folders.",
            valueName: "path"), completion: .file())
    var outputPath: String?

    @Option(
        name: .customLong("format"),
        help: ArgumentHelp(
            "tar.zst (default), tar.gz, tar.xz or zip; default from --output's extension, which must agree with it.",
            valueName: "format"))
    var format: ArchiveFormat?

    @Flag(
        name: .customLong("redact"),
        help: "Replace text and blob values by keyed hashes (stores stay valid); leave transaction logs out.")
    var redact = false

    @Flag(
        name: .customLong("metadata-only"),
        help: "Only schema, metadata and row counts: no rows, logs or external data.")
    var metadataOnly = false

    @Option(
        name: .customLong("max-size"),
        help: ArgumentHelp(
            "Refuse, before writing, a bundle estimated larger than this (bytes, or with K, M, G suffixes).",
            valueName: "size"))
    var maxSize: ByteSize?

    @Flag(name: .customLong("overwrite"), help: "Replace the output file if it exists.")
    var overwrite = false

    func validate() throws {
        if redact && metadataOnly { throw ValidationError("--redact and --metadata-only cannot be used together") }
        do { _ = try ArchiveFormat.choose(explicit: format, output: outputPath) } catch let error as USMError {
            throw ValidationError(error.message)
        }
    }

    func run(_ context: CommandContext) throws {
        let chosen = (try? ArchiveFormat.choose(explicit: format, output: outputPath)) ?? .tarZstd
        let content: ArchiveOptions.Content = redact ? .redacted : metadataOnly ? .metadataOnly : .full
        let options = ArchiveOptions(
            layout: layout.options(context.paths), output: outputPath.map { context.paths.url($0) },
            format: chosen, content: content, maxSize: maxSize?.bytes, overwrite: overwrite,
            commandLine: context.arguments,
            currentDirectory: context.paths.currentDirectory)
        try context.perform(
            { terminal in
                try BundleWriter(options: options).run(
                    progress: terminal.progressBytes, phase: { terminal.progressLine($0) })
            },
            text: { result, terminal in
                guard !output.quiet else { return }
                terminal.out(
                    "Wrote \(result.output) (\(result.format), \(result.bytes) bytes, \(result.entries) entries, \(result.stores) stores)"
                )
                terminal.out("SHA-256 \(result.sha256) in \(result.sidecar)")
                if let map = result.redactionMap {
                    terminal.out(
                        "Redaction map (private, 0600; keep it, never send it): \(map): the value each token stands for"
                    )
                }
                if output.verbose {
                    for skip in result.skipped { terminal.out("  left out: \(skip.path): \(skip.reason)") }
                    if result.skippedCount > result.skipped.count {
                        terminal.out(
                            "  ... and \(result.skippedCount - result.skipped.count) more in the manifest's \"skipped\" list"
                        )
                    }
                } else if result.skippedCount > 0 {
                    terminal.out(
                        "\(result.skippedCount) item(s) left out, each with its reason in the manifest's \"skipped\" list (--verbose lists them)"
                    )
                }
            },
            status: { result in
                if !result.undecodableNames.isEmpty {
                    // Said on stderr whatever the output style: what lies below was not read as a layout.
                    context.terminal.err(
                        "warning: \(result.undecodableNames.count) name(s) are not valid UTF-8 (a damaged copy): nothing below them was read as part of the layout, so no store there is in the manifest's stores; "
                            + (content == .full
                                ? "what the bundle holds of them it holds as plain files, with their exact bytes:"
                                : "they are left out of the bundle:")
                    )
                    for path in result.undecodableNames { context.terminal.err("  \(path)") }
                }
                if result.unreadable > 0 {
                    // Said on stderr whatever the output style: the bundle is not the whole layout.
                    context.terminal.err(
                        "warning: \(result.unreadable) item(s) could not be read and are not in the bundle (exit 74):")
                    for skip in result.skipped where skip.unreadable {
                        context.terminal.err("  \(skip.path): \(skip.reason)")
                    }
                }
                return result.status
            })
        if content == .full {
            // Always said, --quiet included: it is about whom the file may be shared with.
            context.terminal.err(
                """
                note: this bundle holds the app's personal data as it is (every row of every store, transaction logs, \
                preferences). Share it only with people allowed to see that data, or make one with --redact or --metadata-only.
                """)
        }
    }
}

extension ArchiveFormat: ExpressibleByArgument {}
