import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Every store of ../shared/corpus/real through every built-in strategy, and merged into a copy of itself.
@Suite(
    "migration: real corpus", .timed,
    .enabled(if: Corpus.directory != nil, "../shared/corpus/real is not beside this checkout")
)
struct MigrationCorpusTests {
    /// The result passes check, opens in sqlite3 in WAL mode, has no sidecars and no staging left;
    /// returns the check's rows per entity and its report.
    @discardableResult
    static func expectSound(_ store: URL, _ label: String) throws -> (rows: [String: Int], report: StoreReport) {
        let (rows, errors, report) = try Migrate.check(store)
        #expect(errors.isEmpty, "\(label): \(errors)")
        #expect(Migrate.sidecars(store).isEmpty, "\(label)")
        let sqlite = try Migrate.sqlite3(store)
        #expect(sqlite.journalMode == "wal", "\(label)")
        #expect(sqlite.integrity == "ok", "\(label)")
        #expect(Migrate.sidecars(store).isEmpty, "\(label): sqlite3 left no sidecar (a clean WAL store)")
        #expect(Migrate.staging(in: store.deletingLastPathComponent()).isEmpty, "\(label)")
        return (rows, report)
    }

    /// Every built-in strategy and every whole-copy recipe on one real store, each output made once
    /// and given every check the three former tests made on it (migration: sound result and rows per
    /// strategy; fidelity, issue 19: a new identity for a new store, the source's metadata, counters
    /// that never drop nor lag the keys; recipes: what each recipe removes and keeps), then
    /// `migrate-store --overwrite` and `--into` through the command line (in process; `--into` is
    /// the merge of the copy of itself, see selfMerge).
    @Test(
        "strategies (ios, copy-entities, none), copy-entities into a copy of itself, and recipes (drop-history, fix-counters, strip-cloudkit, strip-ubiquity) on every real store: sound, rows, identity, metadata, counters, conflicts and relationships",
        arguments: Corpus.stores())
    func strategiesAndRecipes(store: URL) throws {
        typealias Store = FidelityStoreTests
        let tmp = try TempDir()
        let folder = store.deletingLastPathComponent()
        let before = try TreeSnapshot(folder)
        let name = store.lastPathComponent
        let (sourceRows, _, sourceReport) = try CorpusFixtures.check(store)
        let system = Set(sourceReport.entities.filter(\.system).map(\.name))
        let pristine = try Corpus.copy(store, into: try Self.folder(tmp, "pristine"))
        let (sourceUUID, sourcePlist) = try Store.metadata(pristine)
        let sourceCounters = try Store.counters(pristine)

        // Strategies, from the corpus store itself (read only: the corpus stays untouched).
        var copyEntities: (rows: [String: Int], report: StoreReport)?
        for strategy in ["ios", "copy-entities", "none"] {
            let destination = try Self.folder(tmp, strategy).appendingPathComponent(name)
            let label = "\(name) \(strategy)"
            let report = try Migrate.run(store, destination, strategy: strategy)
            let (rows, result) = try Self.expectSound(destination, label)
            if strategy == "copy-entities" { copyEntities = (rows, result) }
            for (entity, n) in sourceRows {
                let expected = strategy == "none" || (strategy == "copy-entities" && system.contains(entity)) ? 0 : n
                #expect((rows[entity] ?? 0) == expected, "\(label) \(entity)")
            }
            if strategy == "copy-entities", !system.isEmpty {
                #expect(
                    report.leftOut.contains { $0.contains("not copied; its entities keep the source's Z_MAX") },
                    "\(report.leftOut)")
            }
            let (uuid, plist) = try Store.metadata(destination)
            #expect(uuid != sourceUUID && uuid.flatMap(UUID.init) != nil, "\(label): a new store, a new identity")
            #expect(
                FidelityCorpusTests.comparable(plist) == FidelityCorpusTests.comparable(sourcePlist),
                "\(label): the source's metadata")
            try FidelityCorpusTests.expectCounters(destination, source: sourceCounters, label)
        }
        #expect(try TreeSnapshot(folder) == before, "the corpus is untouched")

        // Copy-entities into a copy of itself, the copy-entities output (checked above) as the base.
        let base = try #require(copyEntities)
        try Self.selfMerge(
            store: store, base: tmp.path("copy-entities/\(name)"), checked: base, sourceCounters: sourceCounters,
            tmp: tmp)
        #expect(try TreeSnapshot(folder) == before, "the corpus is untouched")

        // Recipes, on a copy given what they remove: a counter behind, a CloudKit table, ubiquity keys.
        let source = try Corpus.copy(store, into: try Self.folder(tmp, "source"))
        let user = try #require(sourceReport.entities.first { !$0.system && $0.rows > 0 })
        let behind = sourceReport.entities.filter { $0.table == user.table }.map(\.number)
        try FixtureStore.mutate(
            source,
            """
            UPDATE Z_PRIMARYKEY SET Z_MAX = 0 WHERE Z_ENT IN (\(behind.map(String.init).joined(separator: ",")));
            CREATE TABLE ANSCKRECORDMETADATA ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZENTITYID INTEGER, ZENTITYPK INTEGER );
            INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (16010, 'NSCKRecordMetadata', 0, 2);
            INSERT INTO ANSCKRECORDMETADATA VALUES (1, 16010, 1, 1, 1), (2, 16010, 1, 1, 2);
            """)
        let mutatedCounters = try Store.counters(source)
        for recipe in ["drop-history", "fix-counters", "strip-cloudkit", "strip-ubiquity"] {
            let destination = try Self.folder(tmp, recipe).appendingPathComponent(name)
            let label = "\(name) \(recipe)"
            let report = try Migrate.run(
                source, destination, strategy: "manual",
                options: RecipeTests.options(recipe, keep: recipe == "strip-ubiquity"))
            #expect(Migrate.sidecars(destination).isEmpty, "\(label)")
            #expect(report.recipe == recipe && report.recipeSHA256?.count == 64, "\(label)")
            let (rows, errors, result) = try Migrate.check(destination)
            // Every installed store has its counters at or above its keys (issue 19): the engine
            // raises them whatever the recipe, and says so.
            #expect(errors.isEmpty, "\(label): \(errors)")
            #expect(
                recipe == "fix-counters"
                    || report.notes.contains { $0.contains("Z_MAX of \(user.name)") || $0.contains("raised from 0") },
                "\(label): \(report.notes)")
            #expect(
                result.storeUUID == sourceReport.storeUUID, "\(label): a whole-store repair keeps the store's identity")
            #expect(try Store.metadata(destination).uuid == sourceUUID, "\(label): the same store, repaired")
            for (entity, n) in sourceRows where !(recipe == "drop-history" && system.contains(entity)) {
                #expect(rows[entity] == n, "\(label) \(entity)")
            }
            if recipe == "drop-history" { for entity in system { #expect(rows[entity] == 0, "\(label) \(entity)") } }
            let ck = try RecipeTests.count(destination, "SELECT COUNT(*) FROM ANSCKRECORDMETADATA")
            #expect(ck == (recipe == "strip-cloudkit" ? 0 : 2), "\(label)")
            // Emptied or not, the mirroring entity's counter does not drop.
            #expect(
                try RecipeTests.count(destination, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 16010") == 2,
                "\(label)")
            // Counters never below the source's (those set behind on purpose: at least the keys).
            try FidelityCorpusTests.expectCounters(destination, source: mutatedCounters, label)
            #expect(result.metadata?.ubiquityKeys.isEmpty ?? true, "\(label)")
        }

        // Replacing a store keeps the replaced one's identity (the command line, in process; a merge
        // through it, `--into`, is in selfMerge).
        let replaced = try Self.folder(tmp, "overwrite").appendingPathComponent(name)
        try FileManager.default.copyItem(at: tmp.path("ios/\(name)"), to: replaced)
        let replacedUUID = try Store.metadata(replaced).uuid
        let overwrite = USM.run(["migrate-store", pristine.path, replaced.path, "--overwrite", "--yes"])
        #expect(overwrite.status == 0, "\(name) --overwrite: \(overwrite.stderr)")
        #expect(
            try Store.metadata(replaced).uuid == replacedUUID,
            "\(name): --overwrite keeps the replaced store's identity")
    }

    static func folder(_ tmp: TempDir, _ name: String) throws -> URL {
        let url = tmp.path(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// For each of `keys` (to-one keys), an order-free digest over (source row's attributes,
    /// target row's attributes): moved keys that still point at the right rows give the same digest.
    static func pairDigests(_ url: URL, keys: [CoreDataSchema.ToOneKey]) throws -> [String: Int64] {
        let schema = try CoreDataSchema.load(from: url)
        let queue = try StagedStore.open(url, readonly: true)
        defer { try? queue.close() }
        return try queue.read { db in
            let indexed = try SchemaFacts.indexedKeyColumns(db, schema: schema)
            var result: [String: Int64] = [:]
            for key in keys {
                let own = SchemaFacts.attributeColumns(key.table, schema: schema, indexedKeys: indexed[key.table] ?? [])
                    .sorted().prefix(40).map { "s.\($0.sqlIdentifier)" }
                let target = SchemaFacts.attributeColumns(
                    key.destinationTable, schema: schema, indexedKeys: indexed[key.destinationTable] ?? []
                ).sorted().prefix(40).map { "d.\($0.sqlIdentifier)" }
                let sql =
                    "SELECT usm_digest(\((own + target + ["s.Z_ENT = s.Z_ENT"]).joined(separator: ", "))) FROM \(key.table.sqlIdentifier) s JOIN \(key.destinationTable.sqlIdentifier) d ON d.Z_PK = s.\(key.column.sqlIdentifier)"
                result["\(key.table).\(key.column)"] = try Int64.fetchOne(db, sql: sql) ?? 0
            }
            return result
        }
    }

    /// Copy-entities merges `store` into a copy of `base` (its copy-entities output, made and
    /// checked once by strategiesAndRecipes: `checked`): unconstrained rows doubled, constrained ones
    /// refused, then deduplicated; relationships still right. The merge that succeeds with the
    /// default policy (keep-destination where rows conflict, else refuse) goes through the command
    /// line, `migrate-store --into`, into a destination made a store of an older framework: it keeps
    /// the destination's identity and versioning keys, takes no checksum keys from the source, and
    /// its counters neither drop nor lag the keys.
    static func selfMerge(
        store: URL, base: URL, checked: (rows: [String: Int], report: StoreReport), sourceCounters: [Int: Int64],
        tmp: TempDir
    ) throws {
        typealias Store = FidelityStoreTests
        let (rows, report) = checked
        let constrainedTables: Set<String> = try {
            let queue = try DatabaseQueue(
                path: base.path,
                configuration: {
                    var c = Configuration()
                    c.readonly = true
                    return c
                }())
            defer { try? queue.close() }
            return try queue.read { db in
                Set(
                    try String.fetchAll(
                        db, sql: "SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND sql LIKE 'CREATE UNIQUE%'"
                    ))
            }
        }()
        let constrained = Set(report.entities.filter { $0.table.map(constrainedTables.contains) ?? false }.map(\.name))
        let hasConflicts = report.entities.contains { constrained.contains($0.name) && !$0.system && $0.rows > 0 }
        let schema = try CoreDataSchema.load(from: base)
        // The relationships compared: the model's to-one keys from unconstrained tables.
        let keys = schema.toOneKeys.filter { !constrainedTables.contains($0.table) }
        let pairsBefore = try Self.pairDigests(base, keys: keys)
        for policy in ConflictPolicy.allCases {
            let destination = tmp.path("\(policy.rawValue)/\(store.lastPathComponent)")
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: base, to: destination)
            let label = "\(store.lastPathComponent) \(policy.rawValue)"
            var options = MigrationOptions(onConflict: policy)
            options.allowDuplicates = true  // a store into a copy of itself: every object doubled on purpose
            if policy == .refuse && hasConflicts {
                let before = try TreeSnapshot(destination.deletingLastPathComponent())
                do {
                    _ = try Migrate.run(
                        store, destination, mode: .merge, options: options, snapshots: tmp.path("snapshots"))
                    Issue.record("\(label): a merge with uniqueness conflicts was not refused")
                } catch let error as USMError {
                    #expect(error.code == "merge-conflict", "\(label): \(error.message)")
                }
                #expect(
                    try TreeSnapshot(destination.deletingLastPathComponent()) == before, "\(label): nothing changed")
                continue
            }
            if policy != .refuse && !hasConflicts { continue }
            let deduplicated: [String: Int]
            if policy == (hasConflicts ? .keepDestination : .refuse) {
                // Through the command line, into a store of an older framework.
                let destinationUUID = try Store.metadata(destination).uuid
                try Store.setMetadata(destination) {
                    $0["NSPersistenceFrameworkVersion"] = 1
                    $0.removeValue(forKey: "NSStoreModelVersionChecksumKey")
                    $0.removeValue(forKey: "NSStoreModelVersionHashesDigest")
                }
                let (_, destinationPlist) = try Store.metadata(destination)
                // Counters may not drop below the source's nor the destination's own.
                let floor = try Store.counters(destination).merging(sourceCounters, uniquingKeysWith: max)
                let merge = USM.run([
                    "migrate-store", store.path, destination.path, "--into", "--on-conflict", policy.rawValue,
                    "--allow-duplicates", "--snapshot-dir", tmp.path("snapshots").path, "--json",
                ])
                #expect(merge.status == 0, "\(label) --into: \(merge.stderr)")
                deduplicated = merge.details["deduplicated"] as? [String: Int] ?? [:]
                let (mergedUUID, mergedPlist) = try Store.metadata(destination)
                #expect(mergedUUID == destinationUUID, "\(label): a merge keeps the destination's identity")
                for key in destinationPlist.keys.filter(StoreIdentity.isVersioningKey) {
                    #expect(
                        (mergedPlist[key] as? NSObject)?.isEqual(destinationPlist[key]) == true,
                        "\(label): \(key) is the destination's")
                }
                for key in ["NSStoreModelVersionChecksumKey", "NSStoreModelVersionHashesDigest"] {
                    #expect(mergedPlist[key] == nil, "\(label): \(key) not taken from the source")
                }
                try FidelityCorpusTests.expectCounters(destination, source: floor, "\(label) --into")
            } else {
                deduplicated =
                    try Migrate.run(
                        store, destination, mode: .merge, options: options, snapshots: tmp.path("snapshots")
                    ).deduplicated
            }
            let after = try Self.expectSound(destination, label).rows
            for entity in report.entities where !entity.system {
                let n = rows[entity.name] ?? 0
                if constrained.contains(entity.name) {
                    #expect(
                        (after[entity.name] ?? 0) + (deduplicated[entity.name] ?? 0) == 2 * n,
                        "\(label) \(entity.name)")
                } else {
                    #expect(after[entity.name] == 2 * n, "\(label) \(entity.name): every unconstrained row doubled")
                }
            }
            // Relationships from unconstrained rows: twice the same (row, target) pairs by content.
            let pairs = try Self.pairDigests(destination, keys: keys)
            for key in keys {
                let name = "\(key.table).\(key.column)"
                #expect(pairs[name] == (pairsBefore[name] ?? 0) &* 2, "\(label) \(name)")
            }
        }
    }
}
