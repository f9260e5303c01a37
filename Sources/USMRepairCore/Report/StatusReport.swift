import Foundation

/// The whole answer of `status` and `check`: the layout, every store, the findings, what the app
/// will do at its next launch, and the advice. Its JSON encoding (`--json`) is a stable, documented
/// schema; `schemaVersion` changes only when a key is removed or changes meaning (new keys may appear).
public struct StatusReport: Sendable, Encodable {
    /// The active cloud store as the app finds it: the cached StoreUUID first, then the marker.
    public struct ActiveStore: Sendable, Encodable, Equatable {
        /// The store the app settles on (the marker's when cache and marker differ; it reloads into it).
        public let uuid: String
        /// The marker version the app reads (`V`), or the cache key's without the ubiquity container.
        public let cloudVersion: Int
        /// The marker file that names it, null when only the cache does.
        @NullEncoded public var marker: String?
        /// What the marker holds, exactly as the app reads it (null without one).
        @NullEncoded public var markerUUID: String?
        /// What the preferences cache under the key the app reads (null without one).
        @NullEncoded public var cachedUUID: String?
        /// `marker` or `cache`: where the app reads the UUID it loads first.
        public let source: String
        /// True when the UUID is 36 upper-case characters (what the app needs).
        public let valid: Bool
        /// True when this device holds a copy of the store (Core Data's copy or an iOS 6 file).
        public let exists: Bool
        /// How many copies of it this device holds.
        public let copies: Int
        /// True when `CloudLogs/<UUID>` is present.
        public let content: Bool
    }

    /// The corruption marker the app reads (`CorruptedUUID` of the active version).
    public struct Corruption: Sendable, Encodable, Equatable {
        public let uuid: String
        public let affectsActiveStore: Bool
        public let cloudVersion: Int
        public let marker: String
    }

    /// The layout found.
    public struct LayoutSummary: Sendable, Encodable {
        /// `layout`, `store` (a single `--store`) or `document` (a single `--document`).
        public let mode: String
        @NullEncoded public var container: String?
        @NullEncoded public var appDir: String?
        @NullEncoded public var cloudDir: String?
        /// How the ubiquity container was found: `given` (--cloud-dir), `inside` the download,
        /// `beside` it (sharing a peer folder or a store UUID with it), `beside-unconfirmed`.
        @NullEncoded public var cloudSource: String?
        @NullEncoded public var preferences: String?
        public let storeName: String
        public let markers: [Marker]
        public let cloudContent: [Layout.CloudContent]
        public let cloudStores: [Layout.CloudStore]
        public let cachedStoreUUIDs: [Preferences.CachedStoreUUID]
        public let accountMaps: [Preferences.AccountMap]
        public let leftovers: [Layout.Leftover]
        public let documents: [Layout.Document]
        /// For `--mac-app`: the bundle ID, the home folder, whether the app is sandboxed, and each
        /// of its app folder, preferences and ubiquity container with where and how it was found.
        @NullEncoded public var macApp: MacApp? = nil
    }

    /// Counts for a quick look.
    public struct Summary: Sendable, Encodable, Equatable {
        public let stores: Int
        public let present: Int
        public let healthy: Int
        public let errors: Int
        public let warnings: Int
        /// True when the corruption marker names the active store.
        public let activeStoreMarkedCorrupt: Bool
        /// The next launch's outcome in one word (`nextLaunch.outcome`), null for a single store.
        @NullEncoded public var nextLaunch: String?
    }

    /// The JSON schema version.
    public let schemaVersion = 1
    /// `status` or `check`.
    public let command: String
    public let cloudEnabled: Bool?
    public let activeStore: ActiveStore?
    public let corruption: Corruption?
    /// What the app will do at its next launch (null for a single store or document).
    public let nextLaunch: NextLaunch?
    public let stores: [StoreReport]
    public let layout: LayoutSummary
    /// Findings about the layout itself (markers, preferences, leftovers, symlinks, traps).
    public let problems: [Problem]
    /// What to run next (verified: every changing command in it is accepted by its dry run).
    public internal(set) var advice: [String]
    /// The advice as a script reads it: each item's sentence, why, command as an argument list,
    /// and whether its dry run was accepted (`Advice.Action`).
    public internal(set) var actions: [Advice.Action] = []
    public let summary: Summary
    /// The process exit code this report leads to, and its name.
    public let exitCode: ExitStatus

    enum CodingKeys: String, CodingKey {
        case schemaVersion, command, cloudEnabled, activeStore, corruption, nextLaunch, stores, layout, problems,
            advice, actions, summary
        case exitCode, exitStatus
    }

    /// Encodes every key, `null` included.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(command, forKey: .command)
        try c.encode(cloudEnabled, forKey: .cloudEnabled)
        try c.encode(activeStore, forKey: .activeStore)
        try c.encode(corruption, forKey: .corruption)
        try c.encode(nextLaunch, forKey: .nextLaunch)
        try c.encode(stores, forKey: .stores)
        try c.encode(layout, forKey: .layout)
        try c.encode(problems, forKey: .problems)
        try c.encode(advice, forKey: .advice)
        try c.encode(actions, forKey: .actions)
        try c.encode(summary, forKey: .summary)
        try c.encode(exitCode.rawValue, forKey: .exitCode)
        try c.encode(exitCode.name, forKey: .exitStatus)
    }

    /// Every problem, layout first, then each store's.
    public var allProblems: [Problem] { problems + stores.flatMap(\.problems) }

    /// The report as JSON text (pretty-printed, sorted keys, stable across runs).
    public func json() throws -> String { try JSONOutput.encode(self) }
}
