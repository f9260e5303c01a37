import Foundation

/// The one way a plan's `build` step becomes a store: `Plan.StoreBuild` → the migration engine
/// (or, for a damaged source, salvage's reader, then the engine). The maintenance operations'
/// builder (the executable's `CommandContext.executor`) and `migrate-store`'s are this type with
/// their own settings. The step's strategy was resolved at planning (`StrategyRegistry.resolve`);
/// `StrategyChoice.resolvedID` decides it the same way for a step that names none.
/// `salvage` and `dedupe` build what they add (salvage's reader, the duplicates' removal) with
/// their own builders, around the same engine.
public struct StoreBuilder: Sendable {
    public let engine: MigrationEngine
    /// Where recipes named without a path are looked for, and the environment strategies run in.
    public var recipeSearchPath: [URL]
    public var environment: [String: String]
    /// `--model`: where the source's relationships point when it has no model cache.
    public var model: ManagedObjectModel?
    /// The result gets a new store UUID (a store a maintenance operation builds is new to the
    /// app; a merge keeps its own).
    public var newIdentity: Bool
    /// The store the result stands in for in its report (`migrate-store`'s DST); nil: the staged one.
    public var shownAs: StoreFileSet?
    /// Create, merge or overwrite (`migrate-store`'s); nil: create, or merge with `mergeInto`.
    public var mode: MigrationRequest.Mode?
    /// A source the engine finds damaged fails the operation's precondition (a maintenance
    /// operation planned from its header only) instead of being reported as damaged.
    public var damagedSourceFailsPrecondition: Bool
    /// Rows copied so far and in all (strategies that copy rows say it).
    public var progress: @Sendable (Int64, Int64) -> Void

    public init(
        engine: MigrationEngine, recipeSearchPath: [URL], environment: [String: String],
        model: ManagedObjectModel? = nil, newIdentity: Bool, shownAs: StoreFileSet? = nil,
        mode: MigrationRequest.Mode? = nil, damagedSourceFailsPrecondition: Bool = false,
        progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) {
        self.engine = engine
        self.recipeSearchPath = recipeSearchPath
        self.environment = environment
        self.model = model
        self.newIdentity = newIdentity
        self.shownAs = shownAs
        self.mode = mode
        self.damagedSourceFailsPrecondition = damagedSourceFailsPrecondition
        self.progress = progress
    }

    /// This builder as the executor takes it.
    public var builder: PlanExecutor.Builder { { try self.build($0) } }

    /// Builds the staged store of `build`: a verified store whose rows per entity are in the
    /// report; the executor installs it.
    public func build(_ build: Plan.StoreBuild) throws -> MigrationReport {
        var options = build.strategy.options(
            keepUbiquityMetadata: build.keepUbiquityMetadata, recipeSearchPath: recipeSearchPath,
            environment: environment, operation: build.operation)
        options.newIdentity = newIdentity
        options.model = model
        do {
            if let salvage = build.salvage {
                // A damaged source (--salvage): read by salvage's own reader, built from that copy.
                return try SalvageSeed.build(
                    build, salvage: salvage, engine: engine, options: options, model: model, progress: progress)
            }
            return try engine.build(
                source: StoreFileSet(main: URL(fileURLWithPath: build.source)),
                staged: URL(fileURLWithPath: build.staged), shownAs: shownAs,
                strategy: build.strategy.resolvedID(), options: options,
                mergeInto: build.mergeInto.map { StoreFileSet(main: URL(fileURLWithPath: $0)) }, mode: mode,
                progress: progress)
        } catch USMError.sourceDamaged(let path, let detail) where damagedSourceFailsPrecondition {
            // Planning reads only the header of the store the engine reads; what the engine
            // finds damaged is the operation's precondition failing.
            throw USMError.preconditionFailed("the store to read, \(path), is damaged (\(detail))")
        }
    }
}
