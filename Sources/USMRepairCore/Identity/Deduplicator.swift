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

    /// Removed objects per entity.
    func run(_ db: Database) throws -> [String: Int] {
        let schema = try CoreDataSchema.readMain(db)
        let toOne = schema.toOneKeys + (try SchemaFacts.inferredKeys(db, schema: schema))
        let identity = try ObjectIdentity.classify(
            db,
            sides: [
                .init(
                    database: "main", schema: schema, keys: toOne,
                    indexed: try SchemaFacts.indexedKeyColumns(db, schema: schema))
            ], keys: keys)
        let removed = try identity.duplicates(db)
        guard !removed.isEmpty else {
            try identity.drop(db)
            return [:]
        }
        var removals: [String: String] = [:]  // table → temp (pk → keep)
        for table in identity.tables {
            let temp = "usm_rm_\(removals.count)"
            try identity.writeRemovals(db, table: table.table, newest: newest, into: temp)
            removals[table.table] = temp
        }
        try identity.drop(db)
        // To-one references to a removed copy lead to its survivor.
        for key in toOne {
            guard let temp = removals[key.destinationTable] else { continue }
            let c = key.column.sqlIdentifier
            try db.execute(
                sql: """
                    UPDATE main.\(key.table.sqlIdentifier) SET \(c) = (SELECT r.keep FROM temp.\(temp) r WHERE r.pk = \(c))
                    WHERE \(c) IN (SELECT pk FROM temp.\(temp))
                    """)
        }
        // Many-to-many pairs move to the survivor; a pair it already has is not repeated.
        for join in schema.joinTables {
            for column in join.columns {
                guard let table = schema.entity(column.entity)?.table, let temp = removals[table] else { continue }
                let c = column.column.sqlIdentifier
                let j = join.name.sqlIdentifier
                try db.execute(
                    sql: """
                        UPDATE OR IGNORE main.\(j) SET \(c) = (SELECT r.keep FROM temp.\(temp) r WHERE r.pk = \(c))
                        WHERE \(c) IN (SELECT pk FROM temp.\(temp))
                        """)
                // Pairs the survivor already had (the update was ignored), and repeats in a table
                // without a key over its pair.
                try db.execute(sql: "DELETE FROM main.\(j) WHERE \(c) IN (SELECT pk FROM temp.\(temp))")
                let others = join.columns.map(\.column.sqlIdentifier).joined(separator: ", ")
                try db.execute(
                    sql:
                        "DELETE FROM main.\(j) WHERE rowid NOT IN (SELECT MIN(rowid) FROM main.\(j) GROUP BY \(others))"
                )
            }
        }
        for (table, temp) in removals.sorted(by: { $0.key < $1.key }) {
            try db.execute(sql: "DELETE FROM main.\(table.sqlIdentifier) WHERE Z_PK IN (SELECT pk FROM temp.\(temp))")
            try db.execute(sql: "DROP TABLE temp.\(temp)")
        }
        _ = try Counters.raise(db)
        return removed
    }
}
