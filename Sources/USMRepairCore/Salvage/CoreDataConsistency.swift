import Foundation
import GRDB

/// Makes the salvaged rows a store Core Data can open and `check` passes, and counts every change:
/// 1. `Z_METADATA` kept; rebuilt from the sibling (a fresh UUID) when it was lost or unreadable;
///    `Z_MODELCACHE` likewise;
/// 2. `Z_PRIMARYKEY` complete: entities the sibling lists that the damaged store lost are added;
///    an entity table none of whose entities is listed cannot be named and refuses the salvage;
/// 3. rows whose `Z_ENT` their table's hierarchy does not list are left out (counted);
/// 4. `Z_MAX` raised to the largest salvaged key of each hierarchy (never lowered: keys of lost
///    rows are never handed out again);
/// 5. to-one keys pointing at a lost row set to NULL (with their `Z_FOK_` order), join rows
///    pointing at one removed;
/// 6. external-data references whose file is not in the source's `_EXTERNAL_DATA` set to NULL.
/// Order matters: 3 removes rows 5 must then see as lost, and 4 counts the keys 3 left.
struct CoreDataConsistency {
    let sibling: SiblingSchema?
    /// The app's model (`--model`): relationships when the store has no model cache, and entity
    /// numbers for `Z_PRIMARYKEY` rows no sibling gives.
    var model: ManagedObjectModel?
    /// The damaged store (its `_EXTERNAL_DATA` folder holds the files references may name).
    let source: StoreFileSet

    /// Runs every step on the store at `url`, recording what changed in `report`.
    /// - Throws: `sourceDamaged` when an entity table cannot be named; SQLite errors.
    func run(_ url: URL, report: inout SalvageReport) throws {
        let queue = try StagedStore.open(url)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            try db.inTransaction {
                // Core Data's triggers call functions only Core Data defines: out for the duration.
                let triggers = try StoreRewrite.dropTriggers(db, path: report.source.path)
                try metadata(db, report: &report)
                try entities(db, report: &report)
                let schema = try CoreDataSchema.read(db, model: model)
                report.relationships = schema.relationshipSource
                if schema.relationshipSource == "none", !schema.entityTables.isEmpty {
                    report.notes.append(
                        "the store holds no readable model cache and its indexes name no relationship: to-one keys pointing at lost rows could not be found (give --model)"
                    )
                }
                try strayRows(db, schema: schema, report: &report)
                try counters(db, schema: schema, report: &report)
                try references(db, schema: schema, report: &report)
                try external(db, schema: schema, report: &report)
                report.entities = try rows(db, schema: schema)
                try StoreRewrite.restoreTriggers(db, triggers, path: report.source.path)
                return .commit
            }
        }
    }

    /// Step 1.
    private func metadata(_ db: Database, report: inout SalvageReport) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT Z_VERSION, Z_UUID, Z_PLIST FROM Z_METADATA")
        let plist = rows.first.flatMap { Data.fromDatabaseValue($0[2] as DatabaseValue) }
        // A NULL plist is the store's own state (a warning of check's), kept as it is.
        let readable =
            plist.map {
                (try? PropertyListSerialization.propertyList(from: $0, options: [], format: nil)) is [String: Any]
            } ?? true
        let uuid = rows.first.flatMap { String.fromDatabaseValue($0[1] as DatabaseValue) } ?? ""
        if rows.count == 1, readable {
            if uuid.isEmpty {
                try db.execute(sql: "UPDATE Z_METADATA SET Z_UUID = ?", arguments: [UUID().uuidString])
                report.notes.append("Z_METADATA.Z_UUID was empty: a fresh store UUID was given")
            }
            report.metadata = "kept"
        } else {
            let replacement: Data
            if let siblingPlist = sibling?.plist {
                replacement = siblingPlist
                report.metadata = "rebuilt-from-sibling"
            } else {
                replacement = try PropertyListSerialization.data(
                    fromPropertyList: ["NSStoreType": "SQLite"], format: .binary, options: 0)
                report.metadata = "rebuilt"
                report.notes.append(
                    "Z_METADATA was lost and no --schema-from store was given: the result's metadata holds only NSStoreType, without the model's version hashes, so Core Data will not open it as its model's store; migrate-store --into a store of that model takes its rows"
                )
            }
            let keep = rows.count == 1 && !uuid.isEmpty ? uuid : UUID().uuidString
            try db.execute(sql: "DELETE FROM Z_METADATA")
            try db.execute(
                sql: "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                arguments: [keep, replacement])
            report.unreadable.append(
                "Z_METADATA: \(rows.isEmpty ? "its row was lost" : rows.count > 1 ? "\(rows.count) rows" : "its plist does not decode"); \(report.metadata)"
            )
        }
        if let cache = sibling?.modelCache, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Z_MODELCACHE") == 0 {
            try db.execute(sql: "INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", arguments: [cache])
            report.notes.append("Z_MODELCACHE was lost: taken from \(sibling?.path ?? "the sibling")")
        }
    }

    /// Step 2.
    private func entities(_ db: Database, report: inout SalvageReport) throws {
        let listed = Set(try Int.fetchAll(db, sql: "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE typeof(Z_ENT) = 'integer'"))
        let tables = Set(try String.fetchAll(db, sql: "SELECT upper(name) FROM sqlite_master WHERE type = 'table'"))
        var byNumber: [Int: SiblingSchema.Entity] = [:]
        for entity in sibling?.entities ?? [] { byNumber[entity.number] = entity }
        for entity in (sibling?.entities ?? []).sorted(by: { $0.number < $1.number })
        where !listed.contains(entity.number) {
            var root = entity
            var steps = 0
            while root.superNumber != 0, let parent = byNumber[root.superNumber], steps < byNumber.count {
                root = parent
                steps += 1
            }
            guard tables.contains((root.number >= 16000 ? "A" : "Z") + root.name.uppercased()) else { continue }
            try db.execute(
                sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                arguments: [entity.number, entity.name, entity.superNumber])
            report.entitiesRestored.append(entity.name)
        }
        var schema = try CoreDataSchema.read(db, model: model)
        if try restoreSystem(db, schema: schema, report: &report) { schema = try CoreDataSchema.read(db, model: model) }
        if try restoreFromModel(db, schema: schema, report: &report) {
            schema = try CoreDataSchema.read(db, model: model)
        }
        let listedTables = Set(schema.entityTables)
        for (table, columns) in schema.tables.sorted(by: { $0.key < $1.key }) where !listedTables.contains(table) {
            guard let first = table.uppercased().first, first == "Z" || first == "A",
                !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(table.uppercased()),
                Set(columns.map(\.name)).isSuperset(of: ["Z_PK", "Z_ENT", "Z_OPT"])
            else { continue }
            throw USMError.sourceDamaged(
                path: report.source.path,
                detail:
                    "Z_PRIMARYKEY lost the entities of \(table), so its rows cannot be named; give --schema-from a healthy store of the same model, or --model"
            )
        }
    }

    /// Core Data's persistent-history entities, whose numbers are fixed (16001 `CHANGE`, 16002
    /// `TRANSACTION`, 16003 `TRANSACTIONSTRING`), for their tables when the rows carry that number.
    private func restoreSystem(_ db: Database, schema: CoreDataSchema, report: inout SalvageReport) throws -> Bool {
        let listed = Set(schema.entityTables.map { $0.uppercased() })
        var added = false
        for (number, name) in [(16001, "CHANGE"), (16002, "TRANSACTION"), (16003, "TRANSACTIONSTRING")] {
            guard let table = schema.tables.keys.first(where: { $0.uppercased() == "A" + name }),
                !listed.contains("A" + name),
                schema.entity(number) == nil, schema.table(table, hasColumn: "Z_ENT")
            else { continue }
            let found = Set(try Int.fetchAll(db, sql: "SELECT DISTINCT Z_ENT FROM \(table.sqlIdentifier)"))
            guard found.isSubset(of: [number]) else { continue }
            try db.execute(
                sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, 0, 0)",
                arguments: [number, name])
            report.entitiesRestored.append(name)
            added = true
        }
        return added
    }

    /// Entities of tables `Z_PRIMARYKEY` does not account for, numbered as Core Data numbers the
    /// model (the store's own cache, else `--model`), inserted only when the numbers agree with
    /// every entity still listed and with the `Z_ENT` values the table's rows carry. Returns true
    /// when rows were added.
    private func restoreFromModel(_ db: Database, schema: CoreDataSchema, report: inout SalvageReport) throws -> Bool {
        guard let model = schema.model else { return false }
        let numbers = model.entityNumbers()
        for entity in schema.entities where !entity.isSystem {
            guard let expected = numbers[entity.name], expected.number == entity.number else { return false }
        }
        let listed = Set(schema.entityTables)
        var added = false
        for (table, columns) in schema.tables.sorted(by: { $0.key < $1.key }) where !listed.contains(table) {
            guard table.uppercased().hasPrefix("Z"),
                !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(table.uppercased()),
                Set(columns.map(\.name)).isSuperset(of: ["Z_PK", "Z_ENT", "Z_OPT"])
            else { continue }
            // The hierarchy whose root's table this is.
            let members = model.entities.filter { entity in
                var root = entity
                var steps = 0
                while let parent = root.parent, let next = model.entity(named: parent), steps < model.entities.count {
                    root = next
                    steps += 1
                }
                return "Z" + root.name.uppercased() == table.uppercased()
            }
            let found = Set(
                try Int.fetchAll(
                    db, sql: "SELECT DISTINCT Z_ENT FROM \(table.sqlIdentifier) WHERE typeof(Z_ENT) = 'integer'"))
            let memberNumbers = Set(members.compactMap { numbers[$0.name]?.number })
            guard !members.isEmpty, found.isSubset(of: memberNumbers) else { continue }
            for entity in members.sorted(by: { (numbers[$0.name]?.number ?? 0) < (numbers[$1.name]?.number ?? 0) }) {
                guard let n = numbers[entity.name], schema.entity(n.number) == nil else { continue }
                try db.execute(
                    sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                    arguments: [n.number, entity.name, n.superNumber])
                report.entitiesRestored.append(entity.name)
                added = true
            }
        }
        if added {
            report.notes.append(
                "Z_PRIMARYKEY rows were restored from the model, numbered as Core Data numbers it (the numbers agree with every row found)"
            )
        }
        return added
    }

    /// Step 3.
    private func strayRows(_ db: Database, schema: CoreDataSchema, report: inout SalvageReport) throws {
        for table in schema.entityTables where StoreChecks.isWellShaped(table, schema) {
            let members = schema.entityNumbers(inTable: table).map(String.init).joined(separator: ",")
            try db.execute(
                sql: """
                    DELETE FROM \(table.sqlIdentifier)
                    WHERE Z_ENT IS NULL OR typeof(Z_ENT) != 'integer' OR Z_ENT NOT IN (\(members.isEmpty ? "NULL" : members))
                    """)
            let count = db.changesCount
            if count > 0, let i = report.tables.firstIndex(where: { $0.name == table }) {
                report.tables[i].dropped["a Z_ENT this table's hierarchy does not list in Z_PRIMARYKEY", default: 0] +=
                    count
            }
        }
    }

    /// Step 4. Core Data keeps a hierarchy's counter on its root entity (sub-entities read 0):
    /// the root's is raised when no member's reaches the largest key.
    private func counters(_ db: Database, schema: CoreDataSchema, report: inout SalvageReport) throws {
        for table in schema.entityTables where schema.table(table, hasColumn: "Z_PK") {
            let largest = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(Z_PK), 0) FROM \(table.sqlIdentifier)") ?? 0
            let members = schema.entityNumbers(inTable: table).compactMap(schema.entity)
            let unknown = members.contains { schema.unreadableMax.contains($0.number) }
            guard unknown || (members.map(\.max).max() ?? 0) < largest,
                let root = members.first(where: { $0.number == $0.rootNumber }) ?? members.first
            else { continue }
            try db.execute(
                sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?",
                arguments: [max(largest, root.max), root.number])
            report.countersRaised[root.name] = max(largest, root.max)
        }
    }

    /// Step 5.
    private func references(_ db: Database, schema: CoreDataSchema, report: inout SalvageReport) throws {
        for key in schema.toOneKeys
        where StoreChecks.isWellShaped(key.table, schema) && StoreChecks.isWellShaped(key.destinationTable, schema) {
            let column = key.column.sqlIdentifier
            let order = "Z_FOK_" + key.column.dropFirst()
            let orderSet = schema.table(key.table, hasColumn: order) ? ", \(order.sqlIdentifier) = NULL" : ""
            try db.execute(
                sql: """
                    UPDATE \(key.table.sqlIdentifier) SET \(column) = NULL\(orderSet)
                    WHERE \(column) IS NOT NULL AND NOT EXISTS (
                      SELECT 1 FROM \(key.destinationTable.sqlIdentifier) d
                      WHERE d.Z_PK = \(key.table.sqlIdentifier).\(column) AND d.Z_ENT IN (\(key.destinationEntities.map(String.init).joined(separator: ","))))
                    """)
            let count = db.changesCount
            if count > 0 {
                report.referencesCut.append(.init(kind: "to-one", table: key.table, column: key.column, rows: count))
            }
        }
        for join in schema.joinTables {
            for (column, number) in join.columns {
                guard let entity = schema.entity(number), let table = entity.table,
                    StoreChecks.isWellShaped(table, schema)
                else { continue }
                let quoted = column.sqlIdentifier
                try db.execute(
                    sql: """
                        DELETE FROM \(join.name.sqlIdentifier)
                        WHERE \(quoted) IS NULL OR NOT EXISTS (
                          SELECT 1 FROM \(table.sqlIdentifier) d
                          WHERE d.Z_PK = \(join.name.sqlIdentifier).\(quoted) AND d.Z_ENT IN (\(schema.subtree(of: number).map(String.init).joined(separator: ","))))
                        """)
                let count = db.changesCount
                if count > 0 {
                    report.referencesCut.append(.init(kind: "join-row", table: join.name, column: column, rows: count))
                }
            }
        }
    }

    /// Step 6.
    private func external(_ db: Database, schema: CoreDataSchema, report: inout SalvageReport) throws {
        let present = try ExternalData(files: source).fileNames()
        for table in schema.entityTables where schema.table(table, hasColumn: "Z_PK") {
            for column in schema.tables[table] ?? [] where column.type.uppercased().contains("BLOB") {
                let c = column.name.sqlIdentifier
                let cursor = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT Z_PK, \(c) FROM \(table.sqlIdentifier)
                        WHERE typeof(\(c)) = 'blob' AND length(\(c)) BETWEEN 37 AND 40 AND substr(\(c), 1, 1) = x'02'
                        """)
                var missing: [Int64] = []
                while let row = try cursor.next() {
                    guard let blob = Data.fromDatabaseValue(row[1] as DatabaseValue),
                        let name = ExternalData.referencedName(blob),
                        !present.contains(name), let key = Int64.fromDatabaseValue(row[0] as DatabaseValue)
                    else { continue }
                    missing.append(key)
                }
                for key in missing {
                    try db.execute(
                        sql: "UPDATE \(table.sqlIdentifier) SET \(c) = NULL WHERE Z_PK = ?", arguments: [key])
                }
                if !missing.isEmpty {
                    report.referencesCut.append(
                        .init(kind: "external-data", table: table, column: column.name, rows: missing.count))
                }
            }
        }
    }

    /// Rows per entity of the result.
    private func rows(_ db: Database, schema: CoreDataSchema) throws -> [SalvageReport.EntityRows] {
        var counts: [Int: Int] = [:]
        for table in schema.entityTables where StoreChecks.isWellShaped(table, schema) {
            for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, COUNT(*) FROM \(table.sqlIdentifier) GROUP BY Z_ENT") {
                if let ent = Int.fromDatabaseValue(row[0] as DatabaseValue) {
                    counts[ent] = Int.fromDatabaseValue(row[1] as DatabaseValue) ?? 0
                }
            }
        }
        return schema.entities.compactMap { entity in
            guard let table = entity.table else { return nil }
            return .init(name: entity.name, table: table, rows: counts[entity.number] ?? 0)
        }
    }
}
