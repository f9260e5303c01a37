import Foundation

/// What `archive` is asked to do.
public struct ArchiveOptions: Sendable {
    /// What goes in.
    public enum Content: String, Sendable, Codable {
        /// Every byte as it is (personal data).
        case full
        /// Text and blob values replaced by keyed hashes, transaction logs left out.
        case redacted
        /// Schema, metadata and row counts; no rows, no logs, no external data.
        case metadataOnly = "metadata-only"
    }

    public var layout: LayoutOptions
    /// The archive to write; nil for `usm-bundle-<UTC time>.<ext>` in `currentDirectory`.
    public var output: URL?
    /// The folder a bundle without `output` is written to (the caller's current folder).
    public var currentDirectory: URL
    public var format: ArchiveFormat
    public var content: Content
    /// Refuse (before writing, from an estimate) a bundle larger than this many bytes.
    public var maxSize: Int64?
    /// Replace an existing output file.
    public var overwrite: Bool
    /// Recorded in the manifest.
    public var commandLine: [String]

    public init(
        layout: LayoutOptions, output: URL? = nil, format: ArchiveFormat = .tarZstd, content: Content = .full,
        maxSize: Int64? = nil, overwrite: Bool = false, commandLine: [String] = CommandLine.arguments,
        currentDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
    ) {
        self.currentDirectory = currentDirectory
        self.layout = layout
        self.output = output
        self.format = format
        self.content = content
        self.maxSize = maxSize
        self.overwrite = overwrite
        self.commandLine = commandLine
    }
}

/// What `archive` did; its JSON is the `archive --json` report.
public struct ArchiveResult: Sendable, Encodable {
    public let schemaVersion = 1
    public let command = "archive"
    public let output: String
    /// The `.sha256` sidecar beside the archive.
    public let sidecar: String
    public let sha256: String
    public let bytes: Int64
    public let format: String
    public let content: String
    public let personalData: Bool
    /// Entries in the archive besides the manifest, and the bytes of their content.
    public let entries: Int
    public let contentBytes: Int64
    public let stores: Int
    /// What was left out, with reasons: the first `ArchiveResult.skippedListed` (the manifest lists all).
    public let skipped: [BundleSkip]
    /// How many items were left out in all.
    public let skippedCount: Int
    /// Items left out because they could not be read (permissions, I/O): the bundle is incomplete
    /// and the exit status is 74.
    public let unreadable: Int
    /// Paths whose name is not valid UTF-8 (`undecodable-name`): nothing below them was read as
    /// part of the layout; a full bundle holds them (where it holds their folder) as plain files
    /// with their exact bytes, the others leave them out.
    public let undecodableNames: [String]
    /// The size estimated before writing, when `--max-size` asked for one.
    @NullEncoded public var estimatedBytes: Int64?
    /// With `--redact`: the private file beside the bundle mapping each token to its value (0600).
    @NullEncoded public var redactionMap: String?
    public let exitCode: Int32
    public let exitStatus: String

    /// At most this many skipped items are listed in the report.
    public static let skippedListed = 1000

    init(
        output: String, sidecar: String, sha256: String, bytes: Int64, format: String, content: String,
        personalData: Bool,
        entries: Int, contentBytes: Int64, stores: Int, skipped: [BundleSkip], skippedCount: Int, unreadable: Int,
        undecodableNames: [String], estimatedBytes: Int64?, redactionMap: String? = nil
    ) {
        self.redactionMap = redactionMap
        self.output = output
        self.sidecar = sidecar
        self.sha256 = sha256
        self.bytes = bytes
        self.format = format
        self.content = content
        self.personalData = personalData
        self.entries = entries
        self.contentBytes = contentBytes
        self.stores = stores
        self.skipped = skipped
        self.skippedCount = skippedCount
        self.unreadable = unreadable
        self.undecodableNames = undecodableNames
        self.estimatedBytes = estimatedBytes
        let status: ExitStatus = unreadable > 0 ? .ioError : .ok
        exitCode = status.rawValue
        exitStatus = status.name
    }

    /// The process exit status: `ioError` when something could not be read.
    public var status: ExitStatus { ExitStatus(rawValue: exitCode) ?? .ok }
}
