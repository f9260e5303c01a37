import ArgumentParser
import Foundation
import ManualStrategy
import USMRepairCore

/// `usm-repair strategies`: the migration strategies, the recipes and the external plugins found.
struct StrategiesCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "strategies",
        abstract:
            "List the migration strategies, the recipes found and the external plugins on PATH (runs none of them).",
        discussion: """
            Exit codes: 0 listed; 64 usage.

            Examples:
              usm-repair strategies
              usm-repair strategies --json
            """)

    @OptionGroup(title: "Output") var output: OutputFlags

    /// The strategy a command uses when none is named.
    struct CommandDefault: Encodable {
        /// The command path (`migrate-store`, `migrate cloud-to-local`...).
        let command: String
        /// The strategy id, when it is always the same.
        let strategy: String?
        /// How it is chosen, as its help says it.
        let rule: String
    }

    /// Each command's default, as the commands' help states it (one source: `StrategyChoice.appDefault`).
    static let defaults: [CommandDefault] = [
        CommandDefault(
            command: "migrate-store", strategy: StrategyRegistry.defaultID, rule: StrategyChoice.migrateStoreDefaultRule
        ),
        CommandDefault(command: "migrate cloud-to-local", strategy: nil, rule: StrategyChoice.appDefaultRule),
        CommandDefault(command: "rebuild --from cloud", strategy: nil, rule: StrategyChoice.appDefaultRule),
    ]

    struct Listing: Encodable {
        let schemaVersion = 1
        let command = "strategies"
        let exitCode = 0
        let exitStatus = "ok"
        let defaultStrategy: String
        let defaults: [CommandDefault]
        let strategies: [StrategyDescription]
        let recipes: [RecipeCatalog.Entry]
        let recipeFolders: [String]
        /// Every folder recipes are looked for in, in order, existing or not.
        let recipeSearchPath: [String]
        let plugins: [FoundPlugin]
    }

    func run(_ context: CommandContext) throws {
        try context.perform(
            { _ in
                let environment = context.environment
                let search = context.recipeSearchPath
                return Listing(
                    defaultStrategy: StrategyRegistry.defaultID, defaults: Self.defaults,
                    strategies: context.strategies.descriptions,
                    recipes: RecipeCatalog.list(search: search),
                    recipeFolders: RecipeCatalog.existing(search).map(\.path),
                    recipeSearchPath: search.map(\.path),
                    plugins: ExternalProgram.discover(environment: environment))
            },
            text: { listing, terminal in
                for s in listing.strategies {
                    terminal.out(
                        terminal.paint(s.id, .bold)
                            + (s.id == listing.defaultStrategy ? " (default of migrate-store)" : "") + ": " + s.summary)
                    terminal.out("    keeps: \(s.keeps)")
                    terminal.out("    limits: \(s.limits)")
                    if !s.parameters.isEmpty { terminal.out("    parameters: \(s.parameters.joined(separator: "; "))") }
                }
                terminal.out("defaults (when no --strategy, --recipe or --plugin is given):")
                for d in listing.defaults { terminal.out("    \(d.command): \(d.rule)") }
                terminal.out(
                    "recipes (--strategy manual --recipe NAME):"
                        + (listing.recipes.isEmpty
                            ? " none found (looked in \(listing.recipeSearchPath.isEmpty ? "no folder: set USM_REPAIR_RECIPES" : listing.recipeSearchPath.joined(separator: ", ")))"
                            : ""))
                for r in listing.recipes { terminal.out("    \(r.id) \(r.version): \(r.summary)") }
                terminal.out(
                    "plugins on PATH (--strategy manual --plugin NAME):"
                        + (listing.plugins.isEmpty ? " none found" : ""))
                for p in listing.plugins { terminal.out("    \(p.name): \(p.path)") }
            })
    }
}
