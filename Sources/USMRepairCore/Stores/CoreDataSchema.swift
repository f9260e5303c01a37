import Foundation
import GRDB

/// The Core Data structure of one store, read from `Z_PRIMARYKEY`, `sqlite_master` and, when
/// present and readable, the model in `Z_MODELCACHE`. Names are never inferred when the schema
/// can say: tables and columns are found by looking.
public struct CoreDataSchema: Sendable {
    /// One row of `Z_PRIMARYKEY`.
    public struct Entity: Sendable, Equatable {
        /// `Z_ENT`.
        public let number: Int
        /// `Z_NAME`.
        public let name: String
        /// `Z_SUPER` (0 for a root).
        public let superNumber: Int
        /// `Z_MAX`.
        public let max: Int64
        /// The table holding this entity's rows (its root's table); nil when there is none.
        public var table: String?
        /// The root entity's number.
        public var rootNumber: Int
        /// True for Core Data's own entities (history tracking etc., numbered from 16000).
        public var isSystem: Bool { number >= 16000 }
    }

    /// A to-one foreign key column.
    public struct ToOneKey: Sendable, Equatable {
        /// The table holding the column.
        public let table: String
        /// The column (`Z` + relationship name in upper case).
        public let column: String
        /// The relationship name, when the model names it.
        public let relationship: String?
        /// The destination's root table.
        public let destinationTable: String
        /// The entity numbers a target row may have (the destination and its sub-entities).
        public let destinationEntities: [Int]
    }

    /// A many-to-many join table `Z_<n><NAME>`.
    public struct JoinTable: Sendable, Equatable {
        /// Table name.
        public let name: String
        /// Each key column with the entity number whose primary key it holds.
        public let columns: [(column: String, entity: Int)]
        /// The `Z_FOK_` ordering columns.
        public let orderColumns: [String]

        public static func == (lhs: JoinTable, rhs: JoinTable) -> Bool {
            lhs.name == rhs.name && lhs.orderColumns == rhs.orderColumns
                && lhs.columns.map(\.column) == rhs.columns.map(\.column)
                && lhs.columns.map(\.entity) == rhs.columns.map(\.entity)
        }
    }

    /// Every row of `Z_PRIMARYKEY`, by entity number.
    public let entities: [Entity]
    /// Every table in the database with its column names and declared types.
    public let tables: [String: [(name: String, type: String)]]
    /// Entity tables (hierarchy roots that have a table).
    public let entityTables: [String]
    /// Many-to-many join tables.
    public let joinTables: [JoinTable]
    /// Persistent-history tables (`ACHANGE`, `ATRANSACTION`, ...).
    public let historyTables: [String]
    /// CloudKit mirroring tables (`ANSCK...`).
    public let cloudKitTables: [String]
    /// Ordered-relationship columns as `TABLE.Z_FOK_...`.
    public let orderedColumns: [String]
    /// To-one foreign keys.
    public let toOneKeys: [ToOneKey]
    /// Where the to-one keys came from: `model-cache`, `schema` (index naming), or `none`.
    public let relationshipSource: String
    /// The decoded model, when the store holds a readable model cache.
    public let model: ManagedObjectModel?

    /// The entity with number `n`.
    public func entity(_ n: Int) -> Entity? { entities.first { $0.number == n } }

    /// Numbers of the entity `n` and all entities below it.
    public func subtree(of n: Int) -> [Int] {
        var result = [n]
        var frontier = [n]
        while let next = frontier.popLast() {
            for child in entities where child.superNumber == next && child.number != next && !result.contains(child.number) {
                result.append(child.number)
                frontier.append(child.number)
            }
        }
        return result.sorted()
    }

    /// Reads the schema of an open store. The caller has checked that `Z_PRIMARYKEY` exists.
    static func read(_ db: Database) throws -> CoreDataSchema {
        var tables: [String: [(name: String, type: String)]] = [:]
        let tableNames = try String.fetchAll(
            db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        for table in tableNames {
            let rows = try Row.fetchAll(db, sql: "PRAGMA table_info(\(table.quotedDatabaseIdentifier))")
            tables[table] = rows.map { (name: $0["name"] as String, type: ($0["type"] as String?) ?? "") }
        }
        let upperToTable = Dictionary(tableNames.map { ($0.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })

        var raw: [Entity] = []
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") {
            guard let number = row["Z_ENT"] as Int?, let name = row["Z_NAME"] as String? else { continue }
            raw.append(Entity(
                number: number, name: name, superNumber: (row["Z_SUPER"] as Int?) ?? 0,
                max: (row["Z_MAX"] as Int64?) ?? 0, table: nil, rootNumber: number))
        }
        let byNumber = Dictionary(raw.map { ($0.number, $0) }, uniquingKeysWith: { a, _ in a })
        for i in raw.indices {
            var root = raw[i]
            var seen: Set<Int> = [root.number]
            while root.superNumber != 0, let parent = byNumber[root.superNumber], seen.insert(parent.number).inserted {
                root = parent
            }
            raw[i].rootNumber = root.number
            let prefix = root.isSystem ? "A" : "Z"
            raw[i].table = upperToTable[prefix + root.name.uppercased()]
        }
        let entityTables = Set(raw.compactMap(\.table)).sorted()

        let joinTables = tableNames.compactMap { name -> JoinTable? in
            guard name.hasPrefix("Z_"), let third = name.dropFirst(2).first, third.isNumber,
                  !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(name)
            else { return nil }
            let columns = tables[name] ?? []
            let keys: [(column: String, entity: Int)] = columns.compactMap { column in
                guard column.name.hasPrefix("Z_"), !column.name.hasPrefix("Z_FOK_") else { return nil }
                let digits = column.name.dropFirst(2).prefix { $0.isNumber }
                guard let n = Int(digits) else { return nil }
                return (column.name, n)
            }
            return JoinTable(name: name, columns: keys, orderColumns: columns.map(\.name).filter { $0.hasPrefix("Z_FOK_") })
        }
        let systemTables = Set(raw.filter(\.isSystem).compactMap(\.table))
        let historyTables = tableNames.filter { systemTables.contains($0) && !$0.hasPrefix("ANSCK") }
        let cloudKitTables = tableNames.filter { $0.hasPrefix("ANSCK") }
        var ordered: [String] = []
        for table in tableNames {
            for column in tables[table] ?? [] where column.name.hasPrefix("Z_FOK_") {
                ordered.append("\(table).\(column.name)")
            }
        }

        var model: ManagedObjectModel?
        if upperToTable["Z_MODELCACHE"] != nil,
           let blob = try? Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1") {
            model = ManagedObjectModel.decodeModelCache(blob)
        }

        let partial = CoreDataSchema(
            entities: raw, tables: tables, entityTables: entityTables, joinTables: joinTables,
            historyTables: historyTables, cloudKitTables: cloudKitTables, orderedColumns: ordered,
            toOneKeys: [], relationshipSource: "none", model: model)
        let indexes = try Row.fetchAll(db, sql: "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'")
            .map { (name: $0["name"] as String, table: $0["tbl_name"] as String) }
        let (keys, source) = partial.findToOneKeys(indexes: indexes)
        return CoreDataSchema(
            entities: raw, tables: tables, entityTables: entityTables, joinTables: joinTables,
            historyTables: historyTables, cloudKitTables: cloudKitTables, orderedColumns: ordered,
            toOneKeys: keys, relationshipSource: source, model: model)
    }

    /// To-one keys from the model when there is one; otherwise from Core Data's index naming
    /// (`<TABLE>_<COLUMN>_INDEX`) with the destination taken from the column name when it names
    /// exactly one entity. Columns whose destination cannot be told are left out, not guessed.
    private func findToOneKeys(indexes: [(name: String, table: String)]) -> ([ToOneKey], String) {
        var keys: [ToOneKey] = []
        var seen: Set<String> = []
        if let model {
            for entity in model.entities {
                guard let source = entities.first(where: { $0.name == entity.name }), let table = source.table else { continue }
                for relationship in entity.relationships where !relationship.isToMany {
                    guard let destination = entities.first(where: { $0.name == relationship.destination }),
                          let destinationTable = destination.table,
                          let column = column(in: table, named: "Z" + relationship.name.uppercased())
                    else { continue }
                    guard seen.insert("\(table).\(column)").inserted else { continue }
                    keys.append(ToOneKey(
                        table: table, column: column, relationship: relationship.name,
                        destinationTable: destinationTable, destinationEntities: subtree(of: destination.number)))
                }
            }
            return (keys.sorted { ($0.table, $0.column) < ($1.table, $1.column) }, "model-cache")
        }
        for index in indexes {
            guard entityTables.contains(index.table), index.name.hasPrefix(index.table + "_"), index.name.hasSuffix("_INDEX")
            else { continue }
            let column = String(index.name.dropFirst(index.table.count + 1).dropLast("_INDEX".count))
            guard column.hasPrefix("Z"), !column.hasPrefix("Z_"), self.column(in: index.table, named: column) != nil else { continue }
            let relName = String(column.dropFirst())
            let candidates = entities.filter { !$0.isSystem && $0.name.uppercased() == relName }
            guard candidates.count == 1, let destination = candidates.first, let destinationTable = destination.table,
                  seen.insert("\(index.table).\(column)").inserted
            else { continue }
            keys.append(ToOneKey(
                table: index.table, column: column, relationship: nil,
                destinationTable: destinationTable, destinationEntities: subtree(of: destination.number)))
        }
        return (keys.sorted { ($0.table, $0.column) < ($1.table, $1.column) }, keys.isEmpty ? "none" : "schema")
    }

    private func column(in table: String, named name: String) -> String? {
        tables[table]?.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.name
    }
}
