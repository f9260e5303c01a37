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
    /// Where the to-one keys came from: `model-cache`, `model` (`--model`), `schema` (index naming), or `none`.
    public let relationshipSource: String
    /// The decoded model, when the store holds a readable model cache.
    public let model: ManagedObjectModel?
    /// What reading found wrong in the bookkeeping itself: values of the wrong type, `Z_SUPER`
    /// cycles and unknown parents, a model cache too large to decode.
    public let problems: [Problem]
    /// Entities whose `Z_MAX` is not an integer: their `max` reads 0 but is unknown.
    public let unreadableMax: Set<Int>

    /// Sub-entities as linked lists over positions in `entities` (-1 ends a list): compact where a
    /// dictionary of arrays would cost an allocation per parent.
    private let firstChild: [Int32]
    private let nextSibling: [Int32]
    /// Entity numbers by the table holding their rows.
    private let members: [String: [Int]]

    /// The entity with number `n`.
    public func entity(_ n: Int) -> Entity? { EntityRows.position(of: n, in: entities).map { entities[$0] } }

    /// Numbers of the entities whose rows live in `table` (a hierarchy shares its root's table).
    public func entityNumbers(inTable table: String) -> [Int] { members[table] ?? [] }

    /// True when `table` has a column called `column` (exactly).
    public func table(_ table: String, hasColumn column: String) -> Bool {
        tables[table]?.contains { $0.name == column } ?? false
    }

    /// Numbers of the entity `n` and all entities below it, each `Z_SUPER` link followed once.
    public func subtree(of n: Int) -> [Int] {
        guard let start = EntityRows.position(of: n, in: entities) else { return [n] }
        var result = [n]
        var seen: Set<Int> = [start]
        var frontier = [start]
        while let next = frontier.popLast() {
            var child = Int(firstChild[next])
            while child >= 0 {
                if seen.insert(child).inserted {
                    result.append(entities[child].number)
                    frontier.append(child)
                }
                child = Int(nextSibling[child])
            }
        }
        return result.sorted()
    }

    init(
        entities: [Entity], tables: [String: [(name: String, type: String)]], joinTables: [JoinTable],
        historyTables: [String], cloudKitTables: [String], orderedColumns: [String], toOneKeys: [ToOneKey],
        relationshipSource: String, model: ManagedObjectModel?, problems: [Problem], unreadableMax: Set<Int>
    ) {
        self.entities = entities
        self.tables = tables
        self.joinTables = joinTables
        self.historyTables = historyTables
        self.cloudKitTables = cloudKitTables
        self.orderedColumns = orderedColumns
        self.toOneKeys = toOneKeys
        self.relationshipSource = relationshipSource
        self.model = model
        self.problems = problems
        self.unreadableMax = unreadableMax
        var firstChild = [Int32](repeating: -1, count: entities.count)
        var nextSibling = [Int32](repeating: -1, count: entities.count)
        var members: [String: [Int]] = [:]
        for (i, entity) in entities.enumerated().reversed() {
            if entity.superNumber != 0, entity.superNumber != entity.number,
                let parent = EntityRows.position(of: entity.superNumber, in: entities)
            {
                nextSibling[i] = firstChild[parent]
                firstChild[parent] = Int32(i)
            }
            if let table = entity.table { members[table, default: []].append(entity.number) }
        }
        for table in members.keys { members[table]?.reverse() }
        self.firstChild = firstChild
        self.nextSibling = nextSibling
        self.members = members
        entityTables = members.keys.sorted()
    }

    /// Reads the schema of an open store. The caller has checked that `Z_PRIMARYKEY` exists.
    /// - Parameters:
    ///   - entityLimit: the most `Z_PRIMARYKEY` rows read (see `EntityRows.rowLimit`).
    ///   - fallback: the app's model (`--model`), for a store whose model cache is absent or
    ///     unreadable (its own cache, the store's exact model, wins when there is one).
    static func read(_ db: Database, entityLimit: Int = EntityRows.rowLimit, model fallback: ManagedObjectModel? = nil)
        throws -> CoreDataSchema
    {
        var tables: [String: [(name: String, type: String)]] = [:]
        let tableNames = try BoundedRead.texts(
            db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        for table in tableNames {
            let rows = try Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_info(?)", arguments: [table])
            tables[table] = rows.compactMap { row in
                guard let name = String.fromDatabaseValue(row[0] as DatabaseValue) else { return nil }
                return (name: name, type: String.fromDatabaseValue(row[1] as DatabaseValue) ?? "")
            }
        }
        let upperToTable = Dictionary(tableNames.map { ($0.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })

        var rows = try EntityRows.read(db, limit: entityLimit)
        var raw = rows.entities
        rows.entities = []
        var problems = rows.problems
        for i in raw.indices {
            let root = raw[EntityRows.position(of: raw[i].rootNumber, in: raw) ?? i]
            let prefix = root.isSystem ? "A" : "Z"
            raw[i].table = upperToTable[prefix + root.name.uppercased()]
        }

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
            return JoinTable(
                name: name, columns: keys, orderColumns: columns.map(\.name).filter { $0.hasPrefix("Z_FOK_") })
        }
        var systemTables: Set<String> = []
        for entity in raw where entity.isSystem { if let table = entity.table { systemTables.insert(table) } }
        let historyTables = tableNames.filter { systemTables.contains($0) && !$0.hasPrefix("ANSCK") }
        let cloudKitTables = tableNames.filter { $0.hasPrefix("ANSCK") }
        var ordered: [String] = []
        for table in tableNames {
            for column in tables[table] ?? [] where column.name.hasPrefix("Z_FOK_") {
                ordered.append("\(table).\(column.name)")
            }
        }

        var model: ManagedObjectModel?
        if let cache = upperToTable["Z_MODELCACHE"] {
            switch ManagedObjectModel.read(db, table: cache) {
            case let .model(decoded): model = decoded
            case let .tooLarge(bytes):
                let size = bytes.map { "holds \($0) bytes, more" } ?? "inflates to more"
                problems.append(
                    Problem(
                        .modelCacheTooLarge,
                        "Z_MODELCACHE.Z_CONTENT \(size) than the \(ManagedObjectModel.inflatedLimit >> 20) MiB a model needs: not decoded; relationships are taken from the index names instead",
                        subject: "Z_MODELCACHE.Z_CONTENT", count: bytes.flatMap { Int(exactly: $0) }))
            case .absent, .unreadable: break
            }
        }

        var modelSource = "model-cache"
        if model == nil, let fallback {
            model = fallback
            modelSource = "model"
        }
        let partial = CoreDataSchema(
            entities: raw, tables: tables, joinTables: joinTables, historyTables: historyTables,
            cloudKitTables: cloudKitTables,
            orderedColumns: ordered, toOneKeys: [], relationshipSource: "none", model: model, problems: problems,
            unreadableMax: rows.unreadableMax)
        let indexes = try Row.fetchAll(db, sql: "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'")
            .compactMap { row in
                String.fromDatabaseValue(row[0] as DatabaseValue).flatMap { name in
                    String.fromDatabaseValue(row[1] as DatabaseValue).map { (name: name, table: $0) }
                }
            }
        let (keys, found) = partial.findToOneKeys(indexes: indexes)
        let source = found == "model-cache" ? modelSource : found
        return CoreDataSchema(
            entities: raw, tables: tables, joinTables: joinTables, historyTables: historyTables,
            cloudKitTables: cloudKitTables,
            orderedColumns: ordered, toOneKeys: keys, relationshipSource: source, model: model, problems: problems,
            unreadableMax: rows.unreadableMax)
    }

    /// To-one keys from the model when there is one; otherwise from Core Data's index naming
    /// (`<TABLE>_<COLUMN>_INDEX`) with the destination taken from the column name when it names
    /// exactly one entity. Columns whose destination cannot be told are left out, not guessed.
    private func findToOneKeys(indexes: [(name: String, table: String)]) -> ([ToOneKey], String) {
        var keys: [ToOneKey] = []
        var seen: Set<String> = []
        if let model {
            var byName: [String: Entity] = [:]
            for entity in entities where byName[entity.name] == nil { byName[entity.name] = entity }
            for entity in model.entities {
                guard let source = byName[entity.name], let table = source.table else { continue }
                for relationship in entity.relationships where !relationship.isToMany {
                    guard let destination = byName[relationship.destination],
                        let destinationTable = destination.table,
                        let column = column(in: table, named: "Z" + relationship.name.uppercased())
                    else { continue }
                    guard seen.insert("\(table).\(column)").inserted else { continue }
                    keys.append(
                        ToOneKey(
                            table: table, column: column, relationship: relationship.name,
                            destinationTable: destinationTable, destinationEntities: subtree(of: destination.number)))
                }
            }
            return (keys.sorted { ($0.table, $0.column) < ($1.table, $1.column) }, "model-cache")
        }
        var byUpperName: [String: [Entity]] = [:]
        for entity in entities where !entity.isSystem {
            byUpperName[entity.name.uppercased(), default: []].append(entity)
        }
        let entityTableSet = Set(entityTables)
        for index in indexes {
            guard entityTableSet.contains(index.table), index.name.hasPrefix(index.table + "_"),
                index.name.hasSuffix("_INDEX")
            else { continue }
            let column = String(index.name.dropFirst(index.table.count + 1).dropLast("_INDEX".count))
            guard column.hasPrefix("Z"), !column.hasPrefix("Z_"), self.column(in: index.table, named: column) != nil
            else { continue }
            let relName = String(column.dropFirst())
            let candidates = byUpperName[relName] ?? []
            guard candidates.count == 1, let destination = candidates.first, let destinationTable = destination.table,
                seen.insert("\(index.table).\(column)").inserted
            else { continue }
            keys.append(
                ToOneKey(
                    table: index.table, column: column, relationship: nil,
                    destinationTable: destinationTable, destinationEntities: subtree(of: destination.number)))
        }
        return (keys.sorted { ($0.table, $0.column) < ($1.table, $1.column) }, keys.isEmpty ? "none" : "schema")
    }

    private func column(in table: String, named name: String) -> String? {
        tables[table]?.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.name
    }
}
