import Foundation

/// The one JSON object an external plugin reads on stdin when run as `PROGRAM migrate`
/// (Plugins/ManualStrategy/README.md documents every key).
public struct PluginRequest: Codable, Sendable, Equatable {
    /// The source: a private, read-only, self-contained copy (WAL folded in).
    public struct Source: Codable, Sendable, Equatable {
        /// The file's path.
        public var path: String
        /// `Z_METADATA.Z_UUID` (null when not read).
        public var storeUUID: String?
        /// The source's external-data folder (read-only; the host copies referenced files itself).
        public var externalData: String
        /// Every entity of `Z_PRIMARYKEY`, system ones included.
        public var entities: [Entity]
    }

    /// One entity of the source.
    public struct Entity: Codable, Sendable, Equatable {
        /// The name.
        public var name: String
        /// `Z_ENT`.
        public var number: Int
        /// The parent entity's name, null for a root.
        public var parent: String?
        /// The table holding its rows.
        public var table: String?
        /// True for Core Data's own entities (history, CloudKit).
        public var system: Bool
    }

    /// Where to write.
    public struct Destination: Codable, Sendable, Equatable {
        /// The staged main file: create it (a new store) or change it (a merge).
        public var path: String
        /// True for a merge: the file already holds the destination's rows.
        public var exists: Bool
    }

    /// The protocol version (1).
    public var `protocol`: Int
    /// What to read.
    public var source: Source
    /// What to write.
    public var destination: Destination
    /// A private folder the plugin may use (also its working directory and `TMPDIR`).
    public var scratch: String
    /// `--param KEY=VALUE` values.
    public var parameters: [String: String]
}

/// One line of a plugin's stdout (JSON Lines): exactly one of the keys.
public struct PluginMessage: Codable, Sendable, Equatable {
    /// Progress: work done of total.
    public struct Progress: Codable, Sendable, Equatable {
        /// Work done.
        public var done: Int64
        /// Work in all.
        public var total: Int64
    }

    /// The last line: what the plugin did.
    public struct Result: Codable, Sendable, Equatable {
        /// Rows per entity the plugin says the destination holds (compared and reported).
        public var rows: [String: Int]?
    }

    /// A progress report.
    public var progress: Progress?
    /// A sentence for the report's notes.
    public var note: String?
    /// The last message: what was done.
    public var result: Result?
}
