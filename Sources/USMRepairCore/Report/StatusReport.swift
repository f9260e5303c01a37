import Foundation

/// The whole answer of `status` and `check`: the layout, every store, the findings and the advice.
/// Its JSON encoding (`--json`) is a stable, documented schema; `schemaVersion` changes only when
/// a key is removed or changes meaning (new keys may appear in any release).
public struct StatusReport: Sendable, Encodable {
    /// The active cloud store, as named by the `StoreUUID` marker.
    public struct ActiveStore: Sendable, Encodable, Equatable {
        public let uuid: String
        public let cloudVersion: Int
        /// The marker file that names it.
        public let marker: String
        /// True when the store's main file exists.
        public let exists: Bool
    }

    /// The corruption marker.
    public struct Corruption: Sendable, Encodable, Equatable {
        public let uuid: String
        public let affectsActiveStore: Bool
        public let cloudVersion: Int
        public let marker: String
    }

    /// The layout found.
    public struct LayoutSummary: Sendable, Encodable {
        /// `layout` or `store` (a single `--store`).
        public let mode: String
        @NullEncoded public var container: String?
        @NullEncoded public var appDir: String?
        @NullEncoded public var cloudDir: String?
        @NullEncoded public var preferences: String?
        public let storeName: String
        public let markers: [Marker]
        public let cloudContent: [Layout.CloudContent]
        public let leftovers: [Layout.Leftover]
    }

    /// Counts for a quick look.
    public struct Summary: Sendable, Encodable, Equatable {
        public let stores: Int
        public let present: Int
        public let healthy: Int
        public let errors: Int
        public let warnings: Int
    }

    /// The JSON schema version.
    public let schemaVersion = 1
    /// `status` or `check`.
    public let command: String
    public let cloudEnabled: Bool?
    public let activeStore: ActiveStore?
    public let corruption: Corruption?
    public let stores: [StoreReport]
    public let layout: LayoutSummary
    /// Findings about the layout itself (markers, preferences, leftovers, symlinks).
    public let problems: [Problem]
    public let advice: [String]
    public let summary: Summary
    /// The process exit code this report leads to, and its name.
    public let exitCode: ExitStatus

    enum CodingKeys: String, CodingKey {
        case schemaVersion, command, cloudEnabled, activeStore, corruption, stores, layout, problems, advice, summary, exitCode, exitStatus
    }

    /// Encodes every key, `null` included.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(command, forKey: .command)
        try c.encode(cloudEnabled, forKey: .cloudEnabled)
        try c.encode(activeStore, forKey: .activeStore)
        try c.encode(corruption, forKey: .corruption)
        try c.encode(stores, forKey: .stores)
        try c.encode(layout, forKey: .layout)
        try c.encode(problems, forKey: .problems)
        try c.encode(advice, forKey: .advice)
        try c.encode(summary, forKey: .summary)
        try c.encode(exitCode.rawValue, forKey: .exitCode)
        try c.encode(exitCode.name, forKey: .exitStatus)
    }

    /// Every problem, layout first, then each store's.
    public var allProblems: [Problem] { problems + stores.flatMap(\.problems) }

    /// The report as JSON text (pretty-printed, sorted keys, stable across runs).
    public func json() throws -> String { try JSONOutput.encode(self) }
}

/// The one JSON style of every report and manifest: pretty-printed, sorted keys, slashes as they are.
public enum JSONOutput {
    /// Encodes `value` as text.
    public static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try data(value), as: UTF8.self)
    }

    /// Encodes `value` as bytes.
    public static func data(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }
}
