import Foundation

/// One entry of a bundle, as the manifest records it. `path` is the path inside the archive:
/// a root name (`container`, `app`, `cloud`, `preferences`, `store`, `tree`) then the path below it.
public struct BundleFile: Sendable, Codable, Equatable {
    /// `file`, `directory` or `symlink`.
    public var kind: String
    public var path: String
    /// Bytes of content (0 for directories and symlinks).
    public var size: Int64
    /// Permission bits as octal text, e.g. `0644`.
    public var mode: String
    /// Modification time, ISO 8601 UTC with nanoseconds (for people).
    public var mtime: String
    /// Modification time in nanoseconds since 1970 (exact, for restore).
    public var mtimeNanos: Int64
    /// SHA-256 of the content (files).
    @NullEncoded public var sha256: String?
    /// The link's target text (symlinks).
    @NullEncoded public var linkTarget: String?
    /// Where it was read from.
    @NullEncoded public var source: String?
    /// Set when the content was replaced by redaction (`redacted`) or reduced (`metadata-only`).
    @NullEncoded public var transformed: String?

    /// The permission bits as a number.
    public var modeBits: UInt32 { UInt32(mode, radix: 8) ?? 0 }

    /// The modification time.
    public var fileTime: FileTime {
        FileTime(totalNanoseconds: mtimeNanos)
    }

    init(
        kind: String, path: String, size: Int64, mode: UInt32, mtime: FileTime, sha256: String?, linkTarget: String?,
        source: String?, transformed: String? = nil
    ) {
        self.kind = kind
        self.path = path
        self.size = size
        self.mode = String(format: "%04o", mode & 0o7777)
        self.mtime = mtime.iso8601
        mtimeNanos = mtime.totalNanoseconds
        self.sha256 = sha256
        self.linkTarget = linkTarget
        self.source = source
        self.transformed = transformed
    }

    enum CodingKeys: String, CodingKey {
        case kind, path, size, mode, mtime, mtimeNanos, sha256, linkTarget, source, transformed
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(String.self, forKey: .kind)
        path = try c.decode(String.self, forKey: .path)
        size = try c.decode(Int64.self, forKey: .size)
        mode = try c.decode(String.self, forKey: .mode)
        mtime = try c.decode(String.self, forKey: .mtime)
        mtimeNanos = try c.decode(Int64.self, forKey: .mtimeNanos)
        sha256 = try c.decodeIfPresent(String.self, forKey: .sha256)
        linkTarget = try c.decodeIfPresent(String.self, forKey: .linkTarget)
        source = try c.decodeIfPresent(String.self, forKey: .source)
        transformed = try c.decodeIfPresent(String.self, forKey: .transformed)
    }
}

extension NullEncoded: Decodable where Value: Decodable {
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}

/// Something left out of a bundle, with the reason.
public struct BundleSkip: Sendable, Codable, Equatable {
    public let path: String
    public let kind: String
    public let reason: String
    /// Left out because it could not be read: the bundle is incomplete (exit 74). Not in the
    /// manifest, whose reason says so in words.
    public var unreadable = false

    enum CodingKeys: String, CodingKey { case path, kind, reason }
}

/// A folder whose content the bundle holds, under `name/` in the archive.
public struct BundleRoot: Sendable, Codable, Equatable {
    public let name: String
    /// The absolute path it was read from.
    public let source: String
}

/// The rows of one store at the moment it was captured.
public struct BundleStore: Sendable, Codable, Equatable {
    /// The main file's path inside the archive.
    public let path: String
    public let role: String
    @NullEncoded public var uuid: String?
    @NullEncoded public var storeUUID: String?
    public let health: String
    public let objects: Int
    /// Rows per entity name.
    public let rows: [String: Int]
    /// How the store was captured: `consistent-copy` (main file and -wal copied together and
    /// re-checked unchanged), `redacted-copy` or `metadata-only-copy`.
    public let captured: String
}

/// How redaction was done, for the receiver.
public struct BundleRedaction: Sendable, Encodable {
    public let method: String
    public let stores: [RedactedStore]
    /// What was left out (transaction logs), empty when there was none.
    public let excluded: [String]
    /// How external-data files were replaced; null when the bundle has none.
    @NullEncoded public var externalData: String?
    /// What was kept of the preferences; null when the bundle has no preferences file.
    @NullEncoded public var preferences: String?

    public init(
        method: String, stores: [RedactedStore], excluded: [String], externalData: String?, preferences: String?
    ) {
        self.method = method
        self.stores = stores
        self.excluded = excluded
        self.externalData = externalData
        self.preferences = preferences
    }

    /// What was replaced in one store.
    public struct RedactedStore: Sendable, Encodable {
        public let path: String
        public let tables: [RedactedTable]
        public let values: Int
    }

    /// The columns replaced in one table.
    public struct RedactedTable: Sendable, Encodable {
        public let table: String
        public let columns: [String]
    }
}

/// `manifest.json`, the first entry of every bundle: what was captured, from where, how, and the
/// SHA-256 of every file, so that a bundle proves its own integrity. This value holds everything
/// but the two lists that grow with the container (`files` and `skipped`): `ManifestWriter`
/// streams those from the bundle's catalog into the JSON at their places.
public struct BundleManifest: Sendable, Encodable {
    /// The format name every bundle carries.
    public static let formatName = "usm-repair-bundle"
    /// The manifest's own version.
    public static let currentVersion = 1
    /// The name of the manifest entry.
    public static let entryName = "manifest.json"

    public var format = BundleManifest.formatName
    public var formatVersion = BundleManifest.currentVersion
    public let tool: [String: String]
    public let commandLine: [String]
    public let createdAt: String
    public let host: [String: String]
    public let archiveFormat: String
    /// `full`, `redacted`, `metadata-only` or `snapshot`.
    public let content: String
    /// True when the bundle holds the app's data as it is (rows, logs, preferences).
    public let personalData: Bool
    public let roots: [BundleRoot]
    /// The full `status --json` report of the layout, null for a plain folder snapshot.
    @NullEncoded public var status: StatusReport?
    public let stores: [BundleStore]
    @NullEncoded public var redaction: BundleRedaction?
    public let totals: [String: Int64]
    /// For a snapshot taken before a change: what it holds and what did not exist (null otherwise).
    @NullEncoded public var snapshot: SnapshotRecord? = nil
}

/// What a snapshot taken before a change records besides the files: the operation, the items it
/// captured, and the items that did not exist then (putting the snapshot back in place removes those).
public struct SnapshotRecord: Sendable, Codable, Equatable {
    /// The command that took it, e.g. `restore` or `delete container`.
    public let operation: String
    /// Archive paths (`<root>/<path>`) of the items captured: each a file, symlink or whole folder.
    public let items: [String]
    /// Archive paths of items that did not exist when the snapshot was taken.
    public let absent: [String]
}
