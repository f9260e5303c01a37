import Foundation

/// The answer of one migration (or of its dry run): what was asked, what moved, what was left out,
/// how it was verified and how long it took. Encoded as `migrate-store --json`.
public struct MigrationReport: Sendable, Encodable {
    /// One entity's rows.
    public struct EntityRows: Sendable, Encodable, Equatable {
        /// The entity name.
        public let name: String
        /// Rows in the source.
        public let source: Int
        /// Rows in the destination before (0 for a new store).
        public let destinationBefore: Int
        /// Rows the verification expected (nil when the strategy only reports).
        @NullEncoded public var expected: Int?
        /// Rows in the result (nil for a dry run).
        @NullEncoded public var after: Int?
        /// Whether the content digest over its attribute columns was compared, and matched.
        public var digest: String
    }

    /// One store's identity.
    public struct StoreRef: Sendable, Encodable, Equatable {
        /// The main file's path.
        public let path: String
        /// `Z_METADATA.Z_UUID`.
        @NullEncoded public var storeUUID: String?
        /// The content digest recorded in the result's provenance (the source's; null for the destination).
        @NullEncoded public var digest: String?

        public init(path: String, storeUUID: String?, digest: String? = nil) {
            self.path = path
            self.storeUUID = storeUUID
            self.digest = digest
        }
    }

    /// What verification found.
    public struct Verification: Sendable, Encodable {
        /// `ok` or `failed` (`not-run` for a dry run).
        public var integrity = "not-run"
        /// Error-level problems of `check` on the result (the run fails when a new one appears).
        public var problems: [Problem] = []
        /// Error-level problems the source already had, kept as they were.
        public var inherited: [Problem] = []
        /// `equal`, `reported` (manual strategies: differences listed, not required) or `not-run`.
        public var rows = "not-run"
        /// Entities whose digest was compared and matched.
        public var digestsCompared = 0
        /// External-data files copied into the result.
        public var externalDataFiles = 0
        /// Ubiquity keys left in the result's metadata.
        public var ubiquityKeys: [String] = []
        /// Sidecar files beside the result (always empty after a successful run).
        public var sidecars: [String] = []
    }

    /// The strategy id.
    public let strategy: String
    /// `create`, `merge` or `overwrite`.
    public let mode: String
    /// True when nothing was written.
    public let dryRun: Bool
    /// The source store.
    public var source: StoreRef
    /// The destination store (its new UUID after a run that created a store).
    public var destination: StoreRef
    /// The snapshot taken of the old destination, when one was replaced or merged into.
    @NullEncoded public var snapshot: String?
    /// The recipe run (`id`), when any.
    @NullEncoded public var recipe: String?
    /// The recipe file's SHA-256.
    @NullEncoded public var recipeSHA256: String?
    /// The external plugin run, when any.
    @NullEncoded public var plugin: String?
    /// The steps (the plan with `--dry-run`; what was done otherwise), SQL included.
    public var steps: [MigrationStep] = []
    /// Rows per entity.
    public var entities: [EntityRows] = []
    /// Rows not duplicated because of uniqueness constraints, per entity.
    public var deduplicated: [String: Int] = [:]
    /// Incoming objects a merge found already in the destination (same identity): not copied twice, per entity.
    public var matched: [String: Int] = [:]
    /// What was left out, and why.
    public var leftOut: [String] = []
    /// Other notes.
    public var notes: [String] = []
    /// Where the result's `Z_UUID` comes from: `new`, `replaced-store` (`--overwrite`), `source` (a
    /// whole-store repair recipe), `destination` (a merge); `not-run` for a dry run.
    public var identity = "not-run"
    /// The counters (`Z_MAX`) raised because they were behind the keys in use: `entity`, `from`, `to`.
    public var countersRaised: [CounterRaise] = []

    /// One counter raised.
    public struct CounterRaise: Sendable, Encodable, Equatable {
        public let entity: String
        public let from: Int64
        public let to: Int64
    }
    /// The verification.
    public var verification = Verification()
    /// Seconds per phase: `capture`, `strategy`, `identity`, `verify`, `install`, `total`.
    public var durations: [String: Double] = [:]
    /// The process's exit status: `ok`, or `applied` (20) with `--detailed-exitcode`.
    public var exitStatus: ExitStatus = .ok

    /// Creates a report.
    public init(strategy: String, mode: String, dryRun: Bool, source: StoreRef, destination: StoreRef) {
        self.strategy = strategy
        self.mode = mode
        self.dryRun = dryRun
        self.source = source
        self.destination = destination
    }

    enum CodingKeys: String, CodingKey {
        case strategy, mode, source, destination, recipe, recipeSHA256, plugin, steps
        case entities, deduplicated, matched, leftOut, identity, countersRaised, verification, durations
    }

    /// The `details` of `migrate-store`'s envelope (`ChangeReport`): what the envelope carries
    /// (the command, dry run, snapshot, notes, exit code) is not repeated here.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(strategy, forKey: .strategy)
        try c.encode(mode, forKey: .mode)
        try c.encode(source, forKey: .source)
        try c.encode(destination, forKey: .destination)
        try c.encode(_recipe, forKey: .recipe)
        try c.encode(_recipeSHA256, forKey: .recipeSHA256)
        try c.encode(_plugin, forKey: .plugin)
        try c.encode(steps, forKey: .steps)
        try c.encode(entities, forKey: .entities)
        try c.encode(deduplicated, forKey: .deduplicated)
        try c.encode(matched, forKey: .matched)
        try c.encode(leftOut, forKey: .leftOut)
        try c.encode(identity, forKey: .identity)
        try c.encode(countersRaised, forKey: .countersRaised)
        try c.encode(verification, forKey: .verification)
        try c.encode(durations, forKey: .durations)
    }
}
