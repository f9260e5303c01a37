import Foundation
import GRDB

/// The groups of duplicates one store holds, by `ObjectIdentity`'s sameness (same entity, equal
/// attributes, to-one targets the same, refined until stable), found without ranking every object:
/// only objects that have a copy are kept, in `temp.usm_dup_<n>(pk, rep, ent)` per table (`rep`:
/// the lowest key of the group). An object not there is alone in its class, so a to-one key is
/// compared through its target's `rep` (or the key itself: a target alone, or a key to no object).
///
/// Per table, one `GROUP BY` over the entity, the key of its attributes (`IdentityKey`: one BLOB,
/// however wide the table) and those canonical keys finds the groups (`HAVING COUNT(*) > 1`, a few
/// rows) with their members: one pass over the table, SQLite's sorter on disk (`temp_store = FILE`). Tables without to-one keys are grouped once; a
/// keyed table whose targets are settled (no cycle) once, after them; tables on a cycle start from
/// their attributes alone (the objects then in a group are kept aside with their key: only they
/// can be copies) and are regrouped until no group splits (each pass only splits, so an unchanged
/// number of copies is an unchanged partition: the same coarsest stable partition
/// `ObjectIdentity` refines to).
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
        try PhaseTimings.measure("duplicates: grouping") { try findGroups(db, schema: schema, keys: keys) }
    }

    private static func findGroups(_ db: Database, schema: CoreDataSchema, keys: [String: [String]]) throws
        -> DuplicateGroups
    {
        try db.execute(sql: "PRAGMA temp_store = FILE")
        try SchemaFacts.registerValueFunctions(db)
        try IdentityKey.register(db)
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
            _ = try groups.group(db, i, keys: keys, withKeys: false, from: nil)
            settled.insert(i)
        }
        var progress = true
        while progress {
            progress = false
            for (i, table) in tables.enumerated() where !settled.contains(i) {
                let targets = groups.keyColumns(table).map(\.target)
                guard targets.allSatisfy({ settled.contains($0) }) else { continue }
                _ = try groups.group(db, i, keys: keys, withKeys: true, from: nil)
                settled.insert(i)
                progress = true
            }
        }
        // On a cycle: the objects equal in their attributes to another (only they can be
        // copies: each pass only splits) are kept with their keys' values, and regrouped from
        // there until no group splits.
        let cycle = tables.indices.filter { !settled.contains($0) }
        var candidates: [Int: String] = [:]
        for i in cycle {
            let name = "usm_dupc_\(i)"
            _ = try groups.group(db, i, keys: keys, withKeys: false, from: nil, keeping: name)
            candidates[i] = name
        }
        defer {
            for name in candidates.values { try? db.execute(sql: "DROP TABLE IF EXISTS temp.\(name)") }
        }
        var changed = !cycle.isEmpty
        while changed {
            changed = false
            for i in cycle where try groups.group(db, i, keys: keys, withKeys: true, from: candidates[i]) {
                changed = true
            }
        }
        return groups
    }

    /// The to-one keys of `table` leading to a user table, with that table's index.
    func keyColumns(_ table: Table) -> [(column: String, target: Int)] {
        side.keys.filter { $0.table == table.table }.compactMap { key in
            tables.firstIndex { $0.table == key.destinationTable }.map { (key.column, $0) }
        }.sorted { $0.column < $1.column }
    }

    /// `SELECT pk, e, k, w0, w1, ...` over the objects of table `i`: `k` the key (`IdentityKey`)
    /// of its entity's identifying values (each attribute a flag saying whether it is large and
    /// the value or, large, its SHA-256: `SchemaFacts.identityValue`), `w<n>` the to-one keys.
    /// Each column of the table is named once, in an inner projection: GRDB's authorizer takes
    /// time in the square of a statement's column references (a union of regions for each),
    /// and references to a subquery's columns are not reported to it.
    private func objects(_ i: Int, keys: [String: [String]]) -> String {
        let table = tables[i]
        let attributes = SchemaFacts.attributeColumns(
            table.table, schema: side.schema, indexedKeys: side.indexed[table.table] ?? [])
        let keyed = keyColumns(table)
        var read = ["Z_PK AS pk", "Z_ENT AS e", "_rowid_ AS r"]
        read += attributes.enumerated().map { "\($1.sqlIdentifier) AS v\($0)" }
        read += keyed.enumerated().map { "\($1.column.sqlIdentifier) AS w\($0)" }
        let filter = table.entities.map { String($0.number) }.joined(separator: ",")
        var values: [String] = []
        for (n, column) in attributes.enumerated() {
            // An entity identified by some attributes only: the others read NULL.
            let excluded = table.entities.filter { keys[$0.name].map { !$0.contains(column) } ?? false }.map(\.number)
            // A large value is compared by its SHA-256 (read in pieces), not whole.
            let v = SchemaFacts.identityValue(
                database: "main", table: table.table, column: column, read: "v\(n)", rowid: "r")
            values.append(Self.masked(v.large, excluded: excluded))
            values.append(Self.masked(v.value, excluded: excluded))
        }
        let key = values.isEmpty ? "x''" : IdentityKey.expression(values)
        let w = keyed.indices.map { ", w\($0)" }.joined()
        return """
            SELECT pk, e, \(key) AS k\(w) FROM (SELECT \(read.joined(separator: ", ")) FROM main.\(table.table.sqlIdentifier) WHERE +Z_ENT IN (\(filter)))
            """
    }

    /// `expression`, or NULL for the entities `excluded`.
    private static func masked(_ expression: String, excluded: [Int]) -> String {
        excluded.isEmpty
            ? expression
            : "CASE WHEN e IN (\(excluded.map(String.init).joined(separator: ","))) THEN NULL ELSE \(expression) END"
    }

    /// Regroups table `i` into its map; true when the number of copies changed. `from`: the
    /// table of its candidates (`keeping` of an earlier call), or nil for every object of the table.
    /// `keeping`: a temporary table to fill with the objects grouped, their key and to-one keys.
    private func group(
        _ db: Database, _ i: Int, keys: [String: [String]], withKeys: Bool, from: String?, keeping: String? = nil
    ) throws -> Bool {
        let table = tables[i]
        let keyed = keyColumns(table)
        let source = from.map { "SELECT * FROM temp.\($0)" } ?? objects(i, keys: keys)
        // The target's group (its lowest key), or the key itself: a target alone, or no object.
        // An entity identified by some attributes only has no relationship in its identity.
        let keyedEntities = table.entities.filter { keys[$0.name] != nil }.map(\.number)
        var columns = ["pk", "e", "k"]
        var names = ["e", "k"]
        if withKeys {
            for (n, key) in keyed.enumerated() {
                let canonical = "IFNULL((SELECT m.rep FROM temp.\(tables[key.target].map) m WHERE m.pk = w\(n)), w\(n))"
                columns.append("\(Self.masked(canonical, excluded: keyedEntities)) AS c\(n)")
                names.append("c\(n)")
            }
        }
        // `LIMIT -1`: not flattened into the grouping, which would otherwise compute the key
        // again from the columns after sorting (`usm_valueid` is not deterministic, so SQLite
        // does not take the key for the `GROUP BY` term), sorting every value whole: the key is
        // computed once per object, large values read in pieces.
        let rows = "SELECT \(columns.joined(separator: ", ")) FROM (\(source)) LIMIT -1"
        let list = names.joined(separator: ", ")
        // `keeping`: each object of a group with its key and to-one keys (read again by key).
        let kept =
            keeping.map { name in
                let w = keyed.enumerated().map { ", t.\($1.column.sqlIdentifier) AS w\($0)" }.joined()
                return """
                    CREATE TEMP TABLE \(name) AS SELECT j.value AS pk, g.e AS e, g.k AS k\(w)
                      FROM temp.usm_dup_groups g, json_each(g.members) j
                      CROSS JOIN main.\(table.table.sqlIdentifier) t ON t.Z_PK = j.value;
                    """
            } ?? ""
        // One pass over the objects: the groups with their members (a JSON array of keys, read
        // back with json_each), then the map from them (the rows may read the map: a table with
        // a to-one key to itself).
        let before = try copies(db, table.map)
        try db.execute(
            sql: """
                DROP TABLE IF EXISTS temp.usm_dup_groups;
                CREATE TEMP TABLE usm_dup_groups AS SELECT MIN(pk) AS rep, \(list), json_group_array(pk) AS members
                  FROM (\(rows)) GROUP BY \(list) HAVING COUNT(*) > 1;
                DELETE FROM temp.\(table.map);
                INSERT INTO temp.\(table.map) (pk, rep, ent)
                  SELECT j.value, g.rep, g.e FROM temp.usm_dup_groups g, json_each(g.members) j;
                \(kept)
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
