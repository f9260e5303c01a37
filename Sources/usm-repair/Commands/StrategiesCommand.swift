import ArgumentParser
import Foundation
import ManualStrategy
import USMRepairCore

/// `usm-repair strategies`: the migration strategies, the recipes and the external plugins found.
struct StrategiesCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "strategies",
        abstract: "List the migration strategies, the recipes found and the external plugins on PATH (runs none of them).",
        discussion: """
            Exit codes: 0 listed; 64 usage.

            Examples:
              usm-repair strategies
              usm-repair strategies --json
            """)

    @OptionGroup(title: "Output") var output: OutputFlags

    struct Listing: Encodable {
        let schemaVersion = 1
        let command = "strategies"
        let defaultStrategy: String
        let strategies: [StrategyDescription]
        let recipes: [RecipeCatalog.Entry]
        let recipeFolders: [String]
        let plugins: [FoundPlugin]
    }

    func run(_ context: CommandContext) throws {
        try context.perform({ _ in
            let environment = context.environment
            let search = context.recipeSearchPath
            return Listing(
                defaultStrategy: StrategyRegistry.defaultID, strategies: context.strategies.descriptions,
                recipes: RecipeCatalog.list(search: search), recipeFolders: search.map(\.path),
                plugins: ExternalProgram.discover(environment: environment))
        }, text: { listing, terminal in
            for s in listing.strategies {
                terminal.out(terminal.paint(s.id, .bold) + (s.id == listing.defaultStrategy ? " (default)" : "") + ": " + s.summary)
                terminal.out("    keeps: \(s.keeps)")
                terminal.out("    limits: \(s.limits)")
                if !s.parameters.isEmpty { terminal.out("    parameters: \(s.parameters.joined(separator: "; "))") }
            }
            terminal.out("recipes (--strategy manual --recipe NAME):" + (listing.recipes.isEmpty ? " none found" : ""))
            for r in listing.recipes { terminal.out("    \(r.id) \(r.version): \(r.summary)") }
            terminal.out("plugins on PATH (--strategy manual --plugin NAME):" + (listing.plugins.isEmpty ? " none found" : ""))
            for p in listing.plugins { terminal.out("    \(p.name): \(p.path)") }
        })
    }
}
