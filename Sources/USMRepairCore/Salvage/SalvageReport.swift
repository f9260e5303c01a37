import Foundation

/// The answer of `salvage` (or of its dry run): what the damaged file set held that could be
/// read, what was lost and why, what had to be cut to make the result a consistent Core Data
/// store, and the migration engine's verification of the result. Encoded as `salvage --json`.
public struct SalvageReport: Sendable, Encodable {
    /// A page that could not be read or used where a tree needed it.
    public struct DamagedPage: Sendable, Encodable, Equatable {
        /// The page number (from 1).
        public let page: Int
        /// The table whose tree needed it, when known.
        @NullEncoded public var table: String?
        /// Why it could not be used.
        public let reason: String
        /// Cells the page's header says it held, when that much of it could be read.
        @NullEncoded public var cells: Int?
    }

    /// One table's rows.
    public struct TableRows: Sendable, Encodable, Equatable {
        public let name: String
        /// Rows written to the result (before the Core Data pass removed any).
        public var salvaged = 0
        /// Of those, rows found on pages no intact tree led to (orphaned by a lost interior page).
        public var fromOrphanPages = 0
        /// Cells that pages of this table held but that could not be decoded (counted from what
        /// the pages say; pages whose header is lost add nothing here, see `lostPages`).
        public var lostCells = 0
        /// Pages of this table that could not be read at all: their rows are lost, their number unknown.
        public var lostPages = 0
        /// Rows read intact but left out, by reason (a second copy with other content, an entity
        /// `Z_PRIMARYKEY` does not list, a uniqueness constraint).
        public var dropped: [String: Int] = [:]

        public init(name: String) { self.name = name }
    }

    /// One entity's rows in the result.
    public struct EntityRows: Sendable, Encodable, Equatable {
        public let name: String
        public let table: String
        /// Rows of this entity in the result.
        public let rows: Int
    }

    /// References the Core Data pass had to cut because what they point at was lost.
    public struct Cut: Sendable, Encodable, Equatable {
        /// `to-one` (set to NULL), `join-row` (removed) or `external-data` (value set to NULL).
        public let kind: String
        public let table: String
        public let column: String
        public let rows: Int
    }

    /// What the source's files gave.
    public struct Source: Sendable, Encodable, Equatable {
        public let path: String
        @NullEncoded public var storeUUID: String?
        public var pageSize = 0
        public var pages = 0
        /// Pages read (each at most once, except the two-pass cases the README names).
        public var pagesRead = 0
        /// `intact`, or how the page size was found when the header is lost.
        public var header = "intact"
        /// Frames of the `-wal` applied (those of its last valid commit).
        public var walFrames = 0
        /// Free pages found, and whether the freelist was whole.
        public var freePages = 0
        public var freelistComplete = true
        /// Whether the file has a pointer map (auto-vacuum) that helped place orphaned pages.
        public var pointerMap = false
    }

    /// The result.
    public struct Destination: Sendable, Encodable, Equatable {
        public let path: String
        @NullEncoded public var storeUUID: String?
    }

    public let dryRun: Bool
    public var source: Source
    public var destination: Destination
    /// Where the schema came from: `sqlite_schema`, `sqlite_schema+schema-from` (tables the damaged
    /// schema lost taken from the sibling), `schema-from`, `model`.
    public var schema = "sqlite_schema"
    /// Where relationships came from: `model-cache`, `model` (`--model`), `schema` (index names), `none`.
    public var relationships = "none"
    /// `kept`, `rebuilt-from-sibling` (fresh UUID), `rebuilt` (no sibling: a fresh UUID and
    /// only NSStoreType; Core Data will not take it as its model's store).
    public var metadata = "kept"
    public var tables: [TableRows] = []
    public var entities: [EntityRows] = []
    public var referencesCut: [Cut] = []
    /// `Z_MAX` counters raised to the largest salvaged key, by entity.
    public var countersRaised: [String: Int64] = [:]
    /// `Z_PRIMARYKEY` rows added because the damaged store had lost them.
    public var entitiesRestored: [String] = []
    /// Damaged pages (the first 200; `damagedPageCount` counts them all).
    public var damagedPages: [DamagedPage] = []
    public var damagedPageCount = 0
    /// Table-leaf pages found outside every tree that could not be placed in exactly one table.
    public var unplacedPages = 0
    public var unplacedRows = 0
    /// What could not be read, and why (one sentence each).
    public var unreadable: [String] = []
    public var notes: [String] = []
    /// The migration engine's verification of the result (`not-run` in a dry run).
    public var verification = MigrationReport.Verification()
    @NullEncoded public var snapshot: String?
    /// Seconds per phase: `read`, `consistency`, `build` (the engine), `install`, `total`.
    public var durations: [String: Double] = [:]

    init(dryRun: Bool, source: Source, destination: Destination) {
        self.dryRun = dryRun
        self.source = source
        self.destination = destination
    }

    /// True when anything was lost, left out or cut: the exit status is then 1.
    public var lostAnything: Bool {
        damagedPageCount > 0 || unplacedRows > 0 || !referencesCut.isEmpty || !unreadable.isEmpty
            || tables.contains { $0.lostCells > 0 || $0.lostPages > 0 || !$0.dropped.isEmpty }
    }

    /// 0 when every row was salvaged and nothing was cut, 1 when the result lacks something.
    public var exitStatus: ExitStatus { lostAnything ? .problemsFound : .ok }

    /// The most damaged pages listed one by one.
    static let pageListLimit = 200

    enum CodingKeys: String, CodingKey {
        case source, destination, schema, relationships, metadata, tables, entities
        case referencesCut, countersRaised, entitiesRestored, damagedPages, damagedPageCount, unplacedPages,
            unplacedRows
        case unreadable, verification, durations
    }

    /// The `details` of `salvage`'s envelope (`ChangeReport`): what the envelope carries (the
    /// command, dry run, snapshot, notes, exit code) is not repeated here.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(source, forKey: .source)
        try c.encode(destination, forKey: .destination)
        try c.encode(schema, forKey: .schema)
        try c.encode(relationships, forKey: .relationships)
        try c.encode(metadata, forKey: .metadata)
        try c.encode(tables, forKey: .tables)
        try c.encode(entities, forKey: .entities)
        try c.encode(referencesCut, forKey: .referencesCut)
        try c.encode(countersRaised, forKey: .countersRaised)
        try c.encode(entitiesRestored, forKey: .entitiesRestored)
        try c.encode(damagedPages, forKey: .damagedPages)
        try c.encode(damagedPageCount, forKey: .damagedPageCount)
        try c.encode(unplacedPages, forKey: .unplacedPages)
        try c.encode(unplacedRows, forKey: .unplacedRows)
        try c.encode(unreadable, forKey: .unreadable)
        try c.encode(verification, forKey: .verification)
        try c.encode(durations, forKey: .durations)
    }
}
