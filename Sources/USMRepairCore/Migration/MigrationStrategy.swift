import Foundation

/// One way of filling a staged destination store from a private copy of a source store: the
/// contract every strategy target under `Plugins/<Name>Strategy` implements once.
///
/// Safety lives in the engine, never in a strategy: the engine captures the source, stages the
/// destination beside its final place, rewrites its identity, verifies it and installs it. A
/// strategy only writes the staged file named by `MigrationJob.destination`.
public protocol MigrationStrategy: Sendable {
    /// What the strategy is, for `usm-repair strategies` and the README.
    static var description: StrategyDescription { get }
    /// Strategies hold no state: one is made per run.
    init()
    /// Checks what the user chose for this strategy before anything is planned or written (a
    /// recipe that must exist and decode, a plugin that must be found). Default: nothing to check.
    static func check(_ options: MigrationOptions) throws
    /// The steps the strategy would take, for `--dry-run` (nothing is written).
    func plan(_ job: MigrationJob) throws -> [MigrationStep]
    /// Fills (or, for a merge, changes) the staged store at `job.destination`.
    func migrate(_ job: MigrationJob) throws -> MigrationOutcome
}

extension MigrationStrategy {
    /// Nothing to check beyond the registry's own checks.
    public static func check(_ options: MigrationOptions) throws {}
}

/// A strategy's self-description.
public struct StrategyDescription: Sendable, Encodable, Equatable {
    /// Which rows the engine expects in the result, so verification knows what to compare.
    public enum RowPolicy: String, Sendable, Encodable {
        /// Every entity, system ones included, has the source's rows (`ios`).
        case all
        /// Every user entity has the source's rows (plus the destination's in a merge, less the
        /// rows a uniqueness conflict dropped); history and CloudKit entities are not copied.
        case userEntities = "user-entities"
        /// No rows move (`none`).
        case none
        /// The strategy reports what it did; differences are reported, not required (`manual`).
        case reported
    }

    /// The `--strategy` value.
    public let id: String
    /// A short name.
    public let name: String
    /// One sentence.
    public let summary: String
    /// What the result keeps.
    public let keeps: String
    /// What it cannot do.
    public let limits: String
    /// Its parameters (`--into`, `--recipe`, `--param`...), one line each.
    public let parameters: [String]
    /// Whether `--into` (merge into an existing store) is accepted.
    public let supportsMerge: Bool
    /// What verification compares.
    public let rows: RowPolicy

    /// Creates a description.
    public init(
        id: String, name: String, summary: String, keeps: String, limits: String, parameters: [String],
        supportsMerge: Bool, rows: RowPolicy
    ) {
        self.id = id
        self.name = name
        self.summary = summary
        self.keeps = keeps
        self.limits = limits
        self.parameters = parameters
        self.supportsMerge = supportsMerge
        self.rows = rows
    }
}

/// How a merge treats a source row whose uniqueness-constrained values already exist in the destination.
public enum ConflictPolicy: String, Sendable, Codable, CaseIterable {
    /// Refuse the merge, naming the entity and the values; nothing changes (the default).
    case refuse
    /// Keep the destination's row; relationships that pointed at the source row move to it.
    case keepDestination = "keep-destination"
    /// Keep the source's row; the destination's row is removed and relationships move to the new row.
    case keepSource = "keep-source"
}

/// What the user chose beyond the strategy: passed unchanged to the strategy in the job.
public struct MigrationOptions: Sendable {
    /// `--recipe NAME|PATH` (manual).
    public var recipe: String?
    /// `--plugin NAME|PATH` (manual).
    public var plugin: String?
    /// `--param KEY=VALUE`, for recipes and plugins.
    public var parameters: [String: String]
    /// `--on-conflict` for merges.
    public var onConflict: ConflictPolicy
    /// `--keep-ubiquity-metadata`: keep `com.apple.coredata.ubiquity.*` keys in the result.
    public var keepUbiquityMetadata: Bool
    /// `--plugin-timeout`, seconds.
    public var pluginTimeout: Double
    /// Folders searched for recipes named without a path, in order.
    public var recipeSearchPath: [URL]
    /// The environment an external plugin is looked up in (`PATH`) and given (`PATH`, `HOME`, `LANG`).
    public var environment: [String: String]
    /// The command recorded in the result's provenance (`USMRepairProvenance`).
    public var operation: String = "migrate-store"
    /// `--drop-cloudkit`: the user accepts that NSPersistentCloudKitContainer's mirroring rows
    /// (`ANSCK*`) are not carried where their keys cannot be kept (a merge, a partial copy).
    public var dropCloudKit = false
    /// `--allow-duplicates`: a merge copies incoming objects the destination already holds (by
    /// default they are matched to the destination's objects, `ObjectIdentity`).
    public var allowDuplicates = false
    /// `--new-identity`: the result gets a fresh `Z_UUID` even where it would keep the replaced
    /// store's (`--overwrite`) or its source's (a whole-store repair recipe). The maintenance
    /// operations always build a new identity (the app takes a migrated store for a new one).
    public var newIdentity = false
    /// The store whose support folder (`_EXTERNAL_DATA`, `_FBF`) holds the source's files, when not
    /// the source itself (`salvage` builds from a private copy of what it read; the files stay in
    /// the damaged store's folder).
    public var supportFilesOf: StoreFileSet?
    /// A new store keeps the source's `Z_UUID` instead of a fresh one (`salvage`: the result
    /// stands in for the damaged store, and object URIs name its UUID).
    public var keepStoreUUID = false
    /// The app's model (`--model`): where the source's relationships point when it holds no model
    /// cache (a merge moves to-one keys with the rows only when it knows their destination).
    public var model: ManagedObjectModel?

    /// Creates options with the defaults of `migrate-store`.
    public init(
        recipe: String? = nil, plugin: String? = nil, parameters: [String: String] = [:],
        onConflict: ConflictPolicy = .refuse, keepUbiquityMetadata: Bool = false, pluginTimeout: Double = 600,
        recipeSearchPath: [URL] = [], environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.recipe = recipe
        self.plugin = plugin
        self.parameters = parameters
        self.onConflict = onConflict
        self.keepUbiquityMetadata = keepUbiquityMetadata
        self.pluginTimeout = pluginTimeout
        self.recipeSearchPath = recipeSearchPath
        self.environment = environment
    }
}

/// Everything a strategy may use. It holds no user path: the source is a private, consistent,
/// read-only copy (WAL applied) and the destination a path inside the staging folder.
public struct MigrationJob: Sendable {
    /// The private copy of the source's main file (its `-wal`, if any, beside it).
    public let source: URL
    /// The source's Core Data structure.
    public let sourceSchema: CoreDataSchema
    /// The source's external-data folder (read-only; the engine copies referenced files itself).
    public let sourceExternalData: URL
    /// The staged main file to write. For a merge it already holds the destination's rows.
    public let destination: URL
    /// The destination's structure when it already exists (a merge); nil for a new store.
    public let destinationSchema: CoreDataSchema?
    /// A private folder the strategy may use freely; removed after the run.
    public let scratch: URL
    /// The user's options.
    public let options: MigrationOptions
    /// Whether this is a dry run (`plan` only).
    public let dryRun: Bool
    /// Progress (done, total), in strategy-defined units.
    public let progress: @Sendable (Int64, Int64) -> Void

    /// True when the destination already holds a store (a merge).
    public var isMerge: Bool { destinationSchema != nil }

    /// Creates a job (the engine does; tests may).
    public init(
        source: URL, sourceSchema: CoreDataSchema, sourceExternalData: URL, destination: URL,
        destinationSchema: CoreDataSchema?, scratch: URL, options: MigrationOptions, dryRun: Bool = false,
        progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) {
        self.source = source
        self.sourceSchema = sourceSchema
        self.sourceExternalData = sourceExternalData
        self.destination = destination
        self.destinationSchema = destinationSchema
        self.scratch = scratch
        self.options = options
        self.dryRun = dryRun
        self.progress = progress
    }
}

/// One step of a plan, printed by `--dry-run` (and kept in the report).
public struct MigrationStep: Sendable, Encodable, Equatable {
    /// What is done, in a few words.
    public let action: String
    /// Why it is there.
    public let why: String
    /// The SQL it runs, when it runs SQL.
    public let sql: [String]

    /// Creates a step.
    public init(_ action: String, why: String, sql: [String] = []) {
        self.action = action
        self.why = why
        self.sql = sql
    }

    /// `reason` in JSON, as every changing command's `steps[]` (issue 30; `why` until schema 2).
    enum CodingKeys: String, CodingKey {
        case action
        case why = "reason"
        case sql
    }
}

/// A change to the metadata dictionary (`Z_METADATA.Z_PLIST`) a strategy asks for; applied by
/// the engine after the destination's identity, so a recipe has the last word.
public enum MetadataEdit: Sendable, Equatable {
    /// Sets `key` to a value given as JSON (string, number, boolean, array or object).
    case set(key: String, json: Data)
    /// Removes the keys matching `pattern` (a trailing `*` matches any suffix).
    case remove(pattern: String)
}

/// What a strategy did.
public struct MigrationOutcome: Sendable {
    /// Rows per entity the strategy says the result holds (for `reported` strategies).
    public var rows: [String: Int]
    /// Source rows not copied because a destination row with the same constrained values was
    /// kept, or destination rows removed because the source's was kept, by entity.
    public var deduplicated: [String: Int]
    /// Source objects a merge found already in the destination (not copied twice), by entity.
    public var matched: [String: Int] = [:]
    /// Entities whose rows changed on purpose (renamed, rewritten by SQL): their digests are not compared.
    public var altered: Set<String>
    /// What was left out, and why ("ACHANGE (persistent history, 12 rows): not copied; ...").
    public var leftOut: [String]
    /// Anything else worth saying.
    public var notes: [String]
    /// Metadata changes for the engine to apply.
    public var metadataEdits: [MetadataEdit]
    /// The SHA-256 of the recipe run, if any.
    public var recipeSHA256: String?
    /// The recipe's id, if any.
    public var recipe: String?
    /// The external program run, if any.
    public var plugin: String?
    /// The steps taken (for the report).
    public var steps: [MigrationStep]
    /// System entities (CloudKit mirroring) whose rows were carried whole with their keys: the
    /// engine expects the source's rows for them.
    public var carried: Set<String> = []
    /// The result is its source repaired (a recipe whose first step copies the whole store): it
    /// keeps the source's identity unless `--new-identity` or `--overwrite` says otherwise.
    public var keepsSourceIdentity = false

    /// Creates an outcome.
    public init(
        rows: [String: Int] = [:], deduplicated: [String: Int] = [:], altered: Set<String> = [], leftOut: [String] = [],
        notes: [String] = [], metadataEdits: [MetadataEdit] = [], recipeSHA256: String? = nil, recipe: String? = nil,
        plugin: String? = nil, steps: [MigrationStep] = []
    ) {
        self.rows = rows
        self.deduplicated = deduplicated
        self.altered = altered
        self.leftOut = leftOut
        self.notes = notes
        self.metadataEdits = metadataEdits
        self.recipeSHA256 = recipeSHA256
        self.recipe = recipe
        self.plugin = plugin
        self.steps = steps
    }
}
