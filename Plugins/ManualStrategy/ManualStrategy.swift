import Foundation
import USMRepairCore

/// `manual`: the user's own migration, either a recipe (`--recipe NAME|PATH`, a JSON file of
/// ordered steps run in one transaction) or an external program (`--plugin NAME|PATH`, under the
/// contract of Plugins/ManualStrategy/README.md). Its result is verified like any other:
/// integrity and invariants required, rows reported.
public struct ManualStrategy: MigrationStrategy {
    /// The strategy's self-description (`usm-repair strategies`).
    public static let description = StrategyDescription(
        id: "manual", name: "Manual (recipe or external plugin)",
        summary: "Runs a recipe from Recipes/ (or a path) or an external usm-repair-strategy-<name> program.",
        keeps: "what the recipe or program says; the result must pass integrity and every invariant of check",
        limits:
            "rows per entity are reported, not required to match; a plugin sees only a private copy and the staging folder",
        parameters: [
            "--recipe NAME|PATH", "--plugin NAME|PATH", "--param KEY=VALUE (repeatable)", "--plugin-timeout SECONDS",
            "--into",
        ],
        supportsMerge: true, rows: .reported)

    /// Strategies hold no state.
    public init() {}

    /// A recipe or a plugin must be named, and found: checked at planning, before anything is written.
    public static func check(_ options: MigrationOptions) throws {
        if let plugin = options.plugin {
            _ = try ExternalProgram.locate(plugin, environment: options.environment)
        } else if let recipe = options.recipe {
            _ = try LoadedRecipe.load(recipe, search: options.recipeSearchPath)
        } else {
            throw USMError.usage("--strategy manual needs --recipe NAME|PATH or --plugin NAME|PATH")
        }
    }

    /// The steps `--dry-run` prints.
    public func plan(_ job: MigrationJob) throws -> [MigrationStep] {
        if let plugin = job.options.plugin {
            let program = try ExternalProgram.locate(plugin, environment: job.options.environment)
            return [
                MigrationStep(
                    "run \(program.path) migrate",
                    why:
                        "the external plugin fills the staged store from a private read-only copy of the source (timeout \(Int(job.options.pluginTimeout)) s)"
                )
            ]
        }
        let loaded = try recipe(job)
        return try RecipeRunner(loaded: loaded, job: job).plan()
    }

    /// Fills the staged store of `job`.
    public func migrate(_ job: MigrationJob) throws -> MigrationOutcome {
        if job.options.plugin != nil {
            return try ExternalProgram.run(job)
        }
        return try RecipeRunner(loaded: try recipe(job), job: job).run()
    }

    func recipe(_ job: MigrationJob) throws -> LoadedRecipe {
        guard let reference = job.options.recipe else {
            throw USMError.usage("--strategy manual needs --recipe NAME|PATH or --plugin NAME|PATH")
        }
        return try LoadedRecipe.load(reference, search: job.options.recipeSearchPath)
    }
}

/// Runs one recipe: an optional whole-store copy first, then every other step in one transaction.
struct RecipeRunner {
    let loaded: LoadedRecipe
    let job: MigrationJob
    var recipe: Recipe { loaded.recipe }

    /// The parameters with defaults filled in; a missing required one is a usage error.
    func parameters() throws -> [String: String] {
        var values = job.options.parameters
        for parameter in recipe.parameters ?? [] where values[parameter.name] == nil {
            guard let value = parameter.default else {
                throw USMError.usage("recipe \(recipe.id) needs --param \(parameter.name)=VALUE (\(parameter.summary))")
            }
            values[parameter.name] = value
        }
        return values
    }

    /// `{{name}}` replaced by the parameter's value (in entity names and table patterns, never in SQL).
    func substitute(_ text: String, _ values: [String: String]) -> String {
        values.reduce(text) { $0.replacingOccurrences(of: "{{\($1.key)}}", with: $1.value) }
    }

    func map(_ step: Recipe.Step, _ values: [String: String]) throws -> CopyMap {
        let only = step.only.map { Set($0.map { substitute($0, values) }) }
        let except = Set((step.except ?? []).map { substitute($0, values) })
        let rename = Dictionary(
            (step.rename ?? [:]).map { (substitute($0.key, values), substitute($0.value, values)) },
            uniquingKeysWith: { a, _ in a })
        let known = Set(job.sourceSchema.userEntities.map(\.name))
        for name in Array(only ?? []) + Array(except) + Array(rename.keys) where !known.contains(name) {
            throw USMError.recipeInvalid(
                path: loaded.url.path,
                reason: "entity \(name) is not in the source (it has \(known.sorted().joined(separator: ", ")))")
        }
        return CopyMap(only: only, except: except, rename: rename)
    }

    func plan() throws -> [MigrationStep] {
        let values = try parameters()
        var steps = [
            MigrationStep("recipe \(recipe.id) \(recipe.version) (sha256 \(loaded.sha256))", why: recipe.summary)
        ]
        if recipe.steps.first?.copy != "store" && !job.isMerge {
            steps.append(
                MigrationStep(
                    "create the destination with the source's schema and no rows", why: "the recipe's steps fill it"))
        }
        for (i, step) in recipe.steps.enumerated() {
            steps.append(
                MigrationStep("\(i + 1). " + describe(step, values), why: step.why, sql: step.sql.map { [$0] } ?? []))
            if step.copy == "entities" { _ = try map(step, values) }
        }
        return steps
    }

    func describe(_ step: Recipe.Step, _ values: [String: String]) -> String {
        switch step.action {
        case .copy? where step.copy == "store": "copy the whole store"
        case .copy?:
            "copy entities"
                + (step.only.map { " only \($0.map { substitute($0, values) }.joined(separator: ", "))" } ?? "")
                + (step.except.map { " except \($0.map { substitute($0, values) }.joined(separator: ", "))" } ?? "")
                + (step.rename.map {
                    " renaming "
                        + $0.map { "\(substitute($0.key, values)) → \(substitute($0.value, values))" }.sorted().joined(
                            separator: ", ")
                } ?? "")
        case .sql?: "run SQL"
        case .setMetadata?: "set metadata \((step.setMetadata ?? [:]).keys.sorted().joined(separator: ", "))"
        case .removeMetadata?: "remove metadata \((step.removeMetadata ?? []).joined(separator: ", "))"
        case .fixCounters?: "set every Z_MAX to at least the largest key in use"
        case .clearTables?: "empty \((step.clearTables ?? []).map { substitute($0, values) }.joined(separator: ", "))"
        // Loading refuses a step that names no action or several.
        case nil: "?"
        }
    }

    func run() throws -> MigrationOutcome {
        let values = try parameters()
        var outcome = MigrationOutcome(recipeSHA256: loaded.sha256, recipe: recipe.id, steps: try plan())
        var steps = recipe.steps[...]
        if steps.first?.copy == "store" {
            guard !job.isMerge else {
                throw USMError.recipeInvalid(
                    path: loaded.url.path, reason: "its first step copies the whole store, which cannot merge (--into)")
            }
            try StagedStore.copyWhole(from: job.source, to: job.destination)
            steps = steps.dropFirst()
            // A whole copy then changes to it: the same store, repaired (it keeps its identity).
            outcome.keepsSourceIdentity = true
        } else if !job.isMerge {
            try StagedStore.cloneSchema(from: job.source, to: job.destination, keepCounters: true)
        }
        let first = recipe.steps.count - steps.count
        try MigrationSession.run(job) { session in
            for (offset, step) in steps.enumerated() {
                let number = first + offset + 1
                do {
                    switch step.action {
                    case .copy?:
                        let copied = try session.copyEntities(try map(step, values))
                        for (name, n) in copied.rows { outcome.rows[name, default: 0] += n }
                        for (name, n) in copied.deduplicated { outcome.deduplicated[name, default: 0] += n }
                        for (name, n) in copied.matched { outcome.matched[name, default: 0] += n }
                        outcome.leftOut += copied.leftOut
                        outcome.notes += copied.notes
                        outcome.carried.formUnion(copied.carried)
                    case .sql?:
                        try session.execute(step.sql ?? "", arguments: values)
                    case .setMetadata?:
                        for (key, value) in (step.setMetadata ?? [:]).sorted(by: { $0.key < $1.key }) {
                            outcome.metadataEdits.append(.set(key: key, json: try JSONEncoder().encode(value)))
                        }
                    case .removeMetadata?:
                        outcome.metadataEdits += (step.removeMetadata ?? []).map { .remove(pattern: $0) }
                    case .fixCounters?:
                        for (name, value) in try session.fixCounters().sorted(by: { $0.key < $1.key }) {
                            outcome.notes.append("Z_MAX of \(name) raised to \(value)")
                        }
                    case .clearTables?:
                        for (table, rows) in try session.clearTables(
                            matching: (step.clearTables ?? []).map { substitute($0, values) })
                        {
                            outcome.leftOut.append(
                                "\(table): \(rows) rows removed by the recipe (\(step.why)); its entities keep their Z_MAX"
                            )
                        }
                    case nil:
                        // Loading refuses a step that names no action or several.
                        break
                    }
                } catch let error as USMError {
                    switch error {
                    case .schemaMismatch, .mergeConflict, .usage, .recipeInvalid, .outOfSpace, .preconditionFailed:
                        throw error
                    case let .sqlite(_, _, message):
                        throw USMError.recipeFailed(recipe: recipe.id, step: number, message: message)
                    case .writeFailed where step.action == .sql:
                        // A write the step attempted that the file system refused (the source's
                        // private copy is read-only): the recipe's failure, not the destination's.
                        throw USMError.recipeFailed(recipe: recipe.id, step: number, message: error.message)
                    case .writeFailed: throw error
                    default: throw USMError.recipeFailed(recipe: recipe.id, step: number, message: error.message)
                    }
                } catch {
                    let wrapped = StagedStore.wrapWrite(error, path: job.destination)
                    if case .sqlite(_, _, let message) = wrapped {
                        throw USMError.recipeFailed(recipe: recipe.id, step: number, message: message)
                    }
                    throw wrapped
                }
            }
        }
        return outcome
    }
}
