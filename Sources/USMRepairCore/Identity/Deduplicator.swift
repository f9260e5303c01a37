import Foundation
import GRDB

/// Removes the duplicates a store holds (`ObjectIdentity`), in SQL on an open writable database
/// (`main`): one object per group survives (the lowest `Z_PK`, or the highest with `newest`);
/// every to-one reference to a removed copy points at the survivor; many-to-many join rows are
/// moved to the survivor without repeating a pair; counters (`Z_MAX`) are never behind the keys.
/// Run it on a staged copy: it changes the database it is given.
struct Deduplicator {
    /// Entity name → the attribute columns identifying it (`ObjectIdentity.parseKeys`).
    var keys: [String: [String]] = [:]
    /// Keep the copy with the highest key instead of the lowest.
    var newest = false

    /// The groups of duplicates of `main` (`DuplicateGroups`).
    private func classify(_ db: Database, schema: CoreDataSchema) throws -> DuplicateGroups {
        try DuplicateGroups.find(
            db, schema: schema, keys: try ObjectIdentity.constraintKeys(db, schema: schema, explicit: keys))
    }

    /// Objects per entity that `run` would remove; nothing of `main` is written.
    func count(_ db: Database) throws -> [String: Int] {
        let identity = try classify(db, schema: try CoreDataSchema.readMain(db))
        defer { try? identity.drop(db) }
        return try identity.duplicates(db)
    }

    /// Removed objects per entity. `listed` hears them as soon as the copies are listed, before
    /// anything is removed (a caller waiting only for the counts goes on while the removal runs).
    func run(_ db: Database, listed: ([String: Int]) -> Void = { _ in }) throws -> [String: Int] {
        let schema = try CoreDataSchema.readMain(db)
        var lap = Date()
        /// `USM_REPAIR_TIMINGS=1`: where the removal's time goes (`dedupe: <phase>`).
        func note(_ phase: String) {
            PhaseTimings.note("dedupe: \(phase)", seconds: Date().timeIntervalSince(lap))
            lap = Date()
        }
        let identity = try classify(db, schema: schema)  // `duplicates: grouping`
        lap = Date()
        let toOne = identity.side.keys
        var removals: [String: String] = [:]  // table → temp (pk → keep)
        var removed: [String: Int] = [:]
        for table in identity.tables {
            let temp = "usm_rm_\(removals.count)"
            let counts = try identity.writeRemovals(db, table: table.table, newest: newest, into: temp)
            guard try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM temp.\(temp)") ?? 0 > 0 else {
                try db.execute(sql: "DROP TABLE temp.\(temp)")
                continue
            }
            removed.merge(counts, uniquingKeysWith: +)
            removals[table.table] = temp
        }
        try identity.drop(db)
        listed(removed)
        guard !removals.isEmpty else { return [:] }
        note("copies listed")
        // To-one references to a removed copy lead to its survivor; in an ordered to-many
        // (`Z_FOK_<REL>` beside the key) they come after the survivor's own, in their order.
        for key in toOne {
            guard let temp = removals[key.destinationTable] else { continue }
            let c = key.column.sqlIdentifier
            let order = "Z_FOK_" + key.column.dropFirst()
            let ordered = schema.table(key.table, hasColumn: order)
            if ordered {
                try Self.noteMoves(
                    db, table: key.table, rowid: "Z_PK", column: key.column, order: order, removals: temp)
            }
            try db.execute(
                sql: """
                    UPDATE main.\(key.table.sqlIdentifier) SET \(c) = (SELECT r.keep FROM temp.\(temp) r WHERE r.pk = \(c))
                    WHERE \(c) IN (SELECT pk FROM temp.\(temp))
                    """)
            if ordered { try Self.appendMoves(db, table: key.table, rowid: "Z_PK", column: key.column, order: order) }
        }
        note("to-one references moved")
        // Many-to-many pairs move to the survivor; a pair it already has is not repeated.
        for join in schema.joinTables {
            var moved = false
            for column in join.columns {
                guard let table = schema.entity(column.entity)?.table, let temp = removals[table] else { continue }
                let c = column.column.sqlIdentifier
                let j = join.name.sqlIdentifier
                // An ordered many-to-many keeps the list of each object in `Z_FOK_<column>`.
                let order = "Z_FOK_" + column.column.dropFirst(2)
                let ordered = join.orderColumns.contains(order)
                if ordered {
                    try Self.noteMoves(
                        db, table: join.name, rowid: "rowid", column: column.column, order: order, removals: temp)
                }
                try db.execute(
                    sql: """
                        UPDATE OR IGNORE main.\(j) SET \(c) = (SELECT r.keep FROM temp.\(temp) r WHERE r.pk = \(c))
                        WHERE \(c) IN (SELECT pk FROM temp.\(temp))
                        """)
                if ordered {
                    try Self.appendMoves(db, table: join.name, rowid: "rowid", column: column.column, order: order)
                }
                // Pairs the survivor already had (the update was ignored).
                try db.execute(sql: "DELETE FROM main.\(j) WHERE \(c) IN (SELECT pk FROM temp.\(temp))")
                moved = true
            }
            // Repeats in a table without a unique key over its pair (Core Data's has its primary key).
            let pair = join.columns.map(\.column)
            if moved, try !Self.uniquePair(db, table: join.name, columns: pair) {
                try db.execute(
                    sql:
                        "DELETE FROM main.\(join.name.sqlIdentifier) WHERE rowid NOT IN (SELECT MIN(rowid) FROM main.\(join.name.sqlIdentifier) GROUP BY \(pair.map(\.sqlIdentifier).joined(separator: ", ")))"
                )
            }
        }
        // Persistent history: a change recorded for a removed copy names its survivor, which now
        // stands for it (no change row names an object that is gone).
        for history in schema.historyTables
        where schema.table(history, hasColumn: "ZENTITY") && schema.table(history, hasColumn: "ZENTITYPK") {
            for (table, temp) in removals {
                let ents = schema.entities.filter { $0.table == table }.map { String($0.number) }.joined(separator: ",")
                guard !ents.isEmpty else { continue }
                try db.execute(
                    sql: """
                        UPDATE main.\(history.sqlIdentifier) SET ZENTITYPK = (SELECT r.keep FROM temp.\(temp) r WHERE r.pk = ZENTITYPK)
                        WHERE ZENTITY IN (\(ents)) AND ZENTITYPK IN (SELECT pk FROM temp.\(temp))
                        """)
            }
        }
        note("many-to-many and history moved")
        for (table, temp) in removals.sorted(by: { $0.key < $1.key }) {
            try db.execute(sql: "DELETE FROM main.\(table.sqlIdentifier) WHERE Z_PK IN (SELECT pk FROM temp.\(temp))")
            try db.execute(sql: "DROP TABLE temp.\(temp)")
        }
        _ = try Counters.raise(db)
        note("copies deleted")
        return removed
    }

    /// Whether a unique index (or the primary key) of `table` has exactly `columns` (in any order):
    /// then a pair cannot be there twice.
    static func uniquePair(_ db: Database, table: String, columns: [String]) throws -> Bool {
        let wanted = Set(columns.map { $0.uppercased() })
        for index in try Row.fetchAll(
            db, sql: "SELECT name, \"unique\" AS u FROM pragma_index_list(?)", arguments: [table])
        {
            guard (index["u"] as Int?) == 1, let name = index["name"] as String? else { continue }
            let names = try String.fetchAll(
                db, sql: "SELECT name FROM pragma_index_info(?) WHERE name IS NOT NULL", arguments: [name])
            if Set(names.map { $0.uppercased() }) == wanted, names.count == wanted.count { return true }
        }
        return false
    }

    /// Before `column` of `table` is moved from removed copies to their survivors: the rows that
    /// move, the copy they came from and their position (`temp.usm_moves`).
    static func noteMoves(_ db: Database, table: String, rowid: String, column: String, order: String, removals: String)
        throws
    {
        try db.execute(
            sql: """
                DROP TABLE IF EXISTS temp.usm_moves;
                CREATE TEMP TABLE usm_moves (id INTEGER PRIMARY KEY, origin INTEGER, parent INTEGER, pos INTEGER);
                INSERT INTO temp.usm_moves SELECT c.\(rowid), c.\(column.sqlIdentifier), r.keep, c.\(order.sqlIdentifier)
                  FROM main.\(table.sqlIdentifier) c JOIN temp.\(removals) r ON r.pk = c.\(column.sqlIdentifier);
                """)
    }

    /// After the move: the moved rows still there come after the survivor's own rows, copy by copy
    /// in key order, each copy's rows in their old order (positions are sparse: only order counts).
    static func appendMoves(_ db: Database, table: String, rowid: String, column: String, order: String) throws {
        let t = table.sqlIdentifier
        let o = order.sqlIdentifier
        try db.execute(
            sql: """
                CREATE TEMP TABLE usm_moved AS
                  SELECT m.id AS id, (SELECT IFNULL(MAX(c.\(o)), 0) FROM main.\(t) c
                                      WHERE c.\(column.sqlIdentifier) = m.parent AND c.\(rowid) NOT IN (SELECT id FROM temp.usm_moves))
                    + ROW_NUMBER() OVER (PARTITION BY m.parent ORDER BY m.origin, m.pos, m.id) AS pos
                  FROM temp.usm_moves m;
                UPDATE main.\(t) SET \(o) = (SELECT n.pos FROM temp.usm_moved n WHERE n.id = main.\(t).\(rowid))
                  WHERE \(rowid) IN (SELECT id FROM temp.usm_moved);
                DROP TABLE temp.usm_moved;
                DROP TABLE temp.usm_moves;
                """)
    }
}
