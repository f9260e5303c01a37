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
    /// The fewest rows a statement copies when a table is copied in ranges for the progress line
    /// (a table is cut in ranges of at least a fiftieth of all rows).
    static let progressChunk: Int64 = 1_000

    /// What was copied.
    public struct Result: Sendable {
        /// Rows copied per destination entity name.
        public var rows: [String: Int] = [:]
        /// Rows not duplicated because of a uniqueness constraint, per destination entity name.
        public var deduplicated: [String: Int] = [:]
        /// Source objects the destination already held (same identity, `ObjectIdentity`): not
        /// copied, references to them joined to the destination's object, by entity.
        public var matched: [String: Int] = [:]
        /// Join-table rows copied, per destination join table.
        public var joinRows: [String: Int] = [:]
        /// What was left out, and why.
        public var leftOut: [String] = []
        /// Anything else worth saying (one-sided columns, key offsets).
        public var notes: [String] = []
        /// The SQL run, in order (for the report's steps).
        public var sql: [String] = []
        /// System entities whose rows were carried whole (CloudKit mirroring into a new store).
        public var carried: Set<String> = []
    }

    /// The refusal to leave NSPersistentCloudKitContainer's mirroring rows behind without the
    /// user's word: a store with objects and no mirroring state makes CloudKit upload every object
    /// again, duplicating them on every device.
    public static func cloudKitRefusal(_ tables: [(table: String, rows: Int)], why: String) -> USMError {
        let listed = tables.map { "\($0.table) (\($0.rows) rows)" }.joined(separator: ", ")
        return USMError.preconditionFailed(
            "the source holds CloudKit mirroring rows tying its objects to their CloudKit records: \(listed); \(why), and without them CloudKit uploads those objects again as new records (duplicates on every device). --drop-cloudkit leaves them out anyway; the strip-cloudkit recipe empties them on purpose"
        )
    }

    /// CloudKit mirroring tables of the source copy `url` that hold rows, with their counts.
    public static func cloudKitRows(_ url: URL, schema: CoreDataSchema) throws -> [(table: String, rows: Int)] {
        let tables = schema.systemTables.filter { $0.uppercased().hasPrefix("ANSCK") }
        guard !tables.isEmpty else { return [] }
        let queue = try StagedStore.open(url, readonly: true)
        defer { try? queue.close() }
        return try queue.read { db in
            try tables.compactMap { table in
                let rows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.sqlIdentifier)") ?? 0
                return rows > 0 ? (table, rows) : nil
            }
        }
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
        let destinationKeys =
            destination.toOneKeys + (try SchemaFacts.inferredKeys(db, schema: destination, schemaName: "main"))
        for key in inferredSource {
            result.notes.append(
                "\(key.table).\(key.column) taken to point at \(key.destinationTable) (the store's own naming and data agree; its model cache does not say)"
            )
        }

        // 1. Entities by name; every copied source hierarchy lands in one destination table.
        let mapping = try Self.mapping(
            source: source, destination: destination, map: map, path: session.job.destination.path)
        var plans = mapping.plans
        let entMap = mapping.entMap
        result.leftOut += mapping.leftOut
        let tableMap = plans.mapValues(\.table)
        // System tables: persistent history is not copied (Core Data records the app's own
        // changes from here on); CloudKit mirroring rows are carried with the objects they name
        // where keys stay as they are, and otherwise left out only when the user names the loss.
        let keysKept = !session.isMerge && map == .identity
        var carry: [String] = []
        var refused: [(table: String, rows: Int)] = []
        for system in source.systemTables {
            let rows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM src.\(system.sqlIdentifier)") ?? 0
            let counters = session.isMerge ? "as the destination has them" : "the source's Z_MAX"
            guard system.uppercased().hasPrefix("ANSCK") else {
                result.leftOut.append(
                    "\(system) (persistent history, \(rows) rows): not copied; its entities keep \(counters)")
                continue
            }
            if rows == 0 {
                result.leftOut.append(
                    "\(system) (CloudKit mirroring): empty in the source; its entities keep \(counters)")
            } else if keysKept,
                (destination.tables[system] ?? []).map(\.name) == (source.tables[system] ?? []).map(\.name)
            {
                carry.append(system)
            } else if session.job.options.dropCloudKit {
                result.leftOut.append(
                    "\(system) (CloudKit mirroring, \(rows) rows tying objects to their CloudKit records): dropped (--drop-cloudkit); CloudKit exports those objects again as new records"
                )
            } else {
                refused.append((system, rows))
            }
        }
        if !refused.isEmpty {
            throw Self.cloudKitRefusal(
                refused,
                why: session.isMerge
                    ? "in a merge the objects' keys move, so these rows cannot come along"
                    : "the recipe copies only some entities or renames them, so these rows cannot come along")
        }

        // 2. Key offsets per destination table.
        for (key, var plan) in plans {
            let table = plan.table.sqlIdentifier
            let maxPK = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(Z_PK), 0) FROM main.\(table)") ?? 0
            let zmax = destination.entities.filter { $0.table == plan.table }.map(\.max).max() ?? 0
            plan.hadRows = maxPK > 0
            plan.offset = session.isMerge ? max(maxPK, zmax) : (maxPK > 0 ? max(maxPK, zmax) : 0)
            plans[key] = plan
            if plan.offset > 0 {
                result.notes.append("\(plan.sourceTable) keys move up by \(plan.offset) in \(plan.table)")
            }
        }
        let byDestinationTable = Dictionary(plans.values.map { ($0.table, $0) }, uniquingKeysWith: { a, _ in a })

        // 3. Uniqueness conflicts, before anything is written.
        var remap: [String: String] = [:]  // destination table → temp table (src_pk → kept dst_pk)
        var dropped: [String: String] = [:]  // destination table → temp table (dst_pk → new_pk)
        // An incoming object the destination already holds is not copied twice (unless
        // --allow-duplicates): it becomes the destination's object, and references to it follow.
        if session.isMerge, !session.job.options.allowDuplicates, plans.values.contains(where: \.hadRows) {
            let identity = try PhaseTimings.measure("copy: identity of the objects") {
                try ObjectIdentity.classify(
                    db,
                    sides: [
                        .init(
                            database: "main", schema: destination, keys: destinationKeys,
                            indexed: try SchemaFacts.indexedKeyColumns(db, schema: destination, schemaName: "main")),
                        .init(
                            database: "src", schema: source, keys: sourceKeys,
                            indexed: try SchemaFacts.indexedKeyColumns(db, schema: source, schemaName: "src"),
                            entityMap: entMap),
                    ],
                    // The destination model's uniqueness constraints say which objects are the same.
                    keys: try ObjectIdentity.constraintKeys(db, schema: destination, schemaName: "main"))
            }
            result.matched = try identity.matched(db, side: 1)
            for plan in plans.values.sorted(by: { $0.table < $1.table }) where plan.hadRows {
                let temp = "usm_remap_\(remap.count)"
                if try identity.writeMatches(db, table: plan.table, side: 1, into: temp) {
                    remap[plan.table] = temp
                } else {
                    try db.execute(sql: "DROP TABLE IF EXISTS temp.\(temp)")
                }
            }
            try identity.drop(db)
            for (name, n) in result.matched.sorted(by: { $0.key < $1.key }) where n > 0 {
                result.notes.append(
                    "\(name): \(n) incoming objects already in the destination: not copied again, their relationships joined to the existing objects"
                )
            }
        }
        for plan in plans.values.sorted(by: { $0.table < $1.table }) where plan.hadRows {
            let columns = try columnMap(plan, facts: facts, tableMap: tableMap, sourceKeys: sourceKeys)
            for index in (facts.indexes[plan.table] ?? []).filter(\.unique) {
                let pairs = index.columns.compactMap { column in columns.plain[column].map { (column, $0) } }
                guard pairs.count == index.columns.count, !pairs.isEmpty else { continue }
                let match = pairs.map { "d.\($0.0.sqlIdentifier) = s.\($0.1.sqlIdentifier)" }.joined(separator: " AND ")
                let filter = "s.Z_ENT IN (\(plan.entities.keys.sorted().map(String.init).joined(separator: ",")))"
                let notMatched = remap[plan.table].map { " AND s.Z_PK NOT IN (SELECT src_pk FROM temp.\($0))" } ?? ""
                let conflicting =
                    "FROM src.\(plan.sourceTable.sqlIdentifier) s WHERE \(filter)\(notMatched) AND EXISTS (SELECT 1 FROM main.\(plan.table.sqlIdentifier) d WHERE \(match))"
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) \(conflicting)") ?? 0
                guard count > 0 else { continue }
                let names = Set(plan.entities.values.compactMap { destination.entity($0)?.name }).sorted().joined(
                    separator: "/")
                if policy == .refuse {
                    let shown = pairs.map { "quote(s.\($0.1.sqlIdentifier))" }.joined(separator: " || ', ' || ")
                    let sample = try String.fetchAll(
                        db, sql: "SELECT \(shown) \(conflicting) LIMIT \(StoreChecks.sampleSize)")
                    throw USMError.mergeConflict(
                        entity: names, count: count,
                        values: "\(index.columns.joined(separator: ", ")) = " + sample.joined(separator: "; ")
                            + (count > sample.count ? "; ..." : ""))
                }
                let lookup = "(SELECT d.Z_PK FROM main.\(plan.table.sqlIdentifier) d WHERE \(match) LIMIT 1)"
                if policy == .keepDestination {
                    let temp = remap[plan.table] ?? "usm_remap_\(remap.count)"
                    if remap[plan.table] == nil {
                        try exec("CREATE TEMP TABLE \(temp) (src_pk INTEGER PRIMARY KEY, dst_pk INTEGER)", &result)
                        remap[plan.table] = temp
                    }
                    try exec(
                        "INSERT OR IGNORE INTO temp.\(temp) (src_pk, dst_pk) SELECT s.Z_PK, \(lookup) \(conflicting)",
                        &result)
                } else {
                    let temp = dropped[plan.table] ?? "usm_dropped_\(dropped.count)"
                    if dropped[plan.table] == nil {
                        try exec("CREATE TEMP TABLE \(temp) (dst_pk INTEGER PRIMARY KEY, new_pk INTEGER)", &result)
                        dropped[plan.table] = temp
                    }
                    try exec(
                        "INSERT OR IGNORE INTO temp.\(temp) (dst_pk, new_pk) SELECT \(lookup), s.Z_PK + \(plan.offset) \(conflicting)",
                        &result)
                }
            }
        }
        for (table, temp) in dropped {
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT d.Z_ENT AS ent, COUNT(*) AS n FROM temp.\(temp) r JOIN main.\(table.sqlIdentifier) d ON d.Z_PK = r.dst_pk GROUP BY d.Z_ENT"
            ) {
                if let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue),
                    let name = destination.entity(ent)?.name
                {
                    result.deduplicated[name, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
                }
            }
            try exec("DELETE FROM main.\(table.sqlIdentifier) WHERE Z_PK IN (SELECT dst_pk FROM temp.\(temp))", &result)
        }

        /// The expression giving the destination key for a source key `value` pointing into `table`.
        func keyExpression(_ value: String, table: String) -> String {
            guard let plan = byDestinationTable[table] else { return value }
            let moved = plan.offset == 0 ? value : "\(value) + \(plan.offset)"
            guard let temp = remap[table] else { return moved }
            return
                "CASE WHEN \(value) IS NULL THEN NULL ELSE COALESCE((SELECT dst_pk FROM temp.\(temp) WHERE src_pk = \(value)), \(moved)) END"
        }
        func entityExpression(_ value: String) -> String {
            let cases = entMap.sorted { $0.key < $1.key }.filter { $0.key != $0.value }
            guard !cases.isEmpty else { return value }
            return "CASE \(value) " + cases.map { "WHEN \($0.key) THEN \($0.value)" }.joined(separator: " ")
                + " ELSE \(value) END"
        }

        // 4. Secondary indexes of tables that already hold rows are rebuilt after the inserts (faster).
        var rebuild: [SchemaFacts.Index] = []
        var receiving = Set(plans.values.filter(\.hadRows).map(\.table))
        if session.isMerge { receiving.formUnion(destination.joinTables.map(\.name)) }
        for table in receiving.sorted() {
            for index in facts.indexes[table] ?? [] where !index.unique {
                try exec("DROP INDEX main.\(index.name.sqlIdentifier)", &result)
                rebuild.append(index)
            }
        }

        // 5. Entity rows, counted first so that a long copy can say how far it is (rows copied of all).
        var counted: [String: [Row]] = [:]
        for plan in plans.values {
            let entities = plan.entities.keys.sorted().map(String.init).joined(separator: ",")
            counted[plan.sourceTable] = try Row.fetchAll(
                db,
                sql:
                    "SELECT Z_ENT AS ent, COUNT(*) AS n FROM src.\(plan.sourceTable.sqlIdentifier) WHERE Z_ENT IN (\(entities)) GROUP BY Z_ENT"
            )
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
            let allCopied = Set(source.entities.filter { $0.table == plan.sourceTable }.map(\.number)).isSubset(
                of: Set(plan.entities.keys))
            let identical =
                !plan.hadRows && allCopied && plan.entities.allSatisfy { $0.key == $0.value } && plan.offset == 0
                && remap[plan.table] == nil && columns.identical
            let sql: String
            if identical {
                // SQLite's transfer optimisation copies pages of rows and indexes without decoding them.
                sql = "INSERT INTO main.\(plan.table.sqlIdentifier) SELECT * FROM src.\(plan.sourceTable.sqlIdentifier)"
            } else {
                var targets: [String] = []
                var values: [String] = []
                for column in columns.destinationColumns {
                    targets.append(column.sqlIdentifier)
                    if column == "Z_PK" {
                        values.append(plan.offset == 0 ? "s.Z_PK" : "s.Z_PK + \(plan.offset)")
                    } else if column == "Z_ENT" {
                        values.append(entityExpression("s.Z_ENT"))
                    } else if let key = columns.keys[column] {
                        values.append(keyExpression("s.\(key.sourceColumn.sqlIdentifier)", table: key.destinationTable))
                    } else if let entityColumn = columns.entityColumns[column] {
                        values.append(entityExpression("s.\(entityColumn.sqlIdentifier)"))
                    } else if let plain = columns.plain[column] {
                        values.append("s.\(plain.sqlIdentifier)")
                    } else {
                        values.append("NULL")
                    }
                }
                var filter = "s.Z_ENT IN (\(sourceEntities))"
                if let temp = remap[plan.table] { filter += " AND s.Z_PK NOT IN (SELECT src_pk FROM temp.\(temp))" }
                sql =
                    "INSERT INTO main.\(plan.table.sqlIdentifier) (\(targets.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM src.\(plan.sourceTable.sqlIdentifier) s WHERE \(filter)"
            }
            let tableRows = rows(plan.sourceTable)
            let chunk = max(Self.progressChunk, totalRows / 50)
            if identical || tableRows <= chunk {
                try exec(sql, &result)
            } else {
                // In ranges of Z_PK, so that the progress line moves as the rows go in (the same
                // rows, one statement a range, one transaction; a page copy stays one statement).
                let bounds = try Row.fetchOne(
                    db,
                    sql:
                        "SELECT MIN(Z_PK) AS lo, MAX(Z_PK) AS hi FROM src.\(plan.sourceTable.sqlIdentifier) WHERE Z_ENT IN (\(sourceEntities))"
                )
                let low = bounds.flatMap { Int64.fromDatabaseValue($0["lo"] as DatabaseValue) } ?? 0
                let high = bounds.flatMap { Int64.fromDatabaseValue($0["hi"] as DatabaseValue) } ?? 0
                var start = low
                var done: Int64 = 0
                repeat {
                    let (end, overflow) = start.addingReportingOverflow(chunk)
                    let range = overflow ? " AND s.Z_PK >= \(start)" : " AND s.Z_PK >= \(start) AND s.Z_PK < \(end)"
                    try exec(sql + range, &result)
                    done += Int64(db.changesCount)
                    session.job.progress(copiedRows + min(done, tableRows), totalRows)
                    start = end
                    if overflow { break }
                } while start <= high
            }
            copiedRows += tableRows
            session.job.progress(copiedRows, totalRows)
            for note in columns.notes where !result.notes.contains(note) { result.notes.append(note) }
            for row in counted[plan.sourceTable] ?? [] {
                guard let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue), let target = plan.entities[ent],
                    let name = destination.entity(target)?.name
                else { continue }
                result.rows[name, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
            }
        }
        for (table, temp) in remap {
            // Source rows not copied: their count is not in the result.
            let plan = byDestinationTable[table]
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT s.Z_ENT AS ent, COUNT(*) AS n FROM temp.\(temp) r JOIN src.\((plan?.sourceTable ?? table).sqlIdentifier) s ON s.Z_PK = r.src_pk GROUP BY s.Z_ENT"
            ) {
                if let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue), let target = plan?.entities[ent],
                    let name = destination.entity(target)?.name
                {
                    let n = Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
                    result.rows[name, default: 0] -= n
                    let unique = n - (result.matched[name] ?? 0)
                    if unique > 0 { result.deduplicated[name, default: 0] += unique }
                }
            }
        }

        // 5b. Ordered to-many (`Z_FOK_<REL>` beside the key): incoming objects of a parent the
        // destination already held (matched) come after its own objects, in their own order.
        for key in destinationKeys {
            guard let temp = remap[key.destinationTable], let plan = byDestinationTable[key.table] else { continue }
            let order = "Z_FOK_" + key.column.dropFirst()
            guard destination.table(key.table, hasColumn: order) else { continue }
            let t = key.table.sqlIdentifier
            let k = key.column.sqlIdentifier
            let o = order.sqlIdentifier
            let off = plan.offset
            try exec(
                """
                CREATE TEMP TABLE usm_ordered AS
                  SELECT n.Z_PK AS id, (SELECT IFNULL(MAX(c.\(o)), 0) FROM main.\(t) c WHERE c.\(k) = n.\(k) AND c.Z_PK <= \(off))
                    + ROW_NUMBER() OVER (PARTITION BY n.\(k) ORDER BY n.\(o), n.Z_PK) AS pos
                  FROM main.\(t) n WHERE n.Z_PK > \(off) AND n.\(k) IN (SELECT dst_pk FROM temp.\(temp))
                """, &result)
            try exec(
                "UPDATE main.\(t) SET \(o) = (SELECT u.pos FROM temp.usm_ordered u WHERE u.id = main.\(t).Z_PK) WHERE Z_PK IN (SELECT id FROM temp.usm_ordered)",
                &result)
            try exec("DROP TABLE temp.usm_ordered", &result)
        }

        // 6. Many-to-many join rows.
        for join in source.joinTables {
            guard join.columns.allSatisfy({ entMap[$0.entity] != nil }) else {
                result.leftOut.append("\(join.name): joins an entity that is not copied")
                continue
            }
            let translated = join.columns.map {
                (
                    column: Self.renumber($0.column, prefix: "Z_", entMap), entity: entMap[$0.entity] ?? $0.entity,
                    sourceEntity: $0.entity, source: $0.column
                )
            }
            let target = try Self.joinTarget(
                join, destination: destination, entMap: entMap, path: session.job.destination.path)
            var targets: [String] = []
            var values: [String] = []
            var filters: [String] = []
            for column in translated {
                targets.append(column.column.sqlIdentifier)
                let table = destination.entity(column.entity)?.table ?? ""
                values.append(keyExpression("j.\(column.source.sqlIdentifier)", table: table))
                if let sourceTable = source.entity(column.sourceEntity)?.table, let plan = plans[sourceTable],
                    !Set(source.entities.filter { $0.table == sourceTable }.map(\.number)).isSubset(
                        of: Set(plan.entities.keys))
                {
                    filters.append(
                        "j.\(column.source.sqlIdentifier) IN (SELECT Z_PK FROM src.\(sourceTable.sqlIdentifier) WHERE Z_ENT IN (\(plan.entities.keys.sorted().map(String.init).joined(separator: ","))))"
                    )
                }
            }
            for order in join.orderColumns {
                let name = Self.renumber(order, prefix: "Z_FOK_", entMap)
                guard (destination.tables[target.name] ?? []).contains(where: { $0.name == name }) else { continue }
                targets.append(name.sqlIdentifier)
                values.append("j.\(order.sqlIdentifier)")
            }
            let whereClause = filters.isEmpty ? "" : " WHERE " + filters.joined(separator: " AND ")
            let plain =
                !session.isMerge && target.name == join.name
                && targets.count == (destination.tables[target.name] ?? []).count
                && values.allSatisfy { $0.hasPrefix("j.") } && filters.isEmpty
            let sql =
                plain
                ? "INSERT INTO main.\(target.name.sqlIdentifier) SELECT * FROM src.\(join.name.sqlIdentifier)"
                : "INSERT OR IGNORE INTO main.\(target.name.sqlIdentifier) (\(targets.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM src.\(join.name.sqlIdentifier) j\(whereClause)"
            let before = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.\(target.name.sqlIdentifier)") ?? 0
            // An ordered many-to-many (`Z_FOK_<column>` beside the column whose list it orders):
            // the pairs an object the destination already held (matched) receives come after its
            // own pairs, in their own order, instead of at the source's positions among them.
            let orderedLists: [(list: String, order: String, remap: String)] =
                !session.isMerge
                ? []
                : translated.compactMap { column in
                    let order = "Z_FOK_" + column.column.dropFirst(2)
                    guard targets.contains(order.sqlIdentifier),
                        let table = destination.entity(column.entity)?.table, let temp = remap[table]
                    else { return nil }
                    return (column.column, order, temp)
                }
            let hasRowid =
                !orderedLists.isEmpty
                && (try? db.makeStatement(sql: "SELECT rowid FROM main.\(target.name.sqlIdentifier) LIMIT 0")) != nil
            let lastBefore =
                hasRowid
                ? try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(rowid), 0) FROM main.\(target.name.sqlIdentifier)")
                    ?? 0 : 0
            try exec(sql, &result)
            let after = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.\(target.name.sqlIdentifier)") ?? 0
            result.joinRows[target.name, default: 0] += after - before
            for list in orderedLists where hasRowid && after > before {
                let t = target.name.sqlIdentifier
                let p = list.list.sqlIdentifier
                let o = list.order.sqlIdentifier
                // Positions already after the object's own (all of them) stay as they are.
                try exec(
                    """
                    CREATE TEMP TABLE usm_ordered AS
                      SELECT id, base + ROW_NUMBER() OVER (PARTITION BY parent ORDER BY o, id) AS pos,
                        MIN(o) OVER (PARTITION BY parent) AS low, base
                      FROM (SELECT n.rowid AS id, n.\(p) AS parent, n.\(o) AS o,
                              (SELECT IFNULL(MAX(c.\(o)), 0) FROM main.\(t) c WHERE c.\(p) = n.\(p) AND c.rowid <= \(lastBefore)) AS base
                            FROM main.\(t) n WHERE n.rowid > \(lastBefore) AND n.\(p) IN (SELECT dst_pk FROM temp.\(list.remap)))
                    """, &result)
                try exec(
                    "UPDATE main.\(t) SET \(o) = (SELECT u.pos FROM temp.usm_ordered u WHERE u.id = main.\(t).rowid) WHERE rowid IN (SELECT id FROM temp.usm_ordered WHERE low IS NULL OR low <= base)",
                    &result)
                try exec("DROP TABLE temp.usm_ordered", &result)
            }
        }

        // 7. Keep-source: destination references to the removed rows move to the new ones.
        for (table, temp) in dropped {
            let hierarchy = Set(destination.entities.filter { $0.table == table }.map(\.number))
            for key in destinationKeys where key.destinationTable == table {
                let column = key.column.sqlIdentifier
                try exec(
                    "UPDATE main.\(key.table.sqlIdentifier) SET \(column) = (SELECT new_pk FROM temp.\(temp) WHERE dst_pk = \(column)) WHERE \(column) IN (SELECT dst_pk FROM temp.\(temp))",
                    &result)
            }
            for join in destination.joinTables {
                for column in join.columns where hierarchy.contains(column.entity) {
                    let c = column.column.sqlIdentifier
                    try exec(
                        "UPDATE OR IGNORE main.\(join.name.sqlIdentifier) SET \(c) = (SELECT new_pk FROM temp.\(temp) WHERE dst_pk = \(c)) WHERE \(c) IN (SELECT dst_pk FROM temp.\(temp))",
                        &result)
                    try exec(
                        "DELETE FROM main.\(join.name.sqlIdentifier) WHERE \(c) IN (SELECT dst_pk FROM temp.\(temp))",
                        &result)
                }
            }
        }
        // The entity column of a polymorphic to-one whose key was redirected follows its target.
        for table in Set(remap.keys).union(dropped.keys) {
            for key in destinationKeys where key.destinationTable == table {
                guard let entityColumn = SchemaFacts.entityColumn(for: key.column, in: key.table, schema: destination)
                else { continue }
                let c = key.column.sqlIdentifier
                try exec(
                    "UPDATE main.\(key.table.sqlIdentifier) SET \(entityColumn.sqlIdentifier) = (SELECT t.Z_ENT FROM main.\(table.sqlIdentifier) t WHERE t.Z_PK = main.\(key.table.sqlIdentifier).\(c)) WHERE \(c) IS NOT NULL AND \(entityColumn.sqlIdentifier) IS NOT (SELECT t.Z_ENT FROM main.\(table.sqlIdentifier) t WHERE t.Z_PK = main.\(key.table.sqlIdentifier).\(c))",
                    &result)
            }
        }

        // 7b. CloudKit mirroring rows, as they are: every object they name kept its entity number
        // and key (a new store, every entity copied under its own name).
        for system in carry {
            let rows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM src.\(system.sqlIdentifier)") ?? 0
            try exec("INSERT INTO main.\(system.sqlIdentifier) SELECT * FROM src.\(system.sqlIdentifier)", &result)
            for entity in source.entities where entity.table == system {
                result.carried.insert(entity.name)
            }
            result.notes.append(
                "\(system) (CloudKit mirroring, \(rows) rows): carried as it is, with the keys of the objects it names")
        }

        // 8. Indexes back, counters on, temp tables gone.
        for index in rebuild { try exec(index.sql, &result) }
        // A hierarchy's counter lives on its root entity's row (Core Data leaves the sub-entities' at 0).
        for plan in plans.values {
            let members = destination.entities.filter { $0.table == plan.table }
            guard let root = members.first(where: { $0.number == $0.rootNumber }) ?? members.first else { continue }
            try exec(
                "UPDATE main.Z_PRIMARYKEY SET Z_MAX = MAX(IFNULL(Z_MAX, 0), (SELECT IFNULL(MAX(Z_PK), 0) FROM main.\(plan.table.sqlIdentifier))) WHERE Z_ENT = \(root.number)",
                &result)
        }
        for temp in Array(remap.values) + Array(dropped.values) { try db.execute(sql: "DROP TABLE temp.\(temp)") }
        return result
    }

    /// Source hierarchies onto destination tables, entities by name (`map` renames and leaves out).
    /// - Throws: `schemaMismatch` naming `path` when an entity has no table in the destination, or
    ///   hierarchies do not land one table onto one table.
    static func mapping(source: CoreDataSchema, destination: CoreDataSchema, map: CopyMap, path: String) throws -> (
        plans: [String: TablePlan], entMap: [Int: Int], leftOut: [String]
    ) {
        var plans: [String: TablePlan] = [:]
        var entMap: [Int: Int] = [:]
        var leftOut: [String] = []
        for entity in source.userEntities {
            guard map.includes(entity.name) else {
                leftOut.append("\(entity.name): left out by the recipe's only/except")
                continue
            }
            guard let sourceTable = entity.table else { continue }
            let name = map.rename[entity.name] ?? entity.name
            guard let target = destination.userEntities.first(where: { $0.name == name }), let table = target.table
            else {
                throw USMError.schemaMismatch(path: path, detail: "entity \(name) has no table in the destination")
            }
            if let existing = plans[sourceTable], existing.table != table {
                throw USMError.schemaMismatch(
                    path: path,
                    detail:
                        "the source keeps \(entity.name) in \(sourceTable) with entities the destination keeps in \(existing.table)"
                )
            }
            entMap[entity.number] = target.number
            var plan =
                plans[sourceTable]
                ?? TablePlan(sourceTable: sourceTable, table: table, entities: [:], offset: 0, hadRows: false)
            plan.entities[entity.number] = target.number
            plans[sourceTable] = plan
        }
        if Set(plans.values.map(\.table)).count != plans.count {
            throw USMError.schemaMismatch(
                path: path,
                detail:
                    "two source hierarchies map into one destination table (\(plans.values.map(\.table).sorted().joined(separator: ", ")))"
            )
        }
        return (plans, entMap, leftOut)
    }

    /// The destination's many-to-many table taking the source's `join` (columns renumbered).
    static func joinTarget(
        _ join: CoreDataSchema.JoinTable, destination: CoreDataSchema, entMap: [Int: Int], path: String
    )
        throws -> CoreDataSchema.JoinTable
    {
        let wanted = Set(join.columns.map { renumber($0.column, prefix: "Z_", entMap) })
        guard let target = destination.joinTables.first(where: { Set($0.columns.map(\.column)) == wanted }) else {
            throw USMError.schemaMismatch(
                path: path,
                detail:
                    "the many-to-many table \(join.name) has no counterpart with columns \(wanted.sorted().joined(separator: ", "))"
            )
        }
        return target
    }

    /// Whether the rows of `source` can go into `destination` at all, from their schemas alone:
    /// what the copy would refuse half-way (`schemaMismatch`), said before anything is written —
    /// a merge is refused while planning, dry run and run alike, never after a snapshot.
    /// - Throws: `schemaMismatch` naming `path`.
    public static func preflight(
        source: CoreDataSchema, destination: CoreDataSchema, map: CopyMap = .identity, path: String
    ) throws {
        let (plans, entMap, _) = try mapping(source: source, destination: destination, map: map, path: path)
        for join in source.joinTables where join.columns.allSatisfy({ entMap[$0.entity] != nil }) {
            _ = try joinTarget(join, destination: destination, entMap: entMap, path: path)
        }
        for plan in plans.values.sorted(by: { $0.table < $1.table }) {
            let sourceColumns = Dictionary(
                (source.tables[plan.sourceTable] ?? []).map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
            for column in destination.tables[plan.table] ?? [] where column.name != "Z_PK" && column.name != "Z_ENT" {
                guard let type = sourceColumns[column.name], SQLName.affinity(type) != SQLName.affinity(column.type)
                else { continue }
                // A key column is translated, not copied: its declared type does not matter.
                if source.toOneKeys.contains(where: { $0.table == plan.sourceTable && $0.column == column.name })
                    || SchemaFacts.isEntityColumnName(column.name, in: plan.table, schema: destination)
                {
                    continue
                }
                throw USMError.schemaMismatch(
                    path: path,
                    detail:
                        "\(plan.table).\(column.name) is \(column.type) in the destination but \(type) in the source")
            }
        }
    }

    /// `preflight` for two store file sets, read through private copies (the schema and the
    /// bookkeeping tables only: quick to read whatever the stores' size).
    public static func preflight(source: StoreFileSet, destination: StoreFileSet, model: ManagedObjectModel? = nil)
        throws
    {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-preflight")
        defer { scratch.remove() }
        let from = try MigrationEngine.capture(
            source, into: scratch.url.appendingPathComponent("s"), role: "source", model: model, readsRows: false)
        let into = try MigrationEngine.capture(
            destination, into: scratch.url.appendingPathComponent("d"), role: "destination", readsRows: false)
        do {
            try preflight(source: from.schema, destination: into.schema, path: destination.main.path)
        } catch let USMError.schemaMismatch(path, detail) {
            throw USMError.schemaMismatch(
                path: path, detail: "the models of the two stores differ: \(detail); nothing can be merged")
        }
    }

    private func exec(_ sql: String, _ result: inout Result) throws {
        result.sql.append(sql)
        try db.execute(sql: sql)
    }

    /// `Z_<n>REST` → `Z_<map[n]>REST` (join tables and their columns are named after entity numbers).
    static func renumber(_ name: String, prefix: String, _ entMap: [Int: Int]) -> String {
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

    func columnMap(
        _ plan: TablePlan, facts: SchemaFacts, tableMap: [String: String], sourceKeys allKeys: [CoreDataSchema.ToOneKey]
    ) throws -> ColumnMap {
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
                if let sourceEntityColumn = SchemaFacts.entityColumn(
                    for: keyColumn, in: plan.sourceTable, schema: source)
                {
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
                throw USMError.schemaMismatch(
                    path: session.job.destination.path,
                    detail:
                        "\(plan.table).\(column.name) is \(column.type) in the destination but \(match.type) in the source"
                )
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
                throw USMError.schemaMismatch(
                    path: session.job.destination.path,
                    detail:
                        "\(plan.sourceTable).\(column.name) looks like a to-one key (it has Core Data's key index) but the source's model cache does not say where it points, so its values cannot be moved with the keys"
                )
            }
        }
        map.identical =
            sourceColumns.map(\.name) == destinationColumns.map(\.name)
            && zip(sourceColumns, destinationColumns).allSatisfy { $0.type == $1.type }
        return map
    }

    private func isUnresolvedKey(_ column: String, table: String, keys: [CoreDataSchema.ToOneKey]) -> Bool {
        guard column.hasPrefix("Z"), !column.hasPrefix("Z_"),
            !keys.contains(where: { $0.table == table && $0.column == column })
        else { return false }
        let indexName = "\(table)_\(column)_INDEX"
        guard
            ((try? Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM src.sqlite_master WHERE type = 'index' AND name = ?",
                arguments: [indexName])) ?? 0) > 0
        else { return false }
        // A column that holds no value has nothing to move, whatever it is.
        let values =
            (try? Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM src.\(table.sqlIdentifier) WHERE \(column.sqlIdentifier) IS NOT NULL"))
            ?? 1
        return values > 0
    }
}
