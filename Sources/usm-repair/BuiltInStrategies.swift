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
    /// Builds the staged store of a plan's `build` step with the migration engine: a verified store
    /// whose rows per entity are returned; the executor installs it.
    static let builder: PlanExecutor.Builder = { build in
        let environment = ProcessInfo.processInfo.environment
        let options = MigrationOptions(
            recipe: build.strategy == "manual" ? build.argument : nil, keepUbiquityMetadata: build.keepUbiquityMetadata,
            recipeSearchPath: RecipeCatalog.searchPath(environment: environment, executable: URL(fileURLWithPath: CommandLine.arguments[0])),
            environment: environment)
        let report = try MigrationEngine(registry: StrategyRegistry(builtInStrategies)).build(
            source: StoreFileSet(main: URL(fileURLWithPath: build.source)), staged: URL(fileURLWithPath: build.staged),
            strategy: build.strategy, options: options, mergeInto: build.mergeInto.map { StoreFileSet(main: URL(fileURLWithPath: $0)) })
        return Dictionary(report.entities.map { ($0.name, $0.after ?? 0) }, uniquingKeysWith: +)
    }
}
