import CopyEntitiesStrategy
import Foundation
import IOSStrategy
import ManualStrategy
import NoneStrategy
import USMRepairCore

/// The one list of built-in migration strategies (each a target under Plugins/<Name>Strategy).
let builtInStrategies: [any MigrationStrategy.Type] = [
    IOSStrategy.self, CopyEntitiesStrategy.self, ManualStrategy.self, NoneStrategy.self,
]

enum BuiltInStrategies {
    /// Builds the staged store of a plan's `build` step with the migration engine over `registry`:
    /// a verified store whose rows per entity are returned; the executor installs it.
    /// `progress` receives the rows copied so far and in all (strategies that copy rows say it).
    /// `model` (`--model`) says where the source's relationships point when it has no model cache.
    static func builder(
        registry: StrategyRegistry, environment: [String: String], recipeSearchPath: [URL],
        model: ManagedObjectModel? = nil,
        progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) -> PlanExecutor.Builder {
        { build in
            var options = build.strategy.options(
                keepUbiquityMetadata: build.keepUbiquityMetadata, recipeSearchPath: recipeSearchPath,
                environment: environment,
                operation: build.operation)
            // A store a maintenance operation builds is a new store to the app (a merge keeps its own).
            options.newIdentity = true
            options.model = model
            do {
                if let salvage = build.salvage {
                    // A damaged source (--salvage): read by salvage's own reader, built from that copy.
                    return try SalvageSeed.build(
                        build, salvage: salvage, engine: MigrationEngine(registry: registry), options: options,
                        model: model, progress: progress)
                }
                return try MigrationEngine(registry: registry).build(
                    source: StoreFileSet(main: URL(fileURLWithPath: build.source)),
                    staged: URL(fileURLWithPath: build.staged),
                    strategy: build.strategy.id ?? StrategyRegistry.defaultID, options: options,
                    mergeInto: build.mergeInto.map { StoreFileSet(main: URL(fileURLWithPath: $0)) }, progress: progress)
            } catch USMError.sourceDamaged(let path, let detail) {
                // Planning reads only the header of the store the engine reads; what the engine
                // finds damaged is the operation's precondition failing.
                throw USMError.preconditionFailed("the store to read, \(path), is damaged (\(detail))")
            }
        }
    }
}
