import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Every store of ../shared/corpus/real through every built-in strategy, and merged into a copy of itself.
@Suite(
    "migration: real corpus", .enabled(if: Corpus.directory != nil, "../shared/corpus/real is not beside this checkout")
)
struct MigrationCorpusTests {
    /// The result passes check, opens in sqlite3 in WAL mode, has no sidecars and no staging left.
    static func expectSound(_ store: URL, _ label: String) throws -> [String: Int] {
        let (rows, errors, _) = try Migrate.check(store)
        #expect(errors.isEmpty, "\(label): \(errors)")
        #expect(Migrate.sidecars(store).isEmpty, "\(label)")
        let sqlite = try Migrate.sqlite3(store)
        #expect(sqlite.journalMode == "wal", "\(label)")
        #expect(sqlite.integrity == "ok", "\(label)")
        #expect(Migrate.sidecars(store).isEmpty, "\(label): sqlite3 left no sidecar (a clean WAL store)")
        #expect(Migrate.staging(in: store.deletingLastPathComponent()).isEmpty, "\(label)")
        return rows
    }

    @Test("ios, copy-entities into an empty store, and none", arguments: Corpus.stores())
    func strategies(store: URL) throws {
        let tmp = try TempDir()
        let folder = store.deletingLastPathComponent()
        let before = try TreeSnapshot(folder)
        let (sourceRows, _, sourceReport) = try Migrate.check(store)
        let system = Set(sourceReport.entities.filter(\.system).map(\.name))
        for strategy in ["ios", "copy-entities", "none"] {
            let destination = tmp.path("\(strategy)/\(store.lastPathComponent)")
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            let report = try Migrate.run(store, destination, strategy: strategy)
            let rows = try Self.expectSound(destination, "\(store.lastPathComponent) \(strategy)")
            for (name, n) in sourceRows {
                let expected = strategy == "none" || (strategy == "copy-entities" && system.contains(name)) ? 0 : n
                #expect((rows[name] ?? 0) == expected, "\(store.lastPathComponent) \(strategy) \(name)")
            }
            if strategy == "copy-entities", !system.isEmpty {
                #expect(
                    report.leftOut.contains { $0.contains("not copied; its entities keep the source's Z_MAX") },
                    "\(report.leftOut)")
            }
        }
        #expect(try TreeSnapshot(folder) == before, "the corpus is untouched")
    }

    /// For every to-one key, an order-free digest over (source row's attributes, target row's
    /// attributes): moved keys that still point at the right rows give the same digest.
    static func pairDigests(_ url: URL) throws -> [String: Int64] {
        let schema = try CoreDataSchema.load(from: url)
        let queue = try StagedStore.open(url, readonly: true)
        defer { try? queue.close() }
        return try queue.read { db in
            let keys = schema.toOneKeys + (try SchemaFacts.inferredKeys(db, schema: schema))
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

    @Test(
        "copy-entities into a copy of itself: unconstrained rows doubled, constrained ones refused, then deduplicated; relationships still right",
        arguments: Corpus.stores())
    func selfMerge(store: URL) throws {
        let tmp = try TempDir()
        let base = tmp.path("base/\(store.lastPathComponent)")
        try FileManager.default.createDirectory(at: base.deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = try Migrate.run(store, base)
        let (rows, _, report) = try Migrate.check(base)
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
        let pairsBefore = try Self.pairDigests(base)
        let schema = try CoreDataSchema.load(from: base)
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
            let merged = try Migrate.run(
                store, destination, mode: .merge, options: options, snapshots: tmp.path("snapshots"))
            let after = try Self.expectSound(destination, label)
            for entity in report.entities where !entity.system {
                let n = rows[entity.name] ?? 0
                if constrained.contains(entity.name) {
                    #expect(
                        (after[entity.name] ?? 0) + (merged.deduplicated[entity.name] ?? 0) == 2 * n,
                        "\(label) \(entity.name)")
                } else {
                    #expect(after[entity.name] == 2 * n, "\(label) \(entity.name): every unconstrained row doubled")
                }
            }
            // Relationships from unconstrained rows: twice the same (row, target) pairs by content.
            let pairs = try Self.pairDigests(destination)
            for key in schema.toOneKeys where !constrainedTables.contains(key.table) {
                let name = "\(key.table).\(key.column)"
                #expect(pairs[name] == (pairsBefore[name] ?? 0) &* 2, "\(label) \(name)")
            }
        }
    }
}
