import Foundation
import GRDB

/// When two objects are the same, decided in SQL over one or more attached stores ("sides").
///
/// Two objects are the same when they are of the same entity (by name), hold equal values in every
/// attribute column (NULL equals NULL, BLOBs by value, an external-data reference by its value) and
/// their to-one relationships lead to objects that are the same. The last part is decided by
/// refinement: objects start in classes by entity and attributes; then each table's classes are split
/// by the classes of their to-one targets, again and again until no class splits. Two books equal in
/// every attribute by two different authors stay apart; by two copies of one author they are one.
/// To-many relationships are not part of identity (devices hold different parts of them).
///
/// `keys` (`--key ENTITY=ATTR,...`) restricts an entity's identity to those attributes (its
/// relationships are then not compared either). The classes live in temporary tables
/// (`temp.usm_id_<n>`, on disk with `temp_store = FILE`): memory stays flat in the store's size.
struct ObjectIdentity {
    /// One store taking part: its schema name on the connection (`main`, `src`), its schema, its
    /// to-one keys (declared and inferred) and, for sides after the first, its entities' numbers in
    /// the first side's numbering (nil: matched by name).
    struct Side {
        let database: String
        let schema: CoreDataSchema
        let keys: [CoreDataSchema.ToOneKey]
        let indexed: [String: Set<String>]
        var entityMap: [Int: Int]?

        /// The side of the store attached as `database`: its declared and inferred to-one keys
        /// and its indexed key columns read from it.
        static func of(_ db: Database, schema: CoreDataSchema, database: String = "main", entityMap: [Int: Int]? = nil)
            throws -> Side
        {
            Side(
                database: database, schema: schema,
                keys: schema.toOneKeys + (try SchemaFacts.inferredKeys(db, schema: schema, schemaName: database)),
                indexed: try SchemaFacts.indexedKeyColumns(db, schema: schema, schemaName: database),
                entityMap: entityMap)
        }
    }

    /// One table of the first side with its counterpart per side.
    struct Table {
        /// The first side's table.
        let table: String
        /// The temporary table holding `(side, pk, ent, cls, k0...)`.
        let temp: String
        /// Per side: that side's table (nil: it has none) and its entity numbers → first side's.
        let sources: [(table: String, entities: [Int: Int])?]
    }

    let sides: [Side]
    let tables: [Table]

    /// `ENTITY=ATTR[,ATTR...]` as given to `--key`, checked against `schema`: attribute names → columns.
    /// - Throws: `USMError.badInput` for an unknown entity or attribute.
    static func parseKeys(_ specs: [String], schema: CoreDataSchema) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for spec in specs {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw USMError.usage("--key \(spec): expected ENTITY=ATTR[,ATTR...]")
            }
            guard let entity = schema.userEntities.first(where: { $0.name == parts[0] }), let table = entity.table
            else {
                throw USMError.usage(
                    "--key \(spec): the store has no entity \(parts[0]) (it has \(schema.userEntities.map(\.name).sorted().joined(separator: ", ")))"
                )
            }
            var columns: [String] = []
            for attribute in parts[1].split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                let column = "Z" + attribute.uppercased()
                guard !attribute.isEmpty, schema.table(table, hasColumn: column) else {
                    throw USMError.usage(
                        "--key \(spec): \(parts[0]) has no attribute \(attribute) (no column \(column) in \(table))")
                }
                columns.append(column)
            }
            result[entity.name, default: []] += columns
        }
        return result
    }

    /// The model's uniqueness constraints as identity keys (entity name → attribute columns), for
    /// every entity a constraint covers (sub-entities inherit their parent's): from the model (the
    /// store's model cache or `--model`) and from the store's own `Z_<Entity>_UNIQUE_<…>` indexes,
    /// which is how Core Data writes them. An entity `explicit` names (`--key`) keeps that key.
    static func constraintKeys(
        _ db: Database, schema: CoreDataSchema, schemaName: String = "main", explicit: [String: [String]] = [:]
    ) throws -> [String: [String]] {
        var own: [String: [String]] = [:]
        for entity in schema.model?.entities ?? [] {
            guard let table = schema.userEntities.first(where: { $0.name == entity.name })?.table,
                let constraint = entity.uniquenessConstraints.first(where: { properties in
                    !properties.isEmpty
                        && properties.allSatisfy { schema.table(table, hasColumn: "Z" + $0.uppercased()) }
                })
            else { continue }
            own[entity.name] = constraint.map { "Z" + $0.uppercased() }
        }
        for index in try SchemaFacts.read(db, schema: schema, schemaName: schemaName).indexes.values.joined()
        where index.unique && index.name.hasPrefix("Z_") {
            guard let range = index.name.range(of: "_UNIQUE_") else { continue }
            let name = String(index.name[index.name.index(index.name.startIndex, offsetBy: 2)..<range.lowerBound])
            guard own[name] == nil, schema.userEntities.contains(where: { $0.name == name && $0.table == index.table }),
                !index.columns.isEmpty, index.columns.allSatisfy({ $0.hasPrefix("Z") && !$0.hasPrefix("Z_") })
            else { continue }
            own[name] = index.columns
        }
        var keys = explicit
        guard !own.isEmpty else { return keys }
        for entity in schema.userEntities where keys[entity.name] == nil {
            // The nearest ancestor's constraint (or its own); a damaged Z_SUPER chain (a cycle, an
            // absurd depth) is followed 64 steps at most.
            var current: CoreDataSchema.Entity? = entity
            var steps = 0
            while let e = current, steps < 64 {
                if let columns = own[e.name] {
                    keys[entity.name] = columns
                    break
                }
                steps += 1
                current = e.superNumber == 0 || e.superNumber == e.number ? nil : schema.entity(e.superNumber)
            }
        }
        return keys
    }

    /// Computes the classes of every user object of every side into temporary tables.
    /// `keys`: entity name → the attribute columns identifying it.
    /// `rankingAll`: rank every object by its values even across sides (what ranking only the
    /// objects two sides share must agree with; tests compare the two).
    static func classify(
        _ db: Database, sides: [Side], keys: [String: [String]] = [:], rankingAll: Bool = false
    ) throws -> ObjectIdentity {
        precondition(!sides.isEmpty)
        try db.execute(sql: "PRAGMA temp_store = FILE")
        let first = sides[0]
        var tables: [Table] = []
        for table in first.schema.entityTables.sorted() {
            let entities = first.schema.userEntities.filter { $0.table == table }
            guard !entities.isEmpty else { continue }
            var sources: [(table: String, entities: [Int: Int])?] = []
            for (s, side) in sides.enumerated() {
                if s == 0 {
                    sources.append((table, Dictionary(uniqueKeysWithValues: entities.map { ($0.number, $0.number) })))
                    continue
                }
                var map: [Int: Int] = [:]
                var sideTable: String?
                for entity in side.schema.userEntities {
                    let target =
                        side.entityMap.map { $0[entity.number] } ?? entities.first { $0.name == entity.name }?.number
                    guard let target, entities.contains(where: { $0.number == target }), let t = entity.table else {
                        continue
                    }
                    if sideTable == nil { sideTable = t }
                    guard sideTable == t else { continue }
                    map[entity.number] = target
                }
                sources.append(sideTable.map { ($0, map) })
            }
            tables.append(Table(table: table, temp: "usm_id_\(tables.count)", sources: sources))
        }
        let identity = ObjectIdentity(sides: sides, tables: tables)
        try identity.build(db, keys: keys, acrossSides: sides.count > 1 && !rankingAll)
        return identity
    }

    private func keyColumns(_ table: Table) -> [(column: String, target: Int)] {
        let first = sides[0]
        let keys = first.keys.filter { $0.table == table.table }
        return keys.compactMap { key in
            tables.firstIndex { $0.table == key.destinationTable }.map { (key.column, $0) }
        }.sorted { $0.column < $1.column }
    }

    /// `acrossSides`: classes only tell which objects of one side another holds (`matched`,
    /// `writeMatches`; not `duplicates`): objects no other side holds keep classes of their own.
    private func build(_ db: Database, keys: [String: [String]], acrossSides: Bool) throws {
        let first = sides[0]
        try SchemaFacts.registerValueFunctions(db)
        let referenced = Set(tables.flatMap { keyColumns($0).map { tables[$0.target].table } })
        // 1. Classes by entity and attributes.
        for table in tables {
            let started = Date()
            defer {
                PhaseTimings.note("identity: classes of \(table.table)", seconds: Date().timeIntervalSince(started))
            }
            let keyed = keyColumns(table)
            var attributes = SchemaFacts.attributeColumns(
                table.table, schema: first.schema, indexedKeys: first.indexed[table.table] ?? [])
            for (s, side) in sides.enumerated() where s > 0 {
                guard let source = table.sources[s] else { continue }
                attributes = attributes.filter { side.schema.table(source.table, hasColumn: $0) }
            }
            let entities = first.schema.userEntities.filter { $0.table == table.table }
            var selects: [String] = []
            var candidateSelects: [String] = []
            for (s, side) in sides.enumerated() {
                guard let source = table.sources[s], !source.entities.isEmpty else { continue }
                let ent =
                    source.entities.allSatisfy { $0.key == $0.value }
                    ? "Z_ENT"
                    : "CASE Z_ENT "
                        + source.entities.sorted { $0.key < $1.key }.map { "WHEN \($0.key) THEN \($0.value)" }
                        .joined(separator: " ") + " END"
                var columns = ["\(s) AS side", "Z_PK AS pk", "\(ent) AS ent"]
                for (i, key) in keyed.enumerated() {
                    columns.append(
                        side.schema.table(source.table, hasColumn: key.column)
                            ? "\(key.column.sqlIdentifier) AS k\(i)" : "NULL AS k\(i)")
                }
                for (i, column) in attributes.enumerated() {
                    // A large value is ordered by its SHA-256 (read in pieces), not sorted whole.
                    let v = SchemaFacts.identityValue(database: side.database, table: source.table, column: column)
                    columns.append("\(v.large) AS l\(i), \(v.value) AS a\(i)")
                }
                let filter = source.entities.keys.sorted().map(String.init).joined(separator: ",")
                let select =
                    "SELECT \(columns.joined(separator: ", ")) FROM \(side.database.sqlIdentifier).\(source.table.sqlIdentifier) WHERE +Z_ENT IN (\(filter))"
                selects.append(select)
                candidateSelects.append(
                    select + " AND Z_PK IN (SELECT pk FROM temp.usm_id_candidates WHERE side = \(s))")
            }
            // An entity identified by some attributes only: the others (and its keys) read NULL.
            var order = ["ent"]
            for (i, column) in attributes.enumerated() {
                let excluded = entities.filter { keys[$0.name].map { !$0.contains(column) } ?? false }.map(\.number)
                for name in ["l\(i)", "a\(i)"] {
                    order.append(
                        excluded.isEmpty
                            ? name
                            : "CASE WHEN ent IN (\(excluded.map(String.init).joined(separator: ","))) THEN NULL ELSE \(name) END"
                    )
                }
            }
            let keyDefs = keyed.indices.map { "k\($0) INTEGER" }
            try db.execute(sql: "DROP TABLE IF EXISTS temp.\(table.temp)")
            try db.execute(
                sql:
                    "CREATE TEMP TABLE \(table.temp) (side INTEGER, pk INTEGER, ent INTEGER, cls INTEGER\(keyDefs.map { ", " + $0 }.joined()), PRIMARY KEY (side, pk)) WITHOUT ROWID"
            )
            guard !selects.isEmpty else { continue }
            let keyNames = keyed.indices.map { "k\($0)" }
            let k = keyNames.map { ", " + $0 }.joined()
            guard acrossSides else {
                try db.execute(
                    sql: """
                        INSERT INTO temp.\(table.temp) (side, pk, ent, cls\(k))
                        SELECT side, pk, ent, DENSE_RANK() OVER (ORDER BY \(order.joined(separator: ", ")))\(k)
                        FROM (\(selects.joined(separator: " UNION ALL ")))
                        """)
                continue
            }
            // Across sides, an object can be another side's only if that side holds an object of its
            // entity and attributes: one hash per object (of its identity key, `IS` semantics, so
            // values equal for the ranking below hash alike), and only objects whose hash two sides
            // hold are ranked by their values (a merge of stores sharing nothing sorts no value).
            // The others get classes of their own, negative: no object of another side is the same,
            // so no object referring to them is either (`refine` leaves them as they are). Only
            // `matched` and `writeMatches` read such classes (not `duplicates`: `acrossSides`).
            try db.execute(
                sql: """
                    DROP TABLE IF EXISTS temp.usm_id_hashes;
                    CREATE TEMP TABLE usm_id_hashes (side INTEGER, pk INTEGER, ent INTEGER, h INTEGER\(keyDefs.map { ", " + $0 }.joined()));
                    INSERT INTO temp.usm_id_hashes (side, pk, ent, h\(k))
                    SELECT side, pk, ent, \(IdentityKey.hashExpression(order))\(k) FROM (\(selects.joined(separator: " UNION ALL ")));
                    DROP TABLE IF EXISTS temp.usm_id_shared;
                    CREATE TEMP TABLE usm_id_shared (h INTEGER PRIMARY KEY);
                    INSERT INTO temp.usm_id_shared SELECT h FROM temp.usm_id_hashes GROUP BY h HAVING MIN(side) <> MAX(side);
                    DROP TABLE IF EXISTS temp.usm_id_candidates;
                    CREATE TEMP TABLE usm_id_candidates (side INTEGER, pk INTEGER, PRIMARY KEY (side, pk)) WITHOUT ROWID;
                    INSERT OR IGNORE INTO temp.usm_id_candidates SELECT side, pk FROM temp.usm_id_hashes WHERE h IN temp.usm_id_shared;
                    INSERT INTO temp.\(table.temp) (side, pk, ent, cls\(k))
                    SELECT side, pk, ent, DENSE_RANK() OVER (ORDER BY \(order.joined(separator: ", ")))\(k)
                    FROM (\(candidateSelects.joined(separator: " UNION ALL ")));
                    """)
            // The others are needed only where a key leads to them (a key to an object not in
            // the table would read as dangling).
            if referenced.contains(table.table) {
                try db.execute(
                    sql: """
                        INSERT INTO temp.\(table.temp) (side, pk, ent, cls\(k))
                        SELECT side, pk, ent, -ROW_NUMBER() OVER ()\(k) FROM temp.usm_id_hashes WHERE h NOT IN temp.usm_id_shared
                        """)
            }
            try db.execute(
                sql: "DROP TABLE temp.usm_id_hashes; DROP TABLE temp.usm_id_shared; DROP TABLE temp.usm_id_candidates")
        }
        // 2. Refinement by the classes of the to-one targets, until no class splits.
        var changed = true
        while changed {
            changed = false
            for table in tables {
                let keyed = keyColumns(table)
                guard !keyed.isEmpty else { continue }
                let excluded = sides[0].schema.userEntities.filter { $0.table == table.table && keys[$0.name] != nil }
                    .map(\.number)
                var joins: [String] = []
                var order = ["o.cls"]
                for (i, key) in keyed.enumerated() {
                    joins.append(
                        "LEFT JOIN temp.\(tables[key.target].temp) t\(i) ON t\(i).side = o.side AND t\(i).pk = o.k\(i)")
                    // A key to no object stays apart from NULL, from every class (negative ones too)
                    // and from other dangling values.
                    let value =
                        "CASE WHEN o.k\(i) IS NULL THEN NULL WHEN t\(i).pk IS NULL THEN 'dangling ' || o.k\(i) ELSE t\(i).cls END"
                    order.append(
                        excluded.isEmpty
                            ? value
                            : "CASE WHEN o.ent IN (\(excluded.map(String.init).joined(separator: ","))) THEN NULL ELSE \(value) END"
                    )
                }
                let started = Date()
                defer {
                    PhaseTimings.note("identity: refined \(table.table)", seconds: Date().timeIntervalSince(started))
                }
                // Classes are dense ranks: the largest is their number (no sort, unlike COUNT(DISTINCT)).
                // Only positive classes are refined: a negative one is an object's own (`acrossSides`).
                let before =
                    try Int.fetchOne(db, sql: "SELECT IFNULL(MAX(cls), 0) FROM temp.\(table.temp) WHERE cls > 0") ?? 0
                guard before > 0 else { continue }
                try db.execute(
                    sql: """
                        DROP TABLE IF EXISTS temp.usm_id_next;
                        CREATE TEMP TABLE usm_id_next (side INTEGER, pk INTEGER, cls INTEGER, PRIMARY KEY (side, pk)) WITHOUT ROWID;
                        INSERT INTO temp.usm_id_next SELECT o.side, o.pk, DENSE_RANK() OVER (ORDER BY \(order.joined(separator: ", ")))
                        FROM temp.\(table.temp) o \(joins.joined(separator: " ")) WHERE o.cls > 0;
                        """)
                let after = try Int.fetchOne(db, sql: "SELECT IFNULL(MAX(cls), 0) FROM temp.usm_id_next") ?? 0
                if after != before {
                    changed = true
                    try db.execute(
                        sql:
                            "UPDATE temp.\(table.temp) SET cls = (SELECT n.cls FROM temp.usm_id_next n WHERE n.side = \(table.temp).side AND n.pk = \(table.temp).pk) WHERE cls > 0"
                    )
                }
                try db.execute(sql: "DROP TABLE temp.usm_id_next")
            }
        }
        for table in tables {
            try db.execute(sql: "CREATE INDEX temp.\(table.temp)_cls ON \(table.temp) (cls, side, pk)")
        }
    }

    /// Per first-side entity name: objects of side `side` that side 0 already holds.
    func matched(_ db: Database, side: Int) throws -> [String: Int] {
        try countByEntity(db) { t in
            "SELECT s.ent AS ent, COUNT(*) AS n FROM temp.\(t) s WHERE s.side = \(side) AND EXISTS (SELECT 1 FROM temp.\(t) d WHERE d.cls = s.cls AND d.side = 0) GROUP BY s.ent"
        }
    }

    /// Sums `(ent, n)` rows of a query over each table's classes (`sql` given its temp table) by entity name.
    private func countByEntity(_ db: Database, _ sql: (String) -> String) throws -> [String: Int] {
        var result: [String: Int] = [:]
        for table in tables {
            for row in try Row.fetchAll(db, sql: sql(table.temp)) {
                guard let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue),
                    let name = sides[0].schema.entity(ent)?.name
                else { continue }
                result[name, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
            }
        }
        return result
    }

    /// Fills `temp.<name>(src_pk INTEGER PRIMARY KEY, dst_pk)` for `table` (a first-side table):
    /// each object of `side` that side 0 holds, with the side-0 object it is (the lowest key).
    func writeMatches(_ db: Database, table: String, side: Int, into name: String) throws -> Bool {
        guard let t = tables.first(where: { $0.table == table }) else { return false }
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS \(name) (src_pk INTEGER PRIMARY KEY, dst_pk INTEGER)")
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO temp.\(name) (src_pk, dst_pk)
                SELECT s.pk, (SELECT MIN(d.pk) FROM temp.\(t.temp) d WHERE d.cls = s.cls AND d.side = 0)
                FROM temp.\(t.temp) s WHERE s.side = \(side) AND EXISTS (SELECT 1 FROM temp.\(t.temp) d WHERE d.cls = s.cls AND d.side = 0)
                """)
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM temp.\(name)") ?? 0 > 0
    }

    /// The groups of side 0 with more than one object, with the one kept (the lowest key, or the
    /// highest with `newest`), and each other object of the group: `(pk, keep, ent)` rows, read
    /// through the `(cls, side, pk)` index: the groups first (`CROSS JOIN`), each one's objects
    /// found by that index (`INDEXED BY`); left to itself the planner may scan every group per
    /// object, or every object per group by the `(side, pk)` key (minutes on 200k objects).
    private func copies(_ t: String, newest: Bool) -> String {
        """
        SELECT o.pk AS pk, g.keep AS keep, o.ent AS ent
        FROM (SELECT cls, \(newest ? "MAX" : "MIN")(pk) AS keep FROM temp.\(t) WHERE side = 0 GROUP BY cls HAVING COUNT(*) > 1) g
        CROSS JOIN temp.\(t) AS o INDEXED BY \(t)_cls ON o.cls = g.cls AND o.side = 0 AND o.pk <> g.keep
        """
    }

    /// Per entity name: objects of side 0 that are copies of another object of side 0.
    func duplicates(_ db: Database) throws -> [String: Int] {
        try countByEntity(db) { t in "SELECT ent, COUNT(*) AS n FROM (\(copies(t, newest: false))) GROUP BY ent" }
    }

    /// Fills `temp.<name>(pk INTEGER PRIMARY KEY, keep, ent)` for `table`: each side-0 object that
    /// is a copy, with the one kept of its group (the lowest key, or the highest with `newest`).
    /// Returns them per entity name.
    func writeRemovals(_ db: Database, table: String, newest: Bool, into name: String) throws -> [String: Int] {
        guard let t = tables.first(where: { $0.table == table }) else { return [:] }
        try db.execute(
            sql: "CREATE TEMP TABLE IF NOT EXISTS \(name) (pk INTEGER PRIMARY KEY, keep INTEGER, ent INTEGER)")
        try db.execute(sql: "INSERT OR IGNORE INTO temp.\(name) (pk, keep, ent) \(copies(t.temp, newest: newest))")
        var result: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT ent, COUNT(*) AS n FROM temp.\(name) GROUP BY ent") {
            guard let ent = Int.fromDatabaseValue(row["ent"] as DatabaseValue),
                let entity = sides[0].schema.entity(ent)?.name
            else { continue }
            result[entity, default: 0] += Int.fromDatabaseValue(row["n"] as DatabaseValue) ?? 0
        }
        return result
    }

    /// Drops the temporary tables.
    func drop(_ db: Database) throws {
        for table in tables { try db.execute(sql: "DROP TABLE IF EXISTS temp.\(table.temp)") }
    }
}
