import Foundation
import GRDB
import ManualStrategy
import Testing
import TestSupport
@testable import USMRepairCore

/// The shipped recipes, on real corpus stores, and what a broken recipe gets.
@Suite("migration: recipes", .timed)
struct RecipeTests {
    static let folder = CLITests.packageRoot.appendingPathComponent("Recipes")

    static func options(_ recipe: String, _ parameters: [String: String] = [:], keep: Bool = false) -> MigrationOptions
    {
        MigrationOptions(recipe: recipe, parameters: parameters, keepUbiquityMetadata: keep, recipeSearchPath: [folder])
    }

    static func corpus(_ name: String) -> URL? { Corpus.stores().first { $0.lastPathComponent == name } }

    static func count(_ store: URL, _ sql: String) throws -> Int {
        let queue = try DatabaseQueue(
            path: store.path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        return try queue.read { try Int.fetchOne($0, sql: sql) ?? -1 }
    }

    @Test("every shipped recipe decodes, has its .md and a unique id matching its file name")
    func shipped() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter {
            $0.hasSuffix(".json")
        }.sorted()
        #expect(files.count >= 5)
        var ids: Set<String> = []
        for file in files {
            let loaded = try LoadedRecipe.load(Self.folder.appendingPathComponent(file).path, search: [])
            #expect(loaded.recipe.id + ".json" == file)
            #expect(ids.insert(loaded.recipe.id).inserted)
            #expect(
                FileManager.default.fileExists(
                    atPath: Self.folder.appendingPathComponent(loaded.recipe.id + ".md").path))
            #expect(loaded.sha256.count == 64)
        }
    }

    // The whole-copy recipes on every real store: MigrationCorpusTests.strategiesAndRecipes.

    @Test("strip-ubiquity removes the keys even with --keep-ubiquity-metadata")
    func stripUbiquity() throws {
        let tmp = try TempDir()
        var o = FixtureStore.Options()
        o.ubiquityMetadata = true
        try FixtureStore.write(to: tmp.path("S.sqlite"), o)
        _ = try Migrate.run(
            tmp.path("S.sqlite"), tmp.path("K.sqlite"), strategy: "ios",
            options: MigrationOptions(keepUbiquityMetadata: true))
        #expect(
            try Migrate.uuidAndKeys(tmp.path("K.sqlite")).keys.contains("com.apple.coredata.ubiquity.token"),
            "control: kept without the recipe")
        _ = try Migrate.run(
            tmp.path("S.sqlite"), tmp.path("D.sqlite"), strategy: "manual",
            options: Self.options("strip-ubiquity", keep: true))
        #expect(
            !(try Migrate.uuidAndKeys(tmp.path("D.sqlite")).keys.contains {
                $0.hasPrefix("com.apple.coredata.ubiquity")
            }))
    }

    @Test(
        "rename-entity merges a real store into one whose model renamed an entity",
        .enabled(if: corpus("Recipes.sqlite") != nil))
    func renameEntity() throws {
        let store = try #require(Self.corpus("Recipes.sqlite"))
        let tmp = try TempDir()
        let destination = tmp.path("d/Recipes.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("d"), withIntermediateDirectories: true)
        _ = try Migrate.run(store, destination)
        try FixtureStore.mutate(
            destination,
            "ALTER TABLE ZINGREDIENT RENAME TO ZCOMPONENT; UPDATE Z_PRIMARYKEY SET Z_NAME = 'Component' WHERE Z_NAME = 'Ingredient';"
        )
        let before = try Migrate.check(destination).rows
        let componentOffset = try Self.count(
            destination,
            "SELECT MAX((SELECT MAX(Z_PK) FROM ZCOMPONENT), (SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Component'))"
        )
        let recipeOffset = try Self.count(
            destination,
            "SELECT MAX((SELECT MAX(Z_PK) FROM ZRECIPE), (SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Recipe'))")
        // Into a new store there is no Component to copy into.
        #expect(throws: USMError.self) {
            try Migrate.run(
                store, tmp.path("new.sqlite"), strategy: "manual",
                options: Self.options("rename-entity", ["from": "Ingredient", "to": "Component"]))
        }
        var renamed = Self.options("rename-entity", ["from": "Ingredient", "to": "Component"])
        renamed.allowDuplicates = true  // every object is in the destination already: copied twice on purpose
        let report = try Migrate.run(
            store, destination, strategy: "manual", mode: .merge, options: renamed, snapshots: tmp.path("s"))
        #expect(report.recipe == "rename-entity")
        let (rows, errors, _) = try Migrate.check(destination)
        #expect(errors.isEmpty, "\(errors)")
        #expect(rows["Component"] == 2 * (before["Component"] ?? -1))
        #expect(rows["Recipe"] == 2 * (before["Recipe"] ?? -1))
        // Every copied ingredient belongs to the copied recipe of the same name, not the original.
        #expect(
            try Self.count(
                destination,
                """
                SELECT COUNT(*) FROM ZCOMPONENT c JOIN ZRECIPE r ON r.Z_PK = c.ZRECIPE
                WHERE (c.Z_PK > \(componentOffset)) != (r.Z_PK > \(recipeOffset))
                """) == 0)
    }

    @Test(
        "a broken recipe: invalid (exit 2), a failing SQL step (exit 10, rolled back), a missing parameter (exit 64); SQL binds parameters"
    )
    func broken() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("dst"), withIntermediateDirectories: true)
        func recipe(_ name: String, _ steps: String, version: Int = 1, parameters: String = "[]") throws -> String {
            let url = tmp.path("\(name).json")
            try """
            {"format": "usm-repair-recipe", "formatVersion": \(version), "id": "\(name)", "summary": "test", "version": "1",
             "parameters": \(parameters), "steps": \(steps)}
            """.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let cases: [(String, Int32, String)] = [
            (try recipe("garbage", "[{\"why\": \"x\""), 2, "recipe-invalid"),
            (try recipe("future", #"[{"fixCounters": true, "why": "x"}]"#, version: 2), 2, "recipe-invalid"),
            (
                try recipe("two-actions", #"[{"fixCounters": true, "sql": "SELECT 1", "why": "x"}]"#), 2,
                "recipe-invalid"
            ),
            (
                try recipe(
                    "bad-sql",
                    #"[{"copy": "entities", "why": "x"}, {"sql": "UPDATE main.NO_SUCH_TABLE SET a = 1", "why": "x"}]"#),
                10, "recipe-failed"
            ),
            (
                try recipe(
                    "needs-param", #"[{"copy": "entities", "except": ["{{skip}}"], "why": "x"}]"#,
                    parameters: #"[{"name": "skip", "summary": "an entity"}]"#), 64, "usage"
            ),
        ]
        for (path, status, code) in cases {
            let r = USM.run([
                "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--recipe", path,
                "--json",
            ])
            #expect(r.status == status, "\(path): \(r.stderr)")
            #expect((r.json["error"] as? [String: Any])?["code"] as? String == code, "\(path)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: tmp.path("dst").path).isEmpty,
                "\(path): nothing left")
        }
        let bound = try recipe(
            "bound", #"[{"copy": "entities", "why": "x"}, {"sql": "UPDATE main.ZTAG SET ZNAME = :label", "why": "x"}]"#)
        let r = USM.run([
            "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--recipe", bound,
            "--param", "label=renamed", "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.count(tmp.path("dst/D.sqlite"), "SELECT COUNT(*) FROM ZTAG WHERE ZNAME = 'renamed'") == 4)
    }
}
