import Crypto
import Foundation
import GRDB

/// Writes stand-ins for a store that carry no personal data, for `archive --redact` and
/// `archive --metadata-only`. Both work on a fresh SQLite copy (`VACUUM INTO` from the captured
/// store), so the user's files are never opened for writing and no old value survives in a free page.
struct Redactor: Sendable {
    /// The key of the keyed hash: random per bundle and never stored, so values cannot be
    /// confirmed by hashing guesses, yet equal values stay equal within the bundle.
    let keyBytes: Data

    /// A redactor with a fresh random key.
    init() { keyBytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) } }

    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// What `--redact` did to one store.
    struct Result {
        let tables: [BundleRedaction.RedactedTable]
        let values: Int
    }

    /// The tables of structure, kept as they are (upper-cased).
    static let keptTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    static let method = """
        Every TEXT and BLOB value in every table of the store (entity, join, history and CloudKit \
        tables, and any table Core Data does not list, such as a removed entity's) was \
        replaced by HMAC-SHA256 under a random key made for this bundle and not stored: text by \
        "redacted:" and 32 hex digits, blobs by the 32-byte digest. Equal values stay equal, so \
        unique constraints, keys and relationships hold; integers, reals, Z_PK, Z_ENT, Z_OPT, \
        foreign keys, Z_PRIMARYKEY, Z_METADATA and Z_MODELCACHE are kept. External-data references \
        (0x02 + UUID) are kept and each external file's content is replaced by the digest of it. \
        The store was rewritten with VACUUM (secure_delete on) in rollback-journal mode, so no old \
        value remains in it and it needs no -wal.
        """

    /// Writes a redacted copy of the store open at `source` to `destination`.
    func redact(source: URL, to destination: URL) throws -> Result {
        try StoreRewrite.vacuumInto(source: source, to: destination)
        let queue = try StoreRewrite.openCopy(destination)
        defer { try? queue.close() }
        let keyBytes = self.keyBytes
        let function = DatabaseFunction("usm_redact", argumentCount: 1, pure: true) { values in
            Redactor.redactValue(values[0], key: SymmetricKey(data: keyBytes))
        }
        var tables: [BundleRedaction.RedactedTable] = []
        var total = 0
        try queue.writeWithoutTransaction { db in
            db.add(function: function)
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.inTransaction {
                let triggers = try StoreRewrite.dropTriggers(db, path: destination.path)
                let schema = try CoreDataSchema.read(db)
                // Every table that can hold a value: Core Data's, then any other (the leftover table
                // of a removed entity, an app's own table): a table Z_PRIMARYKEY does not list is
                // no less personal. Kept: the three tables of structure. A virtual table (full-text
                // search) is changed through its module and its index rebuilt, never its shadow
                // tables by hand (that corrupts it); one that cannot be changed fails the copy, and
                // the store is left out of the bundle, said in `skipped`.
                let shadow = try Set(
                    BoundedRead.texts(
                        db, sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'"))
                let others = schema.tables.keys.sorted().filter {
                    !Self.keptTables.contains($0.uppercased()) && !shadow.contains($0)
                }
                let targets = (schema.entityTables + schema.historyTables + schema.cloudKitTables + others).uniqued()
                let fullText = try Set(
                    BoundedRead.texts(
                        db,
                        sql:
                            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts%'"
                    ))
                for table in targets {
                    let columns = (schema.tables[table] ?? []).map(\.name).filter {
                        !["Z_PK", "Z_ENT", "Z_OPT"].contains($0) && !$0.hasPrefix("Z_FOK_")
                    }
                    var touched: [String] = []
                    for column in columns {
                        let q = column.sqlIdentifier
                        try db.execute(
                            sql:
                                "UPDATE \(table.sqlIdentifier) SET \(q) = usm_redact(\(q)) WHERE typeof(\(q)) IN ('text', 'blob')"
                        )
                        if db.changesCount > 0 {
                            touched.append(column)
                            total += db.changesCount
                        }
                    }
                    if !touched.isEmpty { tables.append(.init(table: table, columns: touched)) }
                    if fullText.contains(table) {
                        // The index still holds the old words: built anew from the redacted text.
                        try db.execute(
                            sql: "INSERT INTO \(table.sqlIdentifier)(\(table.sqlIdentifier)) VALUES ('rebuild')")
                    }
                }
                try StoreRewrite.restoreTriggers(db, triggers, path: destination.path)
                return .commit
            }
            // VACUUM attaches its own temporary database.
            try UntrustedDatabase.attaching(db) { try db.execute(sql: "VACUUM") }
        }
        return Result(tables: tables, values: total)
    }

    /// The digest that stands in for an external-data file's content, read in blocks.
    func redactFile(at path: String) throws -> Data {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Data("file:".utf8))
        _ = try FileCopy.readBlocks(path) { mac.update(data: $0) }
        return Data(mac.finalize())
    }

    /// The stand-in of one value: text and blobs hashed, external-data references kept, the rest as is.
    static func redactValue(_ value: DatabaseValue, key: SymmetricKey) -> DatabaseValueConvertible? {
        switch value.storage {
        case let .string(text):
            let mac = HMAC<SHA256>.authenticationCode(for: Data(("text:" + text).utf8), using: key)
            return "redacted:" + String(mac.hex.prefix(32))
        case let .blob(data):
            if ExternalData.referencedName(data) != nil { return data }
            return Data(HMAC<SHA256>.authenticationCode(for: Data("blob:".utf8) + data, using: key))
        case .null, .int64, .double:
            return value
        }
    }
}

extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen: Set<Element> = []
        return filter { seen.insert($0).inserted }
    }
}
