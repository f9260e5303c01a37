import CDigest
import Foundation
import GRDB

/// SQL text helpers for names read from a store (identifiers are quoted by `String.sqlIdentifier`).
public enum SQLName {
    /// `value` as an SQL string literal: wrapped in `'`, each embedded `'` doubled.
    public static func literal(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// SQLite's type affinity of a declared column type (https://sqlite.org/datatype3.html §3.1),
    /// used to tell whether two columns of the same name can hold each other's values.
    public static func affinity(_ declared: String) -> String {
        let t = declared.uppercased()
        if t.contains("INT") { return "INTEGER" }
        if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") { return "TEXT" }
        if t.contains("BLOB") || t.trimmingCharacters(in: .whitespaces).isEmpty { return "BLOB" }
        if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }
}

/// Facts about a store's SQL schema that the migration needs beyond `CoreDataSchema`: uniqueness
/// constraints, secondary indexes, the entity columns of polymorphic to-one keys, attribute columns.
struct SchemaFacts {
    /// An index created by `CREATE [UNIQUE] INDEX` (not a primary key's automatic index).
    struct Index {
        let name: String
        let table: String
        let unique: Bool
        let columns: [String]
        let sql: String
    }

    /// Every explicitly created index, by table.
    let indexes: [String: [Index]]

    /// Reads the indexes of the tables in `schema` in the database `schemaName` (`main`, `src`).
    static func read(_ db: Database, schema: CoreDataSchema, schemaName: String = "main") throws -> SchemaFacts {
        var result: [String: [Index]] = [:]
        let master = "\(schemaName.sqlIdentifier).sqlite_master"
        let rows = try Row.fetchAll(
            db, sql: "SELECT name, tbl_name, sql FROM \(master) WHERE type = 'index' AND sql IS NOT NULL")
        for row in rows {
            guard let name = String.fromDatabaseValue(row["name"] as DatabaseValue),
                let table = String.fromDatabaseValue(row["tbl_name"] as DatabaseValue),
                let sql = String.fromDatabaseValue(row["sql"] as DatabaseValue)
            else { continue }
            let info = try Row.fetchAll(db, sql: "PRAGMA \(schemaName.sqlIdentifier).index_info(\(name.sqlIdentifier))")
            let columns = info.compactMap { String.fromDatabaseValue($0["name"] as DatabaseValue) }
            let unique = sql.uppercased().replacingOccurrences(of: "\n", with: " ").hasPrefix("CREATE UNIQUE")
            result[table, default: []].append(
                Index(name: name, table: table, unique: unique, columns: columns, sql: sql))
        }
        return SchemaFacts(indexes: result)
    }

    /// The column recording the target's `Z_ENT` for the to-one key `column` of `table`
    /// (`Z<n>_<REL>` beside `Z<REL>`, as Core Data names it), if there is one.
    static func entityColumn(for column: String, in table: String, schema: CoreDataSchema) -> String? {
        guard column.hasPrefix("Z") else { return nil }
        let rest = column.dropFirst()
        return (schema.tables[table] ?? []).map(\.name).first { name in
            guard name.hasPrefix("Z"), let underscore = name.firstIndex(of: "_") else { return false }
            let digits = name[name.index(after: name.startIndex)..<underscore]
            return !digits.isEmpty && digits.allSatisfy(\.isNumber) && name[name.index(after: underscore)...] == rest
        }
    }

    /// Columns with Core Data's key index (`<TABLE>_<COLUMN>_INDEX`), by table: keys whether or not
    /// the schema could tell where they point.
    static func indexedKeyColumns(_ db: Database, schema: CoreDataSchema, schemaName: String = "main") throws
        -> [String: Set<String>]
    {
        var result: [String: Set<String>] = [:]
        let rows = try Row.fetchAll(
            db, sql: "SELECT name, tbl_name FROM \(schemaName.sqlIdentifier).sqlite_master WHERE type = 'index'")
        for row in rows {
            guard let name = String.fromDatabaseValue(row["name"] as DatabaseValue),
                let table = String.fromDatabaseValue(row["tbl_name"] as DatabaseValue),
                name.hasPrefix(table + "_"), name.hasSuffix("_INDEX")
            else { continue }
            let column = String(name.dropFirst(table.count + 1).dropLast("_INDEX".count))
            guard column.hasPrefix("Z"), !column.hasPrefix("Z_"),
                (schema.tables[table] ?? []).contains(where: { $0.name == column })
            else { continue }
            result[table, default: []].insert(column)
        }
        return result
    }

    /// To-one keys the schema could not resolve (no readable model cache, or a column name with a
    /// numeric suffix), resolved where the store itself says: the entity column `Z<n>_<REL>` beside
    /// a polymorphic key names the destination entity `n`; otherwise the one entity whose name ends
    /// with the relationship's (or the reverse), accepted only when every non-NULL value of the
    /// column is a row of that entity. Anything else stays unresolved (and a merge refuses it).
    static func inferredKeys(_ db: Database, schema: CoreDataSchema, schemaName: String = "main") throws
        -> [CoreDataSchema.ToOneKey]
    {
        let known = Set(schema.toOneKeys.map { "\($0.table).\($0.column)" })
        var keys: [CoreDataSchema.ToOneKey] = []
        let prefix = schemaName.sqlIdentifier
        for (table, columns) in try indexedKeyColumns(db, schema: schema, schemaName: schemaName) {
            for column in columns.sorted() where !known.contains("\(table).\(column)") {
                var candidates: [CoreDataSchema.Entity] = []
                var rel = String(column.dropFirst())
                while rel.last?.isNumber == true { rel.removeLast() }
                // The model's to-one relationships of that name in this table's hierarchy (a suffixed
                // column is one of several same-named relationships of sibling entities): resolved
                // when all their destinations share one table, which is all a key move needs.
                let hierarchy = Set(schema.entities.filter { $0.table == table }.map(\.name))
                let destinations = (schema.model?.entities ?? []).filter { hierarchy.contains($0.name) }
                    .flatMap(\.relationships).filter { !$0.isToMany && $0.name.uppercased() == rel }
                    .compactMap { relationship in schema.userEntities.first { $0.name == relationship.destination } }
                if let first = destinations.first, Set(destinations.compactMap(\.table)).count == 1 {
                    let root = schema.entity(first.rootNumber) ?? first
                    candidates = [root]
                } else if let entityColumn = entityColumn(for: column, in: table, schema: schema) {
                    let digits = entityColumn.dropFirst().prefix { $0.isNumber }
                    if let n = Int(digits), let entity = schema.entity(n) { candidates = [entity] }
                } else {
                    guard !rel.isEmpty else { continue }
                    let matches = schema.userEntities.filter { entity in
                        let name = entity.name.uppercased()
                        return entity.table != nil && (name.hasSuffix(rel) || rel.hasSuffix(name))
                    }
                    let best = matches.map { $0.name.count }.max()
                    candidates = matches.filter { $0.name.count == best }
                }
                guard candidates.count == 1, let target = candidates.first, let targetTable = target.table else {
                    continue
                }
                let entities = schema.subtree(of: target.number)
                let c = column.sqlIdentifier
                let dangling =
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT COUNT(*) FROM \(prefix).\(table.sqlIdentifier) s WHERE s.\(c) IS NOT NULL AND NOT EXISTS (
                              SELECT 1 FROM \(prefix).\(targetTable.sqlIdentifier) d WHERE d.Z_PK = s.\(c) AND d.Z_ENT IN (\(entities.map(String.init).joined(separator: ","))))
                            """) ?? 0
                guard dangling == 0 else { continue }
                keys.append(
                    CoreDataSchema.ToOneKey(
                        table: table, column: column, relationship: nil, destinationTable: targetTable,
                        destinationEntities: entities))
            }
        }
        return keys.sorted { ($0.table, $0.column) < ($1.table, $1.column) }
    }

    /// Columns of `table` that hold no key: what a content digest covers.
    static func attributeColumns(_ table: String, schema: CoreDataSchema, indexedKeys: Set<String> = []) -> [String] {
        let keys = schema.toOneKeys.filter { $0.table == table }
        var excluded = Set(["Z_PK", "Z_ENT", "Z_OPT"]).union(indexedKeys)
        for key in keys {
            excluded.insert(key.column)
            if let entity = entityColumn(for: key.column, in: table, schema: schema) { excluded.insert(entity) }
        }
        return (schema.tables[table] ?? []).map(\.name).filter { name in
            !excluded.contains(name) && !name.hasPrefix("Z_FOK_")
                && !isEntityColumnName(name, in: table, schema: schema)
        }
    }

    /// True for `Z<digits>_<REL>` when `Z<REL>` is a column of the same table.
    static func isEntityColumnName(_ name: String, in table: String, schema: CoreDataSchema) -> Bool {
        guard name.hasPrefix("Z"), let underscore = name.firstIndex(of: "_") else { return false }
        let digits = name[name.index(after: name.startIndex)..<underscore]
        guard !digits.isEmpty, digits.allSatisfy(\.isNumber) else { return false }
        let key = "Z" + name[name.index(after: underscore)...]
        return (schema.tables[table] ?? []).contains { $0.name == key }
    }
}

extension SchemaFacts {
    /// Values longer than this (BLOB or TEXT) are compared by `usm_valueid`, never sorted whole.
    static let largeValue = 1 << 20

    /// The two expressions object identity orders a column's value by: a flag saying whether the
    /// value is large (a BLOB over `largeValue` bytes; `typeof()` and `length()` of a BLOB do not
    /// read it), and the value itself or, when large, the SHA-256 of its bytes read in pieces. Two
    /// values are the same exactly when both expressions are (up to SHA-256 collisions), so the
    /// classes do not change; a row holding hundreds of megabytes costs no more memory than any other.
    /// Registers `usm_valueid` (and the digest functions) on `db`, which `identityValue` calls.
    static func registerValueFunctions(_ db: Database) throws {
        guard let connection = db.sqliteConnection else { return }
        let rc = usm_register_digest(UnsafeMutableRawPointer(connection))
        guard rc == 0 else {
            throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "cannot register usm_valueid")
        }
    }

    /// `read`: the expression that reads the column (its name by default), `rowid`: the row's
    /// rowid as the statement sees it (for `usm_valueid`, which reads a large value in pieces).
    /// The flag is 1 or NULL: a `CASE` stops at `typeof` for a value that is no BLOB, where `AND`
    /// would take `length` of every value too (twice the time on a narrow table).
    static func identityValue(
        database: String, table: String, column: String, read: String? = nil, rowid: String = "_rowid_"
    ) -> (large: String, value: String) {
        let c = read ?? column.sqlIdentifier
        let literal = { (s: String) in "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }
        let isLarge = "typeof(\(c)) = 'blob' AND length(\(c)) > \(largeValue)"
        let value =
            "CASE WHEN \(isLarge) THEN usm_valueid(\(literal(database)), \(literal(table)), \(literal(column)), \(rowid)) ELSE \(c) END"
        return ("CASE WHEN \(isLarge) THEN 1 END", value)
    }
}

extension CoreDataSchema {
    /// Reads the Core Data structure of the store at `url` through a read-only connection;
    /// `model` (`--model`) says where relationships point when the store holds no model cache.
    /// - Throws: `USMError.notCoreData` when `Z_PRIMARYKEY` or `Z_METADATA` is missing.
    public static func load(from url: URL, model: ManagedObjectModel? = nil) throws -> CoreDataSchema {
        var config = Configuration()
        config.readonly = true
        config.label = "usm-repair.schema"
        UntrustedDatabase.configure(&config, bytes: UntrustedDatabase.storeBytes(url.path))
        let queue = try DatabaseQueue(path: url.path, configuration: config)
        defer { try? queue.close() }
        return try queue.read { db in
            let tables = Set(try String.fetchAll(db, sql: "SELECT upper(name) FROM sqlite_master WHERE type = 'table'"))
            let missing = ["Z_PRIMARYKEY", "Z_METADATA"].filter { !tables.contains($0) }
            guard missing.isEmpty else { throw USMError.notCoreData(path: url.path, missing: missing) }
            return try CoreDataSchema.read(db, model: model)
        }
    }

    /// Reads the schema of an open database (main).
    static func readMain(_ db: Database) throws -> CoreDataSchema { try read(db) }

    /// The user (non-system) entities.
    public var userEntities: [Entity] { entities.filter { !$0.isSystem } }

    /// Tables holding system entities (persistent history, CloudKit mirroring).
    public var systemTables: [String] { Array(Set(entities.filter(\.isSystem).compactMap(\.table))).sorted() }
}
