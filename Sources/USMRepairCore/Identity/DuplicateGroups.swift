import Foundation
import GRDB

/// The groups of duplicates one store holds, by `ObjectIdentity`'s sameness (same entity, equal
/// attributes, to-one targets the same, refined until stable), found without ranking every object:
/// only objects that have a copy are kept, in `temp.usm_dup_<n>(pk, rep, ent)` per table (`rep`:
/// the lowest key of the group). An object not there is alone in its class, so a to-one key is
/// compared through its target's `rep` (or the key itself: a target alone, or a key to no object).
///
/// Per table, a `GROUP BY` over the entity, every attribute and those canonical keys finds the
/// groups (`HAVING COUNT(*) > 1`, a few rows), then each object is looked up in them through an
/// index: two passes over the table, SQLite's sorter on disk (`temp_store = FILE`). Tables without
/// to-one keys are grouped once; a keyed table whose targets are settled (no cycle) once, after
/// them; tables on a cycle start from their attributes alone and are regrouped until no group
/// splits (each pass only splits, so an unchanged number of copies is an unchanged partition: the
/// same coarsest stable partition `ObjectIdentity` refines to).
struct DuplicateGroups {
    struct Table {
        let table: String
        /// `temp.<map>(pk INTEGER PRIMARY KEY, rep, ent)`: the objects that have a copy.
        let map: String
        let entities: [CoreDataSchema.Entity]
    }

    let side: ObjectIdentity.Side
    let tables: [Table]

    /// Groups the user objects of `main`. `keys`: entity name → the attribute columns identifying it.
    static func find(_ db: Database, schema: CoreDataSchema, keys: [String: [String]]) throws -> DuplicateGroups {
        try db.execute(sql: "PRAGMA temp_store = FILE")
        try SchemaFacts.registerValueFunctions(db)
        let side = try ObjectIdentity.Side.of(db, schema: schema)
        var tables: [Table] = []
        for table in schema.entityTables.sorted() {
            let entities = schema.userEntities.filter { $0.table == table }
            guard !entities.isEmpty else { continue }
            tables.append(Table(table: table, map: "usm_dup_\(tables.count)", entities: entities))
        }
        let groups = DuplicateGroups(side: side, tables: tables)
        for table in tables {
            try db.execute(
                sql: """
                    DROP TABLE IF EXISTS temp.\(table.map);
                    CREATE TEMP TABLE \(table.map) (pk INTEGER PRIMARY KEY, rep INTEGER, ent INTEGER);
                    """)
        }
        // Settled: grouped for good. First the tables without keys, then keyed tables whose
        // targets are settled, as long as there are some; what is left is on a cycle.
        var settled = Set<Int>()
        for (i, table) in tables.enumerated() where groups.keyColumns(table).isEmpty {
            _ = try groups.group(db, i, keys: keys, withKeys: false)
            settled.insert(i)
        }
        var progress = true
        while progress {
            progress = false
            for (i, table) in tables.enumerated() where !settled.contains(i) {
                let targets = groups.keyColumns(table).map(\.target)
                guard targets.allSatisfy({ settled.contains($0) }) else { continue }
                _ = try groups.group(db, i, keys: keys, withKeys: true)
                settled.insert(i)
                progress = true
            }
        }
        let cycle = tables.indices.filter { !settled.contains($0) }
        for i in cycle { _ = try groups.group(db, i, keys: keys, withKeys: false) }
        var changed = !cycle.isEmpty
        while changed {
            changed = false
            for i in cycle where try groups.group(db, i, keys: keys, withKeys: true) { changed = true }
        }
        return groups
    }

    /// The to-one keys of `table` leading to a user table, with that table's index.
    func keyColumns(_ table: Table) -> [(column: String, target: Int)] {
        side.keys.filter { $0.table == table.table }.compactMap { key in
            tables.firstIndex { $0.table == key.destinationTable }.map { (key.column, $0) }
        }.sorted { $0.column < $1.column }
    }

    /// Regroups table `i` into its map; true when the number of copies changed.
    private func group(_ db: Database, _ i: Int, keys: [String: [String]], withKeys: Bool) throws -> Bool {
        let table = tables[i]
        let schema = side.schema
        let attributes = SchemaFacts.attributeColumns(
            table.table, schema: schema, indexedKeys: side.indexed[table.table] ?? [])
        let keyed = withKeys ? keyColumns(table) : []
        // An entity identified by some attributes only: the others (and its keys) read NULL.
        func masked(_ expression: String, excluded: [Int]) -> String {
            excluded.isEmpty
                ? expression
                : "CASE WHEN Z_ENT IN (\(excluded.map(String.init).joined(separator: ","))) THEN NULL ELSE \(expression) END"
        }
        var columns = ["Z_PK AS pk", "Z_ENT AS e"]
        var names = ["e"]
        for (n, column) in attributes.enumerated() {
            let excluded = table.entities.filter { keys[$0.name].map { !$0.contains(column) } ?? false }.map(\.number)
            // A large value is compared by its SHA-256 (read in pieces), not whole.
            let v = SchemaFacts.identityValue(database: "main", table: table.table, column: column)
            columns.append("\(masked(v.large, excluded: excluded)) AS l\(n)")
            columns.append("\(masked(v.value, excluded: excluded)) AS a\(n)")
            names += ["l\(n)", "a\(n)"]
        }
        let keyedEntities = table.entities.filter { keys[$0.name] != nil }.map(\.number)
        for (n, key) in keyed.enumerated() {
            // The target's group (its lowest key), or the key itself: a target alone, or no object.
            let c = key.column.sqlIdentifier
            let canonical = "IFNULL((SELECT m.rep FROM temp.\(tables[key.target].map) m WHERE m.pk = \(c)), \(c))"
            columns.append("\(masked(canonical, excluded: keyedEntities)) AS k\(n)")
            names.append("k\(n)")
        }
        let filter = table.entities.map { String($0.number) }.joined(separator: ",")
        let rows =
            "SELECT \(columns.joined(separator: ", ")) FROM main.\(table.table.sqlIdentifier) WHERE +Z_ENT IN (\(filter))"
        let list = names.joined(separator: ", ")
        // The groups' columns take the affinity of the rows' (`CREATE TABLE ... AS`): a comparison
        // of two columns of different affinity could not be looked up in their index (each
        // object would scan every group).
        let before = try copies(db, table.map)
        try db.execute(
            sql: """
                DROP TABLE IF EXISTS temp.usm_dup_groups;
                DROP TABLE IF EXISTS temp.usm_dup_next;
                CREATE TEMP TABLE usm_dup_groups AS SELECT MIN(pk) AS rep, \(list) FROM (\(rows)) GROUP BY \(list) HAVING COUNT(*) > 1;
                CREATE INDEX temp.usm_dup_groups_all ON usm_dup_groups (\(list));
                CREATE TEMP TABLE usm_dup_next (pk INTEGER PRIMARY KEY, rep INTEGER, ent INTEGER);
                INSERT INTO temp.usm_dup_next SELECT o.pk, g.rep, o.e FROM (\(rows)) o
                  CROSS JOIN temp.usm_dup_groups g ON \(names.map { "g.\($0) IS o.\($0)" }.joined(separator: " AND "));
                DELETE FROM temp.\(table.map);
                INSERT INTO temp.\(table.map) SELECT * FROM temp.usm_dup_next;
                DROP TABLE temp.usm_dup_next;
                DROP TABLE temp.usm_dup_groups;
                """)
        return try copies(db, table.map) != before
    }

    /// Objects of a map that are copies of another (its rows less its groups).
    private func copies(_ db: Database, _ map: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) - COUNT(DISTINCT rep) FROM temp.\(map)") ?? 0
    }

    /// Per entity name: objects that are copies of another.
    func duplicates(_ db: Database) throws -> [String: Int] {
        var result: [String: Int] = [:]
        for table in tables {
            for row in try Row.fetchAll(
                db, sql: "SELECT ent, COUNT(*) AS n FROM temp.\(table.map) WHERE pk <> rep GROUP BY ent")
            {
                guard let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue),
                    let name = side.schema.entity(ent)?.name
                else { continue }
                result[name, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
            }
        }
        return result
    }

    /// Fills `temp.<name>(pk INTEGER PRIMARY KEY, keep, ent)` for `table`: each copy, with the
    /// object kept of its group (the lowest key, or the highest with `newest`). Per entity name.
    func writeRemovals(_ db: Database, table: String, newest: Bool, into name: String) throws -> [String: Int] {
        guard let t = tables.first(where: { $0.table == table }) else { return [:] }
        try db.execute(
            sql: "CREATE TEMP TABLE IF NOT EXISTS \(name) (pk INTEGER PRIMARY KEY, keep INTEGER, ent INTEGER)")
        try db.execute(
            sql: newest
                ? """
                INSERT OR IGNORE INTO temp.\(name) (pk, keep, ent)
                SELECT m.pk, k.keep, m.ent FROM temp.\(t.map) m
                  JOIN (SELECT rep, MAX(pk) AS keep FROM temp.\(t.map) GROUP BY rep) k ON k.rep = m.rep
                WHERE m.pk <> k.keep
                """
                : "INSERT OR IGNORE INTO temp.\(name) (pk, keep, ent) SELECT pk, rep, ent FROM temp.\(t.map) WHERE pk <> rep"
        )
        var result: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT ent, COUNT(*) AS n FROM temp.\(name) GROUP BY ent") {
            guard let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue),
                let entity = side.schema.entity(ent)?.name
            else { continue }
            result[entity, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
        }
        return result
    }

    /// Drops the temporary tables.
    func drop(_ db: Database) throws {
        for table in tables { try db.execute(sql: "DROP TABLE IF EXISTS temp.\(table.map)") }
    }
}
