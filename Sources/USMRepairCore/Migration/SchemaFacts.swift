import Foundation
import GRDB

/// SQL text helpers for names read from a store: every identifier is quoted, embedded quotes doubled.
public enum SQLName {
    /// `name` as an SQL identifier: wrapped in `"`, each embedded `"` doubled.
    public static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

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
        let master = "\(SQLName.quote(schemaName)).sqlite_master"
        let rows = try Row.fetchAll(db, sql: "SELECT name, tbl_name, sql FROM \(master) WHERE type = 'index' AND sql IS NOT NULL")
        for row in rows {
            guard let name = String.fromDatabaseValue(row["name"] as DatabaseValue),
                  let table = String.fromDatabaseValue(row["tbl_name"] as DatabaseValue),
                  let sql = String.fromDatabaseValue(row["sql"] as DatabaseValue)
            else { continue }
            let info = try Row.fetchAll(db, sql: "PRAGMA \(SQLName.quote(schemaName)).index_info(\(SQLName.quote(name)))")
            let columns = info.compactMap { String.fromDatabaseValue($0["name"] as DatabaseValue) }
            let unique = sql.uppercased().replacingOccurrences(of: "\n", with: " ").hasPrefix("CREATE UNIQUE")
            result[table, default: []].append(Index(name: name, table: table, unique: unique, columns: columns, sql: sql))
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

    /// Columns of `table` that hold no key: what a content digest covers.
    static func attributeColumns(_ table: String, schema: CoreDataSchema) -> [String] {
        let keys = schema.toOneKeys.filter { $0.table == table }
        var excluded: Set<String> = ["Z_PK", "Z_ENT", "Z_OPT"]
        for key in keys {
            excluded.insert(key.column)
            if let entity = entityColumn(for: key.column, in: table, schema: schema) { excluded.insert(entity) }
        }
        return (schema.tables[table] ?? []).map(\.name).filter { name in
            !excluded.contains(name) && !name.hasPrefix("Z_FOK_") && !isEntityColumnName(name, in: table, schema: schema)
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

extension CoreDataSchema {
    /// Reads the Core Data structure of the store at `url` through a read-only connection.
    /// - Throws: `USMError.notCoreData` when `Z_PRIMARYKEY` or `Z_METADATA` is missing.
    public static func load(from url: URL) throws -> CoreDataSchema {
        var config = Configuration()
        config.readonly = true
        config.label = "usm-repair.schema"
        let queue = try DatabaseQueue(path: url.path, configuration: config)
        defer { try? queue.close() }
        return try queue.read { db in
            let tables = Set(try String.fetchAll(db, sql: "SELECT upper(name) FROM sqlite_master WHERE type = 'table'"))
            let missing = ["Z_PRIMARYKEY", "Z_METADATA"].filter { !tables.contains($0) }
            guard missing.isEmpty else { throw USMError.notCoreData(path: url.path, missing: missing) }
            return try CoreDataSchema.read(db)
        }
    }

    /// Reads the schema of an open database (main).
    static func readMain(_ db: Database) throws -> CoreDataSchema { try read(db) }

    /// The user (non-system) entities.
    public var userEntities: [Entity] { entities.filter { !$0.isSystem } }

    /// Tables holding system entities (persistent history, CloudKit mirroring).
    public var systemTables: [String] { Array(Set(entities.filter(\.isSystem).compactMap(\.table))).sorted() }
}
