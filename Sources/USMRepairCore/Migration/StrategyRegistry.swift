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
}
