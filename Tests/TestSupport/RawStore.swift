import Foundation
import GRDB

/// Stores written from raw SQL, for shapes `FixtureStore` cannot make: hostile bookkeeping values,
/// deep or cyclic entity hierarchies, odd names. Rollback-journal mode, so the store is one file.
public enum RawStore {
    /// The bookkeeping tables every Core Data store has, empty.
    public static let bookkeeping = """
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
        CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
        INSERT INTO Z_METADATA VALUES (1, '6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D', NULL);
        """

    /// Writes a store at `url` from `sql` (run after `bookkeeping` when `withBookkeeping`), then
    /// lets `fill` add rows in the same transaction.
    public static func write(
        to url: URL, withBookkeeping: Bool = true, _ sql: String, fill: ((Database) throws -> Void)? = nil
    ) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            if withBookkeeping { try db.execute(sql: bookkeeping) }
            try db.execute(sql: sql)
            try fill?(db)
        }
        try queue.close()
    }
}
