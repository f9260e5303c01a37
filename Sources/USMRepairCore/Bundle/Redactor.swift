import Crypto
import Foundation
import GRDB

/// Writes stand-ins for a store that carry no personal data, for `archive --redact` and
/// `archive --metadata-only`. Both work on a fresh SQLite copy (`VACUUM INTO` from the captured
/// store), so the user's files are never opened for writing and no old value survives in a free page.
struct Redactor: Sendable {
    /// The key of the keyed hash of external-data files (and of values when there is no map):
    /// random per bundle and never stored, so a file cannot be confirmed by hashing guesses.
    let keyBytes: Data
    /// The redaction map, a SQLite file in the bundle's private scratch folder shared by every
    /// store of the bundle: each distinct text or blob value gets the next token
    /// (`redacted:1`, `redacted:2`...), so equal values stay equal across the bundle's stores,
    /// the stand-ins are short (a redacted store is no larger than the store), and the engineer
    /// can find the value a customer names (`BundleWriter` writes the map beside the bundle, 0600).
    let map: URL?

    /// A redactor with a fresh random key; `map`: where the tokens are kept (nil: keyed hashes).
    init(map: URL? = nil) {
        keyBytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        self.map = map
    }

    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// What `--redact` did to one store.
    struct Result {
        let tables: [BundleRedaction.RedactedTable]
        let values: Int
    }

    /// The tables of structure, kept as they are (upper-cased).
    static let keptTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    /// The procedure in words, as the manifest's `redaction.method` says it (the README says it at
    /// length): kept short, since a tiny store's redacted bundle must stay no larger than its full one.
    static let method = """
        TEXT and BLOB values of every table but Z_PRIMARYKEY, Z_METADATA, Z_MODELCACHE replaced by \
        tokens "redacted:N" (equal values, equal tokens; map kept by the sender); other values, keys \
        kept; rewritten by VACUUM, secure_delete on.
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
            db.add(function: Self.externalReference)
            try db.execute(sql: "PRAGMA secure_delete = ON")
            if let map {
                // The tool's own attach (outside any transaction), detached before the VACUUM.
                try UntrustedDatabase.attaching(db) {
                    try db.execute(sql: "ATTACH DATABASE ? AS usm_map", arguments: [map.path])
                }
                try db.execute(
                    sql:
                        "CREATE TABLE IF NOT EXISTS usm_map.redaction (token INTEGER PRIMARY KEY, kind TEXT NOT NULL, value NOT NULL, UNIQUE (kind, value))"
                )
            }
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
                        let t = table.sqlIdentifier
                        if map != nil {
                            // Tokens for the values not yet in the map (BINARY comparison: the map's
                            // column on the left), then each value replaced by its token.
                            let redactable = "typeof(\(q)) IN ('text', 'blob') AND usm_external(\(q)) = 0"
                            try db.execute(
                                sql:
                                    "INSERT OR IGNORE INTO usm_map.redaction (kind, value) SELECT typeof(\(q)), \(q) FROM main.\(t) WHERE \(redactable)"
                            )
                            try db.execute(
                                sql: """
                                    UPDATE main.\(t) SET \(q) = (SELECT CASE m.kind WHEN 'text' THEN 'redacted:' || m.token \
                                    ELSE CAST('redacted:' || m.token AS BLOB) END FROM usm_map.redaction AS m \
                                    WHERE m.kind = typeof(\(t).\(q)) AND m.value = \(t).\(q)) WHERE \(redactable)
                                    """)
                        } else {
                            try db.execute(
                                sql: "UPDATE \(t) SET \(q) = usm_redact(\(q)) WHERE typeof(\(q)) IN ('text', 'blob')")
                        }
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
            if map != nil { try db.execute(sql: "DETACH DATABASE usm_map") }
            // VACUUM attaches its own temporary database.
            try UntrustedDatabase.attaching(db) { try db.execute(sql: "VACUUM") }
        }
        return Result(tables: tables, values: total)
    }

    /// `usm_external(v)`: 1 for an external-data reference (kept as it is), else 0.
    static let externalReference = DatabaseFunction("usm_external", argumentCount: 1, pure: true) { values in
        if case let .blob(data) = values[0].storage, ExternalData.referencedName(data) != nil { return 1 }
        return 0
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
