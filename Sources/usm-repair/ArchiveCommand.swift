import ArgumentParser
import Foundation
import USMRepairCore

/// `usm-repair archive`: one file holding a whole iCloud/Core Data situation, for a colleague or a bug report.
struct ArchiveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "archive",
        abstract: "Bundle everything the layout holds into one archive with a manifest (read-only on your folders).",
        discussion: """
            Every store's file set (-wal, -shm, .<Name>_SUPPORT included, main file and -wal captured \
            together), CloudLogs with its markers and transaction logs, the preferences plist and \
            leftovers; manifest.json first (tool, command line, time, host, the full status report, \
            every file's size, mode, mtime and SHA-256, rows per entity), and PATH.sha256 beside it.

            Exit codes: 0 written; 2 a path is not what it must be; 3 refused (over --max-size, \
            output exists without --overwrite); 64 usage; 66 not found; 74 I/O error, or a file \
            kept changing while it was read.
            """
    )

    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp(
        "The archive to write (default usm-bundle-<UTC time>.<format> here). Never inside the layout's folders.",
        valueName: "path"), completion: .file())
    var outputPath: String?

    @Option(name: .customLong("format"), help: ArgumentHelp(
        "tar.zst (default), tar.gz, tar.xz or zip; default from --output's extension.", valueName: "format"))
    var format: ArchiveFormat?

    @Flag(name: .customLong("redact"), help: "Replace text and blob values by keyed hashes (stores stay valid); leave transaction logs out.")
    var redact = false

    @Flag(name: .customLong("metadata-only"), help: "Only schema, metadata and row counts: no rows, logs or external data.")
    var metadataOnly = false

    @Option(name: .customLong("max-size"), help: ArgumentHelp(
        "Refuse, before writing, a bundle estimated larger than this (bytes, or with K, M, G suffixes).", valueName: "size"))
    var maxSize: ByteSize?

    @Flag(name: .customLong("overwrite"), help: "Replace the output file if it exists.")
    var overwrite = false

    func validate() throws {
        if redact && metadataOnly { throw ValidationError("--redact and --metadata-only cannot be used together") }
    }

    func run() throws {
        let chosen = format ?? outputPath.flatMap(ArchiveFormat.infer(from:)) ?? .tarZstd
        let content: ArchiveOptions.Content = redact ? .redacted : metadataOnly ? .metadataOnly : .full
        let options = ArchiveOptions(
            layout: layout.options, output: outputPath.map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) },
            format: chosen, content: content, maxSize: maxSize?.bytes, overwrite: overwrite)
        try Runner(output: output).perform({ terminal in
            try BundleWriter(options: options).run(progress: terminal.progressBytes)
        }, text: { result, terminal in
            guard !output.quiet else { return }
            terminal.out("Wrote \(result.output) (\(result.format), \(result.bytes) bytes, \(result.entries) entries, \(result.stores) stores)")
            terminal.out("SHA-256 \(result.sha256) in \(result.sidecar)")
            if output.verbose {
                for skip in result.skipped { terminal.out("  left out: \(skip.path): \(skip.reason)") }
            } else if !result.skipped.isEmpty {
                terminal.out("\(result.skipped.count) item(s) left out, each with its reason in the manifest's \"skipped\" list (--verbose lists them)")
            }
        })
        if content == .full, !output.quiet {
            FileHandle.standardError.write(Data("""
                note: this bundle holds the app's personal data as it is (every row of every store, transaction logs, \
                preferences). Share it only with people allowed to see that data, or make one with --redact or --metadata-only.

                """.utf8))
        }
    }
}

extension ArchiveFormat: ExpressibleByArgument {}

/// A size with an optional K/M/G (powers of 1024) suffix.
struct ByteSize: ExpressibleByArgument {
    let bytes: Int64

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased()
        let units: [(String, Int64)] = [("GIB", 1 << 30), ("MIB", 1 << 20), ("KIB", 1 << 10), ("GB", 1 << 30), ("MB", 1 << 20),
                                        ("KB", 1 << 10), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1)]
        var multiplier: Int64 = 1
        var number = text
        for (suffix, value) in units where text.hasSuffix(suffix) {
            multiplier = value
            number = String(text.dropLast(suffix.count))
            break
        }
        guard let n = Double(number.trimmingCharacters(in: .whitespaces)), n > 0 else { return nil }
        bytes = Int64(n * Double(multiplier))
    }
}
