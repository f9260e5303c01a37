import Foundation
import GRDB

/// The bookkeeping tables Core Data's iOS 7+ ubiquity engine keeps in a ubiquity copy (issue 32,
/// read from two public real files: `UserDictionary.db` in cfe84/substitutions-sync and
/// rljacobson/PillowData's export): `Y_UBMETA` (which peer sent how many transactions),
/// `Y_UBRANGE` (peers' key ranges mapped to local ones, per entity) and `Y_UBKVS` (keys such as
/// `com.apple.coredata.ubiquity.localImportComplete`). They belong in a cloud copy; a local store
/// must not carry them (UbiquityStoreManager's migration with
/// `NSPersistentStoreRemoveUbiquitousMetadataOption` writes a store without them).
public enum UbiquityTables {
    /// One such table.
    public struct Table: Sendable, Equatable, Codable {
        public let name: String
        public let rows: Int
    }

    /// True for a table name of that family (`Y_UB` prefix, any case).
    public static func isUbiquityTable(_ name: String) -> Bool {
        name.uppercased().hasPrefix("Y_UB")
    }

    /// The family's tables in `db`'s main schema, by name.
    static func names(_ db: Database) throws -> [String] {
        try BoundedRead.texts(db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' ORDER BY name")
            .filter(isUbiquityTable)
    }

    /// Drops the family's tables (their indexes go with them) and says what each held.
    static func drop(_ db: Database) throws -> [Table] {
        var dropped: [Table] = []
        for name in try names(db) {
            let rows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.\(name.sqlIdentifier)") ?? 0
            try db.execute(sql: "DROP TABLE main.\(name.sqlIdentifier)")
            dropped.append(Table(name: name, rows: rows))
        }
        return dropped
    }
}
