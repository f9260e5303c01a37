import Foundation
import GRDB

/// Which entities to copy and under which names.
public struct CopyMap: Sendable, Equatable {
    /// Only these source entities (nil: all). Sub-entities are not implied.
    public var only: Set<String>?
    /// Source entities left out.
    public var except: Set<String>
    /// Source entity name → destination entity name.
    public var rename: [String: String]

    /// Creates a map.
    public init(only: Set<String>? = nil, except: Set<String> = [], rename: [String: String] = [:]) {
        self.only = only
        self.except = except
        self.rename = rename
    }

    /// Every entity under its own name.
    public static let identity = CopyMap()

    /// Whether the source entity `name` is copied.
    public func includes(_ name: String) -> Bool { (only?.contains(name) ?? true) && !except.contains(name) }
}

/// The row engine of `copy-entities` and of recipes: every user entity's rows, attributes, to-one
/// keys (with the entity column of a polymorphic to-one), many-to-many join rows and ordered
/// positions, in bulk SQL from the attached source (`src`) into the staged store (`main`).
///
/// Into an empty table the keys are kept; into one that holds rows (a merge) every hierarchy's
/// source keys move above the destination's `Z_MAX`, and every reference moves with them.
/// `Z_ENT` numbers are matched by entity name. Persistent-history and CloudKit tables are not copied.
public struct EntityCopy {
    /// What was copied.
    public struct Result: Sendable {
        /// Rows copied per destination entity name.
        public var rows: [String: Int] = [:]
        /// Rows not duplicated because of a uniqueness constraint, per destination entity name.
        public var deduplicated: [String: Int] = [:]
        /// Join-table rows copied, per destination join table.
        public var joinRows: [String: Int] = [:]
        /// What was left out, and why.
        public var leftOut: [String] = []
        /// Anything else worth saying (one-sided columns, key offsets).
        public var notes: [String] = []
        /// The SQL run, in order (for the report's steps).
        public var sql: [String] = []
    }

    let session: MigrationSession
    let map: CopyMap
    var db: Database { session.db }
    var source: CoreDataSchema { session.job.sourceSchema }
    var destination: CoreDataSchema { session.destinationSchema }

    /// One source hierarchy table going into one destination table.
    struct TablePlan {
        let sourceTable: String
        let table: String
        /// Source Z_ENT → destination Z_ENT, for the entities copied.
        var entities: [Int: Int]
        var offset: Int64
        var hadRows: Bool
    }

    func run() throws -> Result {
        var result = Result()
        let policy = session.job.options.onConflict
        let facts = try SchemaFacts.read(db, schema: destination, schemaName: "main")
        let inferredSource = try SchemaFacts.inferredKeys(db, schema: source, schemaName: "src")
        let sourceKeys = source.toOneKeys + inferredSource
        let destinationKeys = destination.toOneKeys + (try SchemaFacts.inferredKeys(db, schema: destination, schemaName: "main"))
        for key in inferredSource {
            result.notes.append("\(key.table).\(key.column) taken to point at \(key.destinationTable) (the store's own naming and data agree; its model cache does not say)")
        }

        // 1. Entities by name; every copied source hierarchy lands in one destination table.
        var plans: [String: TablePlan] = [:]
        var entMap: [Int: Int] = [:]
        for entity in source.userEntities {
            guard map.includes(entity.name) else {
                result.leftOut.append("\(entity.name): left out by the recipe's only/except")
                continue
            }
            guard let sourceTable = entity.table else { continue }
            let name = map.rename[entity.name] ?? entity.name
            guard let target = destination.userEntities.first(where: { $0.name == name }), let table = target.table else {
                throw USMError.schemaMismatch(path: session.job.destination.path, detail: "entity \(name) has no table in the destination")
            }
            if let existing = plans[sourceTable], existing.table != table {
                throw USMError.schemaMismatch(path: session.job.destination.path,
                    detail: "the source keeps \(entity.name) in \(sourceTable) with entities the destination keeps in \(existing.table)")
            }
            entMap[entity.number] = target.number
            var plan = plans[sourceTable] ?? TablePlan(sourceTable: sourceTable, table: table, entities: [:], offset: 0, hadRows: false)
            plan.entities[entity.number] = target.number
            plans[sourceTable] = plan
        }
        let tableMap = plans.mapValues(\.table)
        if Set(plans.values.map(\.table)).count != plans.count {
            throw USMError.schemaMismatch(path: session.job.destination.path,
                detail: "two source hierarchies map into one destination table (\(plans.values.map(\.table).sorted().joined(separator: ", ")))")
        }
        for system in source.systemTables {
            let rows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM src.\(SQLName.quote(system))") ?? 0
            let kind = system.uppercased().hasPrefix("ANSCK") ? "CloudKit mirroring" : "persistent history"
            result.leftOut.append("\(system) (\(kind), \(rows) rows): holds no objects; not copied, its Z_PRIMARYKEY rows keep Z_MAX \(session.isMerge ? "as the destination has it" : "0")")
        }

        // 2. Key offsets per destination table.
        for (key, var plan) in plans {
            let table = SQLName.quote(plan.table)
            let maxPK = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(Z_PK), 0) FROM main.\(table)") ?? 0
            let zmax = destination.entities.filter { $0.table == plan.table }.map(\.max).max() ?? 0
            plan.hadRows = maxPK > 0
            plan.offset = session.isMerge ? max(maxPK, zmax) : (maxPK > 0 ? max(maxPK, zmax) : 0)
            plans[key] = plan
            if plan.offset > 0 { result.notes.append("\(plan.sourceTable) keys move up by \(plan.offset) in \(plan.table)") }
        }
        let byDestinationTable = Dictionary(plans.values.map { ($0.table, $0) }, uniquingKeysWith: { a, _ in a })

        // 3. Uniqueness conflicts, before anything is written.
        var remap: [String: String] = [:]      // destination table → temp table (src_pk → kept dst_pk)
        var dropped: [String: String] = [:]    // destination table → temp table (dst_pk → new_pk)
        for plan in plans.values.sorted(by: { $0.table < $1.table }) where plan.hadRows {
            let columns = try columnMap(plan, facts: facts, tableMap: tableMap, sourceKeys: sourceKeys)
            for index in (facts.indexes[plan.table] ?? []).filter(\.unique) {
                let pairs = index.columns.compactMap { column in columns.plain[column].map { (column, $0) } }
                guard pairs.count == index.columns.count, !pairs.isEmpty else { continue }
                let match = pairs.map { "d.\(SQLName.quote($0.0)) = s.\(SQLName.quote($0.1))" }.joined(separator: " AND ")
                let filter = "s.Z_ENT IN (\(plan.entities.keys.sorted().map(String.init).joined(separator: ",")))"
                let conflicting = "FROM src.\(SQLName.quote(plan.sourceTable)) s WHERE \(filter) AND EXISTS (SELECT 1 FROM main.\(SQLName.quote(plan.table)) d WHERE \(match))"
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) \(conflicting)") ?? 0
                guard count > 0 else { continue }
                let names = Set(plan.entities.values.compactMap { destination.entity($0)?.name }).sorted().joined(separator: "/")
                if policy == .refuse {
                    let shown = pairs.map { "quote(s.\(SQLName.quote($0.1)))" }.joined(separator: " || ', ' || ")
                    let sample = try String.fetchAll(db, sql: "SELECT \(shown) \(conflicting) LIMIT \(StoreChecks.sampleSize)")
                    throw USMError.mergeConflict(entity: names, count: count,
                        values: "\(index.columns.joined(separator: ", ")) = " + sample.joined(separator: "; ") + (count > sample.count ? "; ..." : ""))
                }
                let lookup = "(SELECT d.Z_PK FROM main.\(SQLName.quote(plan.table)) d WHERE \(match) LIMIT 1)"
                if policy == .keepDestination {
                    let temp = remap[plan.table] ?? "usm_remap_\(remap.count)"
                    if remap[plan.table] == nil {
                        try exec("CREATE TEMP TABLE \(temp) (src_pk INTEGER PRIMARY KEY, dst_pk INTEGER)", &result)
                        remap[plan.table] = temp
                    }
                    try exec("INSERT OR IGNORE INTO temp.\(temp) (src_pk, dst_pk) SELECT s.Z_PK, \(lookup) \(conflicting)", &result)
                } else {
                    let temp = dropped[plan.table] ?? "usm_dropped_\(dropped.count)"
                    if dropped[plan.table] == nil {
                        try exec("CREATE TEMP TABLE \(temp) (dst_pk INTEGER PRIMARY KEY, new_pk INTEGER)", &result)
                        dropped[plan.table] = temp
                    }
                    try exec("INSERT OR IGNORE INTO temp.\(temp) (dst_pk, new_pk) SELECT \(lookup), s.Z_PK + \(plan.offset) \(conflicting)", &result)
                }
            }
        }
        for (table, temp) in dropped {
            for row in try Row.fetchAll(db, sql: "SELECT d.Z_ENT AS ent, COUNT(*) AS n FROM temp.\(temp) r JOIN main.\(SQLName.quote(table)) d ON d.Z_PK = r.dst_pk GROUP BY d.Z_ENT") {
                if let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue), let name = destination.entity(ent)?.name {
                    result.deduplicated[name, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
                }
            }
            try exec("DELETE FROM main.\(SQLName.quote(table)) WHERE Z_PK IN (SELECT dst_pk FROM temp.\(temp))", &result)
        }

        /// The expression giving the destination key for a source key `value` pointing into `table`.
        func keyExpression(_ value: String, table: String) -> String {
            guard let plan = byDestinationTable[table] else { return value }
            let moved = plan.offset == 0 ? value : "\(value) + \(plan.offset)"
            guard let temp = remap[table] else { return moved }
            return "CASE WHEN \(value) IS NULL THEN NULL ELSE COALESCE((SELECT dst_pk FROM temp.\(temp) WHERE src_pk = \(value)), \(moved)) END"
        }
        func entityExpression(_ value: String) -> String {
            let cases = entMap.sorted { $0.key < $1.key }.filter { $0.key != $0.value }
            guard !cases.isEmpty else { return value }
            return "CASE \(value) " + cases.map { "WHEN \($0.key) THEN \($0.value)" }.joined(separator: " ") + " ELSE \(value) END"
        }

        // 4. Secondary indexes of tables that already hold rows are rebuilt after the inserts (faster).
        var rebuild: [SchemaFacts.Index] = []
        var receiving = Set(plans.values.filter(\.hadRows).map(\.table))
        if session.isMerge { receiving.formUnion(destination.joinTables.map(\.name)) }
        for table in receiving.sorted() {
            for index in facts.indexes[table] ?? [] where !index.unique {
                try exec("DROP INDEX main.\(SQLName.quote(index.name))", &result)
                rebuild.append(index)
            }
        }

        // 5. Entity rows, counted first so that a long copy can say how far it is (rows copied of all).
        var counted: [String: [Row]] = [:]
        for plan in plans.values {
            let entities = plan.entities.keys.sorted().map(String.init).joined(separator: ",")
            counted[plan.sourceTable] = try Row.fetchAll(db, sql: "SELECT Z_ENT AS ent, COUNT(*) AS n FROM src.\(SQLName.quote(plan.sourceTable)) WHERE Z_ENT IN (\(entities)) GROUP BY Z_ENT")
        }
        func rows(_ table: String) -> Int64 {
            (counted[table] ?? []).reduce(0) { $0 + (Int64.fromDatabaseValue($1["n"] as DatabaseValue) ?? 0) }
        }
        let totalRows = plans.values.reduce(0) { $0 + rows($1.sourceTable) }
        var copiedRows: Int64 = 0
        session.job.progress(0, totalRows)
        for plan in plans.values.sorted(by: { $0.table < $1.table }) {
            let columns = try columnMap(plan, facts: facts, tableMap: tableMap, sourceKeys: sourceKeys)
            let sourceEntities = plan.entities.keys.sorted().map(String.init).joined(separator: ",")
            let allCopied = Set(source.entities.filter { $0.table == plan.sourceTable }.map(\.number)).isSubset(of: Set(plan.entities.keys))
            let identical = !plan.hadRows && allCopied && plan.entities.allSatisfy { $0.key == $0.value } && plan.offset == 0
                && remap[plan.table] == nil && columns.identical
            let sql: String
            if identical {
                // SQLite's transfer optimisation copies pages of rows and indexes without decoding them.
                sql = "INSERT INTO main.\(SQLName.quote(plan.table)) SELECT * FROM src.\(SQLName.quote(plan.sourceTable))"
            } else {
                var targets: [String] = []
                var values: [String] = []
                for column in columns.destinationColumns {
                    targets.append(SQLName.quote(column))
                    if column == "Z_PK" {
                        values.append(plan.offset == 0 ? "s.Z_PK" : "s.Z_PK + \(plan.offset)")
                    } else if column == "Z_ENT" {
                        values.append(entityExpression("s.Z_ENT"))
                    } else if let key = columns.keys[column] {
                        values.append(keyExpression("s.\(SQLName.quote(key.sourceColumn))", table: key.destinationTable))
                    } else if let entityColumn = columns.entityColumns[column] {
                        values.append(entityExpression("s.\(SQLName.quote(entityColumn))"))
                    } else if let plain = columns.plain[column] {
                        values.append("s.\(SQLName.quote(plain))")
                    } else {
                        values.append("NULL")
                    }
                }
                var filter = "s.Z_ENT IN (\(sourceEntities))"
                if let temp = remap[plan.table] { filter += " AND s.Z_PK NOT IN (SELECT src_pk FROM temp.\(temp))" }
                sql = "INSERT INTO main.\(SQLName.quote(plan.table)) (\(targets.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM src.\(SQLName.quote(plan.sourceTable)) s WHERE \(filter)"
            }
            try exec(sql, &result)
            copiedRows += rows(plan.sourceTable)
            session.job.progress(copiedRows, totalRows)
            for note in columns.notes where !result.notes.contains(note) { result.notes.append(note) }
            for row in counted[plan.sourceTable] ?? [] {
                guard let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue), let target = plan.entities[ent],
                      let name = destination.entity(target)?.name else { continue }
                result.rows[name, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
            }
        }
        for (table, temp) in remap {
            // Source rows not copied: their count is not in the result.
            let plan = byDestinationTable[table]
            for row in try Row.fetchAll(db, sql: "SELECT s.Z_ENT AS ent, COUNT(*) AS n FROM temp.\(temp) r JOIN src.\(SQLName.quote(plan?.sourceTable ?? table)) s ON s.Z_PK = r.src_pk GROUP BY s.Z_ENT") {
                if let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue), let target = plan?.entities[ent], let name = destination.entity(target)?.name {
                    let n = Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
                    result.rows[name, default: 0] -= n
                    result.deduplicated[name, default: 0] += n
                }
            }
        }

        // 6. Many-to-many join rows.
        for join in source.joinTables {
            guard join.columns.allSatisfy({ entMap[$0.entity] != nil }) else {
                result.leftOut.append("\(join.name): joins an entity that is not copied")
                continue
            }
            let translated = join.columns.map { (column: renumber($0.column, prefix: "Z_", entMap), entity: entMap[$0.entity] ?? $0.entity,
                                                 sourceEntity: $0.entity, source: $0.column) }
            let wanted = Set(translated.map(\.column))
            guard let target = destination.joinTables.first(where: { Set($0.columns.map(\.column)) == wanted }) else {
                throw USMError.schemaMismatch(path: session.job.destination.path,
                    detail: "the many-to-many table \(join.name) has no counterpart with columns \(wanted.sorted().joined(separator: ", "))")
            }
            var targets: [String] = []
            var values: [String] = []
            var filters: [String] = []
            for column in translated {
                targets.append(SQLName.quote(column.column))
                let table = destination.entity(column.entity)?.table ?? ""
                values.append(keyExpression("j.\(SQLName.quote(column.source))", table: table))
                if let sourceTable = source.entity(column.sourceEntity)?.table, let plan = plans[sourceTable], !Set(source.entities.filter { $0.table == sourceTable }.map(\.number)).isSubset(of: Set(plan.entities.keys)) {
                    filters.append("j.\(SQLName.quote(column.source)) IN (SELECT Z_PK FROM src.\(SQLName.quote(sourceTable)) WHERE Z_ENT IN (\(plan.entities.keys.sorted().map(String.init).joined(separator: ","))))")
                }
            }
            for order in join.orderColumns {
                let name = renumber(order, prefix: "Z_FOK_", entMap)
                guard (destination.tables[target.name] ?? []).contains(where: { $0.name == name }) else { continue }
                targets.append(SQLName.quote(name))
                values.append("j.\(SQLName.quote(order))")
            }
            let whereClause = filters.isEmpty ? "" : " WHERE " + filters.joined(separator: " AND ")
            let plain = !session.isMerge && target.name == join.name && targets.count == (destination.tables[target.name] ?? []).count
                && values.allSatisfy { $0.hasPrefix("j.") } && filters.isEmpty
            let sql = plain
                ? "INSERT INTO main.\(SQLName.quote(target.name)) SELECT * FROM src.\(SQLName.quote(join.name))"
                : "INSERT OR IGNORE INTO main.\(SQLName.quote(target.name)) (\(targets.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM src.\(SQLName.quote(join.name)) j\(whereClause)"
            let before = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.\(SQLName.quote(target.name))") ?? 0
            try exec(sql, &result)
            let after = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.\(SQLName.quote(target.name))") ?? 0
            result.joinRows[target.name, default: 0] += after - before
        }

        // 7. Keep-source: destination references to the removed rows move to the new ones.
        for (table, temp) in dropped {
            let hierarchy = Set(destination.entities.filter { $0.table == table }.map(\.number))
            for key in destinationKeys where key.destinationTable == table {
                let column = SQLName.quote(key.column)
                try exec("UPDATE main.\(SQLName.quote(key.table)) SET \(column) = (SELECT new_pk FROM temp.\(temp) WHERE dst_pk = \(column)) WHERE \(column) IN (SELECT dst_pk FROM temp.\(temp))", &result)
            }
            for join in destination.joinTables {
                for column in join.columns where hierarchy.contains(column.entity) {
                    let c = SQLName.quote(column.column)
                    try exec("UPDATE OR IGNORE main.\(SQLName.quote(join.name)) SET \(c) = (SELECT new_pk FROM temp.\(temp) WHERE dst_pk = \(c)) WHERE \(c) IN (SELECT dst_pk FROM temp.\(temp))", &result)
                    try exec("DELETE FROM main.\(SQLName.quote(join.name)) WHERE \(c) IN (SELECT dst_pk FROM temp.\(temp))", &result)
                }
            }
        }
        // The entity column of a polymorphic to-one whose key was redirected follows its target.
        for table in Set(remap.keys).union(dropped.keys) {
            for key in destinationKeys where key.destinationTable == table {
                guard let entityColumn = SchemaFacts.entityColumn(for: key.column, in: key.table, schema: destination) else { continue }
                let c = SQLName.quote(key.column)
                try exec("UPDATE main.\(SQLName.quote(key.table)) SET \(SQLName.quote(entityColumn)) = (SELECT t.Z_ENT FROM main.\(SQLName.quote(table)) t WHERE t.Z_PK = main.\(SQLName.quote(key.table)).\(c)) WHERE \(c) IS NOT NULL AND \(SQLName.quote(entityColumn)) IS NOT (SELECT t.Z_ENT FROM main.\(SQLName.quote(table)) t WHERE t.Z_PK = main.\(SQLName.quote(key.table)).\(c))", &result)
            }
        }

        // 8. Indexes back, counters on, temp tables gone.
        for index in rebuild { try exec(index.sql, &result) }
        for plan in plans.values {
            let members = destination.entities.filter { $0.table == plan.table }.map { String($0.number) }.joined(separator: ",")
            try exec("UPDATE main.Z_PRIMARYKEY SET Z_MAX = MAX(IFNULL(Z_MAX, 0), (SELECT IFNULL(MAX(Z_PK), 0) FROM main.\(SQLName.quote(plan.table)))) WHERE Z_ENT IN (\(members))", &result)
        }
        for temp in Array(remap.values) + Array(dropped.values) { try db.execute(sql: "DROP TABLE temp.\(temp)") }
        return result
    }

    private func exec(_ sql: String, _ result: inout Result) throws {
        result.sql.append(sql)
        try db.execute(sql: sql)
    }

    /// `Z_<n>REST` → `Z_<map[n]>REST` (join tables and their columns are named after entity numbers).
    func renumber(_ name: String, prefix: String, _ entMap: [Int: Int]) -> String {
        guard name.hasPrefix(prefix) else { return name }
        let rest = name.dropFirst(prefix.count)
        let digits = rest.prefix { $0.isNumber }
        guard let n = Int(digits), let mapped = entMap[n] else { return name }
        return prefix + String(mapped) + rest.dropFirst(digits.count)
    }

    /// How the columns of one source table fill one destination table.
    struct ColumnMap {
        var destinationColumns: [String] = []
        /// Destination key column → (source column, destination table it points into).
        var keys: [String: (sourceColumn: String, destinationTable: String)] = [:]
        /// Destination polymorphic entity column → source entity column.
        var entityColumns: [String: String] = [:]
        /// Destination column → same-named source column.
        var plain: [String: String] = [:]
        var notes: [String] = []
        /// Same columns in the same order, nothing to translate.
        var identical = false
    }

    func columnMap(_ plan: TablePlan, facts: SchemaFacts, tableMap: [String: String], sourceKeys allKeys: [CoreDataSchema.ToOneKey]) throws -> ColumnMap {
        var map = ColumnMap()
        let sourceColumns = source.tables[plan.sourceTable] ?? []
        let destinationColumns = destination.tables[plan.table] ?? []
        map.destinationColumns = destinationColumns.map(\.name)
        let sourceByName = Dictionary(sourceColumns.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var used: Set<String> = ["Z_PK", "Z_ENT"]
        let sourceKeys = allKeys.filter { $0.table == plan.sourceTable }
        for column in destinationColumns where column.name != "Z_PK" && column.name != "Z_ENT" {
            if let key = sourceKeys.first(where: { $0.column == column.name }) {
                map.keys[column.name] = (key.column, tableMap[key.destinationTable] ?? key.destinationTable)
                used.insert(key.column)
                continue
            }
            if SchemaFacts.isEntityColumnName(column.name, in: plan.table, schema: destination) {
                let keyColumn = "Z" + column.name.drop { $0 != "_" }.dropFirst()
                if let sourceEntityColumn = SchemaFacts.entityColumn(for: keyColumn, in: plan.sourceTable, schema: source) {
                    map.entityColumns[column.name] = sourceEntityColumn
                    used.insert(sourceEntityColumn)
                    continue
                }
            }
            guard let match = sourceByName[column.name] else {
                map.notes.append("\(plan.table).\(column.name) exists only in the destination: copied rows get NULL")
                continue
            }
            if SQLName.affinity(match.type) != SQLName.affinity(column.type) {
                throw USMError.schemaMismatch(path: session.job.destination.path,
                    detail: "\(plan.table).\(column.name) is \(column.type) in the destination but \(match.type) in the source")
            }
            map.plain[column.name] = match.name
            used.insert(match.name)
        }
        for column in sourceColumns where !used.contains(column.name) {
            map.notes.append("\(plan.sourceTable).\(column.name) exists only in the source: its values are not copied")
        }
        // Keys whose destination could not be told would be copied unchanged: refuse in a merge.
        if session.isMerge || plan.offset > 0 {
            for column in sourceColumns where isUnresolvedKey(column.name, table: plan.sourceTable, keys: allKeys) {
                throw USMError.schemaMismatch(path: session.job.destination.path,
                    detail: "\(plan.sourceTable).\(column.name) looks like a to-one key (it has Core Data's key index) but the source's model cache does not say where it points, so its values cannot be moved with the keys")
            }
        }
        map.identical = sourceColumns.map(\.name) == destinationColumns.map(\.name)
            && zip(sourceColumns, destinationColumns).allSatisfy { $0.type == $1.type }
        return map
    }

    private func isUnresolvedKey(_ column: String, table: String, keys: [CoreDataSchema.ToOneKey]) -> Bool {
        guard column.hasPrefix("Z"), !column.hasPrefix("Z_"), !keys.contains(where: { $0.table == table && $0.column == column })
        else { return false }
        let indexName = "\(table)_\(column)_INDEX"
        guard ((try? Int.fetchOne(db, sql: "SELECT COUNT(*) FROM src.sqlite_master WHERE type = 'index' AND name = ?", arguments: [indexName])) ?? 0) > 0
        else { return false }
        // A column that holds no value has nothing to move, whatever it is.
        let values = (try? Int.fetchOne(db, sql: "SELECT COUNT(*) FROM src.\(SQLName.quote(table)) WHERE \(SQLName.quote(column)) IS NOT NULL")) ?? 1
        return values > 0
    }
}
