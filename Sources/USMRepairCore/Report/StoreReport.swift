import Foundation

/// Everything `status` and `check` say about one store. Its JSON encoding is the `stores[]`
/// element of `status --json`, documented in the README; keys are always present (`null` when unknown).
public struct StoreReport: Sendable, Encodable {
    /// Where the store sits in the layout.
    public enum Role: String, Sendable, Codable {
        /// The store used while iCloud is off.
        case local
        /// A copy of a cloud store (Core Data's copy under `CoreDataUbiquitySupport`, an iOS 6
        /// `CloudStore.nosync/<UUID>.sqlite`, or a stray file at the nominal `CloudStore/<UUID>.sqlite`).
        case cloud
        /// A store given directly with `--store`.
        case store
        /// The store of a UIManagedDocument package.
        case document
        /// A store of Apple's own iOS 7 ubiquity folders (an app using Core Data's iCloud options without UbiquityStoreManager).
        case ubiquity
    }

    /// The store's state in one word.
    public enum Health: String, Sendable, Codable {
        case ok, missing, damaged
        case notCoreData = "not-core-data"
        case unreadable
    }

    /// Row count of one entity (objects whose `Z_ENT` is exactly this entity).
    public struct EntityCount: Sendable, Encodable, Equatable {
        public let name: String
        @NullEncoded public var parent: String?
        public let rows: Int
        /// `Z_ENT`.
        public let number: Int
        /// The table holding the rows (shared with the hierarchy's root), nil if missing.
        @NullEncoded public var table: String?
        /// True for Core Data's own entities (history tracking), numbered from 16000.
        public let system: Bool
    }

    /// One member of the file set that exists.
    public struct FileEntry: Sendable, Encodable, Equatable {
        /// `main`, `wal`, `shm`, `journal` or `support`.
        public let member: String
        public let path: String
        /// `file`, `directory`, `symlink`, ...
        public let kind: String
        public let size: Int64
    }

    /// The metadata summary.
    public struct MetadataSummary: Sendable, Encodable {
        public let plist: String
        @NullEncoded public var storeType: String?
        @NullEncoded public var frameworkVersion: Int?
        public let modelVersionIdentifiers: [String]
        public let keys: [String]
        public let ubiquityKeys: [String]
    }

    /// The Core Data tables found, by kind.
    public struct TablesSummary: Sendable, Encodable {
        public let entity: [String]
        public let join: [String]
        public let history: [String]
        public let cloudKit: [String]
        /// Core Data's iCloud bookkeeping tables (`Y_UBMETA`, `Y_UBRANGE`, `Y_UBKVS`): normal in a
        /// ubiquity copy, a problem in the local store (`ubiquity-tables-in-local-store`).
        public let ubiquity: [String]
        public let ordered: [String]
        /// Where relationships were learnt: `model-cache`, `schema` or `none`.
        public let relationshipSource: String
        public let toOneKeys: Int
        /// Every to-one key column and where it points.
        public let toOne: [ToOne]
        /// Attribute columns per entity table (not Z_PK, Z_ENT, Z_OPT, keys or ordering columns).
        public let attributes: [String: [String]]
        /// Join tables with the entity number each key column holds.
        public let joinColumns: [String: [String: Int]]
    }

    /// One to-one key column.
    public struct ToOne: Sendable, Encodable, Equatable {
        public let table: String
        public let column: String
        @NullEncoded public var relationship: String?
        /// The destination's table and the entity numbers a target row may have.
        public let destinationTable: String
        public let destinationEntities: [Int]
    }

    public var role: Role
    /// Where the file set lies (`local`, `core-data-copy`, `nosync`, `nominal`, `file`, `document`, `ubiquity`).
    public var location: Layout.Location
    /// For a copy under `CoreDataUbiquitySupport`: its peer, content name, account folder, folders.
    @NullEncoded public var copy: Layout.UbiquityCopy?
    /// For a cloud store's copy: true for the copy the app opens, false for another, null when it cannot be known.
    @NullEncoded public var opens: Bool?
    /// For a document's store: the package folder.
    @NullEncoded public var document: String?
    /// The USM store UUID: a cloud store's file name; nil for the local store and `--store`.
    @NullEncoded public var uuid: String?
    /// For cloud stores: 0 (`CloudStore.nosync`, iOS 6) or 1 (`CloudStore`, iOS 7+).
    @NullEncoded public var cloudVersion: Int?
    /// True when this cloud store is the one `StoreUUID` names.
    @NullEncoded public var active: Bool?
    public var path: String
    public var exists: Bool
    public var health: Health
    /// `Z_METADATA.Z_UUID`.
    @NullEncoded public var storeUUID: String?
    public var ubiquityMetadata: Bool
    public var walPresent: Bool
    /// `wal` or `delete` from the header; nil when unknown.
    @NullEncoded public var journalMode: String?
    /// `ok`, `failed`, or `not-run`; which check ran is in `integrityCheck`.
    public var integrity: String
    /// `quick_check` (status) or `integrity_check` (check).
    @NullEncoded public var integrityCheck: String?
    public var objects: Int
    public var entities: [EntityCount]
    public var files: [FileEntry]
    @NullEncoded public var metadata: MetadataSummary?
    @NullEncoded public var tables: TablesSummary?
    /// External-data files present in `.X_SUPPORT/_EXTERNAL_DATA`.
    public var externalDataFiles: Int
    public var problems: [Problem]
    /// Set when the store could not be read at all; decides the exit code.
    public var readFailure: USMError?
    /// True when its rows were counted (`objects`, `entities`): read at `status` depth or deeper.
    public var counted = false

    // readFailure decides the exit code; its sentence is already among the problems.
    enum CodingKeys: String, CodingKey {
        case role, location, copy, opens, document, uuid, cloudVersion, active, path, exists, health, storeUUID,
            ubiquityMetadata, walPresent
        case journalMode, integrity, integrityCheck, objects, entities, files, metadata, tables, externalDataFiles,
            problems
    }

    /// A report for a store that has not been read yet.
    public init(role: Role, path: String, location: Layout.Location = .file) {
        self.role = role
        self.location = location
        self.path = path
        exists = false
        health = .missing
        ubiquityMetadata = false
        walPresent = false
        integrity = "not-run"
        objects = 0
        entities = []
        files = []
        externalDataFiles = 0
        problems = []
    }

    /// The exit status this store contributes: read failures by their kind; for `check`, a problem
    /// at `threshold` or above (errors; warnings too with `--strict`) that is not ignored makes it
    /// `problemsFound` (information never does); for `status`, a damaged or non-Core-Data store is `badInput`.
    public func exitStatus(forCheck: Bool, threshold: Problem.Severity = .error) -> ExitStatus {
        if let readFailure { return readFailure.exitStatus }
        switch health {
        case .notCoreData: return .badInput
        case .unreadable: return .ioError
        case .damaged: return forCheck ? .problemsFound : .badInput
        case .ok, .missing:
            let failing = problems.contains { !$0.ignored && $0.severity >= max(threshold, .warning) }
            return forCheck && failing ? .problemsFound : .ok
        }
    }
}
