import Foundation
import GRDB

/// `Z_PRIMARYKEY.Z_MAX`, the key generator Core Data hands the next key out of (`Z_MAX + 1`,
/// raised in the same transaction; coredata-format.md §1.2). It only ever goes up: usm-repair
/// raises a counter that is behind the keys in use, and never lowers one.
public enum Counters {
    /// One counter raised.
    public struct Change: Sendable, Equatable {
        public let entity: String
        public let from: Int64
        public let to: Int64
    }

    /// Raises every hierarchy's counter that is below the largest `Z_PK` of its table (a hierarchy
    /// shares its root's table and key space) to that key, in the open database's `main` schema.
    /// The counter of a hierarchy is the largest `Z_MAX` of its rows, and it is raised on the root
    /// entity's row only: Core Data keeps it there and leaves its sub-entities' rows at 0 (every
    /// store of the corpus with inheritance shows it).
    public static func raise(_ db: Database) throws -> [Change] {
        let schema = try CoreDataSchema.readMain(db)
        var changes: [Change] = []
        for table in schema.entityTables where schema.table(table, hasColumn: "Z_PK") {
            let members = schema.entities.filter { $0.table == table }
            guard !members.contains(where: { schema.unreadableMax.contains($0.number) }),
                let root = members.first(where: { $0.number == $0.rootNumber }) ?? members.first
            else { continue }
            let maxPK = try Int64.fetchOne(db, sql: "SELECT IFNULL(MAX(Z_PK), 0) FROM main.\(table.sqlIdentifier)") ?? 0
            let counter = members.map(\.max).max() ?? 0
            guard counter < maxPK else { continue }
            try db.execute(
                sql: "UPDATE main.Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", arguments: [maxPK, root.number])
            changes.append(Change(entity: root.name, from: counter, to: maxPK))
        }
        return changes.sorted { $0.entity < $1.entity }
    }

    /// `raise` on the staged store at `url`, in one transaction.
    static func raise(staged url: URL) throws -> [Change] {
        let queue = try StagedStore.open(url)
        defer { try? queue.close() }
        return try queue.write { db in try raise(db) }
    }
}
