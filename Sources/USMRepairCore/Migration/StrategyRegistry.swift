import Foundation

/// The strategies a run can choose from, built from one list (the executable's
/// `builtInStrategies`; tests add their own). A value passed around, never a singleton.
public struct StrategyRegistry: Sendable {
    /// The registered types, in the order given.
    public let types: [any MigrationStrategy.Type]

    /// The strategy used when none is named.
    public static let defaultID = "copy-entities"

    /// Creates a registry. Two strategies with one id are a programmer error, caught by the
    /// contract test; the first one wins here.
    public init(_ types: [any MigrationStrategy.Type]) {
        var seen: Set<String> = []
        self.types = types.filter { seen.insert($0.description.id).inserted }
    }

    /// Every description, in registration order.
    public var descriptions: [StrategyDescription] { types.map { $0.description } }

    /// The ids, in registration order.
    public var ids: [String] { descriptions.map(\.id) }

    /// The strategy with this id.
    /// - Throws: `USMError.unknownStrategy` listing the known ids.
    public func strategy(_ id: String) throws -> any MigrationStrategy {
        guard let type = types.first(where: { $0.description.id == id }) else {
            throw USMError.unknownStrategy(id, known: ids)
        }
        return type.init()
    }

    /// The description of the strategy with this id.
    public func description(of id: String) throws -> StrategyDescription {
        guard let type = types.first(where: { $0.description.id == id }) else {
            throw USMError.unknownStrategy(id, known: ids)
        }
        return type.description
    }

    /// The choice checked and decided, before anything is planned or written: a recipe or plugin
    /// means `manual` (and only `manual` takes one); the id must be registered; a merge needs a
    /// strategy that merges; the strategy checks its own arguments (a recipe found and valid, a
    /// plugin found). `defaultID` is used when the choice names no strategy.
    /// - Throws: `unknownStrategy`/`usage` (64), `notFound` (66), `recipeInvalid` (2).
    public func resolve(
        _ choice: StrategyChoice, defaultID: String, merge: Bool, recipeSearchPath: [URL],
        environment: [String: String]
    ) throws -> StrategyChoice {
        var resolved = choice
        let namesProgram = choice.recipe != nil || choice.plugin != nil
        if choice.recipe != nil, choice.plugin != nil {
            throw USMError.usage("--recipe and --plugin cannot be used together")
        }
        if let id = choice.id, namesProgram, id != "manual" {
            throw USMError.usage("--recipe and --plugin go with --strategy manual, not \(id)")
        }
        let id = choice.resolvedID(default: defaultID)
        resolved.id = id
        let description = try self.description(of: id)
        if merge, !description.supportsMerge {
            throw USMError.usage(
                "a merge works only with strategies that support it (\(descriptions.filter(\.supportsMerge).map(\.id).joined(separator: ", "))); \(id) does not"
            )
        }
        guard let type = types.first(where: { $0.description.id == id }) else {
            throw USMError.unknownStrategy(id, known: ids)
        }
        try type.check(
            resolved.options(keepUbiquityMetadata: false, recipeSearchPath: recipeSearchPath, environment: environment))
        return resolved
    }
}

/// How planning decides a strategy: the registry, and where recipes and plugins are looked up.
public struct StrategyResolver: Sendable {
    public let registry: StrategyRegistry
    public let recipeSearchPath: [URL]
    public let environment: [String: String]

    public init(registry: StrategyRegistry, recipeSearchPath: [URL], environment: [String: String]) {
        self.registry = registry
        self.recipeSearchPath = recipeSearchPath
        self.environment = environment
    }

    /// `registry.resolve` with these folders and this environment.
    public func resolve(_ choice: StrategyChoice, defaultID: String, merge: Bool) throws -> StrategyChoice {
        try registry.resolve(
            choice, defaultID: defaultID, merge: merge, recipeSearchPath: recipeSearchPath, environment: environment)
    }
}
