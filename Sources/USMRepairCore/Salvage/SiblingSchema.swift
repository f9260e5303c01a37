import Foundation
import GRDB

/// A healthy store of the same model (`--schema-from`): where salvage takes the tables, the
/// `Z_PRIMARYKEY` entities and the metadata a damaged store lost. It is read like a migration's
/// source: through a private, consistent copy, refused when it is itself damaged.
struct SiblingSchema: Sendable {
    /// The sibling's main file.
    let path: String
    /// Its `sqlite_schema` rows (root pages are the sibling's own and never used).
    let rows: [SchemaRow]
    /// Its `Z_PRIMARYKEY` rows.
    let entities: [Entity]
    /// `Z_METADATA.Z_PLIST`.
    let plist: Data?
    /// `Z_MODELCACHE.Z_CONTENT`.
    let modelCache: Data?

    /// One `Z_PRIMARYKEY` row.
    struct Entity: Sendable, Equatable {
        let number: Int
        let name: String
        let superNumber: Int
    }

    /// Reads `files` through a private copy in `scratch`.
    /// - Throws: `notFound`, `sourceDamaged` (the sibling must be healthy), `notCoreData`...
    static func read(_ files: StoreFileSet, scratch: URL) throws -> SiblingSchema {
        guard FileStatus.lookup(files.main.path) != nil else {
            throw USMError.notFound(path: files.main.path, what: "--schema-from store")
        }
        let captured = try MigrationEngine.capture(files, into: scratch, role: "schema-from")
        let queue = try StagedStore.open(captured.copy, readonly: true)
        defer { try? queue.close() }
        return try queue.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid")
                .compactMap { row -> SchemaRow? in
                    guard let type = String.fromDatabaseValue(row[0] as DatabaseValue),
                        let name = String.fromDatabaseValue(row[1] as DatabaseValue),
                        let table = String.fromDatabaseValue(row[2] as DatabaseValue)
                    else { return nil }
                    return SchemaRow(
                        type: type, name: name, tableName: table, rootPage: 0,
                        sql: String.fromDatabaseValue(row[3] as DatabaseValue))
                }
            let entities = try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY").compactMap {
                row -> Entity? in
                guard let number = Int.fromDatabaseValue(row[0] as DatabaseValue),
                    let name = String.fromDatabaseValue(row[1] as DatabaseValue)
                else { return nil }
                return Entity(
                    number: number, name: name, superNumber: Int.fromDatabaseValue(row[2] as DatabaseValue) ?? 0)
            }
            let hasCache = rows.contains { $0.type == "table" && $0.name.uppercased() == "Z_MODELCACHE" }
            let cache = hasCache ? try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1") : nil
            return SiblingSchema(
                path: files.main.path, rows: rows, entities: entities, plist: captured.plist, modelCache: cache)
        }
    }
}
