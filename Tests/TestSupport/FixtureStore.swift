import Foundation
import GRDB

/// Writes Core Data-shaped SQLite stores for tests and examples: the same bookkeeping tables, naming
/// rules and encodings Core Data uses (see ../shared/docs/coredata-format.md), with every feature a
/// repair tool must survive. The model ("Library"):
///
/// | Z_ENT | entity   | parent | table  | notes |
/// |-------|----------|--------|--------|-------|
/// | 1     | Item     | -      | ZITEM  | root of a hierarchy; `tags` many-to-many with Tag |
/// | 2     | Book     | Item   | ZITEM  | `author` to-one (ZAUTHOR), `cover` external-storage BLOB |
/// | 3     | Magazine | Item   | ZITEM  | `issue` attribute |
/// | 4     | Author   | -      | ZAUTHOR | `books` to-many (inverse of Book.author) |
/// | 5     | Shelf    | -      | ZSHELF | `items` ordered to-many: ZITEM.ZSHELF + ZITEM.Z_FOK_SHELF |
/// | 6     | Tag      | -      | ZTAG   | join table Z_1TAGS (Z_1ITEMS, Z_6TAGS) |
///
/// With `history`, the persistent-history tables ACHANGE / ATRANSACTION / ATRANSACTIONSTRING and
/// their system entities 16001-16003.
public struct FixtureStore {
    /// What to put in the store.
    public struct Options: Sendable, Hashable {
        public var books = 6
        public var magazines = 3
        public var authors = 3
        public var shelves = 2
        public var tags = 4
        /// Books added after a checkpoint, left only in the -wal.
        public var walOnlyBooks = 0
        /// Books whose cover is stored as an external-data file (0x02 reference).
        public var externalCovers = 2
        /// Books whose `recording` (column ZRECORDING) is a file-backed future: a 0x03 reference
        /// into `.X_SUPPORT/_FBF/<UUID>`, laid out as Core Data writes it (`FixtureStore.futureReference`).
        public var fileBackedFutures = 0
        /// Adds NSPersistentCloudKitContainer's mirroring tables (ANSCKDATABASEMETADATA,
        /// ANSCKRECORDMETADATA, ANSCKRECORDZONEMETADATA) as entities 16004-16006, with one record
        /// metadata row per item naming it by (ZENTITYID, ZENTITYPK).
        public var cloudKit = false
        /// Makes the store a ubiquity copy shaped like the real ones (issue 32: `UserDictionary.db`
        /// of cfe84/substitutions-sync, rljacobson/PillowData's export): com.apple.coredata.ubiquity.*
        /// keys in the metadata (`ubiquitized` the integer 1) with
        /// `PFUbiquitySetupOriginalStoreURLAbsoluteStringKey`, the bookkeeping tables `Y_UBMETA`,
        /// `Y_UBRANGE` and `Y_UBKVS` with rows, and root entities' `Z_MAX` at the end of a 1024-key block.
        public var ubiquityMetadata = false
        /// Adds persistent-history tables and rows.
        public var history = false
        /// The store UUID (Z_METADATA.Z_UUID); fixed by default so output is reproducible.
        public var storeUUID = "6B1F6C1E-2D3A-4F5B-8C7D-9E0F1A2B3C4D"
        /// Seed for the deterministic values (names, external-data UUIDs).
        public var seed: UInt64 = 1

        public init() {}
    }

    /// Rows per entity the options produce, for assertions.
    public static func expectedRows(_ o: Options) -> [String: Int] {
        [
            "Item": 0, "Book": o.books + o.walOnlyBooks, "Magazine": o.magazines, "Author": o.authors,
            "Shelf": o.shelves, "Tag": o.tags,
        ]
    }

    /// The entity numbers of the model.
    public static let entityNumbers = ["Item": 1, "Book": 2, "Magazine": 3, "Author": 4, "Shelf": 5, "Tag": 6]

    /// Writes a store at `url` (its -wal beside it when `walOnlyBooks` > 0, its _SUPPORT folder when
    /// there is external data). The destination's file set must not exist. Each set of options is
    /// built once per test run (`FixtureCache`) and copied: every store written with the same
    /// options is the same bytes.
    public static func write(to url: URL, _ o: Options = Options()) throws {
        let template = try FixtureCache.template("store", o) { folder in
            try build(to: folder.appendingPathComponent("store.sqlite"), o)
        }
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] {
            try FileManager.default.copyItem(
                atPath: template.appendingPathComponent("store.sqlite").path + suffix, toPath: url.path + suffix)
        }
        // The support folder's files (external storage, file-backed futures) under the store's own name.
        let baseName = url.deletingPathExtension().lastPathComponent
        for folder in ["_EXTERNAL_DATA", "_FBF"] {
            let source = template.appendingPathComponent(".store_SUPPORT/\(folder)", isDirectory: true)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: source.path)) ?? []
            guard !names.isEmpty else { continue }
            let target = directory.appendingPathComponent(".\(baseName)_SUPPORT/\(folder)", isDirectory: true)
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            for name in names {
                try FileManager.default.copyItem(
                    at: source.appendingPathComponent(name), to: target.appendingPathComponent(name))
            }
        }
    }

    /// Builds the store at `url` with SQLite (what `write` copies).
    static func build(to url: URL, _ o: Options) throws {
        let work = TestTemporary.path("usm-fixture")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let path = work.appendingPathComponent("store.sqlite").path
        var rng = SeededRandom(seed: o.seed)

        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        }
        let directory = url.deletingLastPathComponent()
        let baseName = url.deletingPathExtension().lastPathComponent
        let externalDir = directory.appendingPathComponent(".\(baseName)_SUPPORT/_EXTERNAL_DATA", isDirectory: true)
        let futuresDir = directory.appendingPathComponent(".\(baseName)_SUPPORT/_FBF", isDirectory: true)

        var externalFiles: [(String, Data)] = []
        var futureFiles: [(String, Data)] = []
        try queue.write { db in
            try db.execute(sql: schemaSQL(history: o.history, futures: o.fileBackedFutures > 0, cloudKit: o.cloudKit))
            var pk = 0
            for a in 1...max(o.authors, 1) where a <= o.authors {
                try db.execute(
                    sql: "INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, 4, 1, ?)",
                    arguments: [a, "Author \(a) \(rng.word())"])
            }
            for s in 1...max(o.shelves, 1) where s <= o.shelves {
                try db.execute(
                    sql: "INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, 5, 1, ?)",
                    arguments: [s, "Shelf \(s)"])
            }
            for t in 1...max(o.tags, 1) where t <= o.tags {
                try db.execute(
                    sql: "INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, 6, 1, ?)", arguments: [t, rng.word()])
            }
            for b in 0..<o.books {
                pk += 1
                var cover: Data
                if b < o.externalCovers {
                    let name = rng.uuid()
                    let bytes = Data((0..<2048).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
                    externalFiles.append((name, bytes))
                    // As Core Data writes it: the tag, the file name, a NUL.
                    cover = Data([0x02]) + Data(name.utf8) + Data([0])
                } else {
                    cover = Data([0x01]) + Data((0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
                }
                try insertItem(db, pk: pk, ent: 2, title: "Book \(pk) \(rng.word())", o: o, cover: cover, position: b)
                if b < o.fileBackedFutures {
                    let name = rng.uuid()
                    let bytes = Data((0..<(1000 + 7 * b)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
                    futureFiles.append((name, bytes))
                    try db.execute(
                        sql: "UPDATE ZITEM SET ZRECORDING = ? WHERE Z_PK = ?",
                        arguments: [futureReference(uuid: name, size: UInt64(bytes.count)), pk])
                }
            }
            for m in 0..<o.magazines {
                pk += 1
                try insertItem(
                    db, pk: pk, ent: 3, title: "Magazine \(pk)", o: o, cover: nil, position: o.books + m, issue: m + 1)
            }
            if o.tags > 0 {
                let insert = try db.cachedStatement(sql: "INSERT INTO Z_1TAGS (Z_1ITEMS, Z_6TAGS) VALUES (?, ?)")
                for item in 1...max(pk, 1) where item <= pk {
                    try insert.execute(arguments: [item, (item % o.tags) + 1])
                }
            }
            if o.history { try insertHistory(db, items: pk) }
            if o.cloudKit { try insertCloudKit(db, items: pk, books: o.books) }
            if o.ubiquityMetadata { try Ubiquity.insertTables(db) }
            try setMax(db, o: o, itemMax: pk)
            try db.execute(
                sql: "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                arguments: [o.storeUUID, try metadataPlist(o)])
        }
        try queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        if o.walOnlyBooks > 0 {
            try queue.write { db in
                let start = try Int.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM ZITEM") ?? 0
                for i in 0..<o.walOnlyBooks {
                    try insertItem(
                        db, pk: start + i + 1, ent: 2, title: "WAL-only book \(i + 1)", o: o, cover: nil,
                        position: 1000 + i)
                }
                try db.execute(
                    sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 1",
                    arguments: [Ubiquity.counter(start + o.walOnlyBooks, o)])
            }
        }
        // Copy while the connection is still open: the -wal holds the un-checkpointed rows exactly
        // as on a device whose app was killed, and closing later cannot fold them into our copy.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: path, toPath: url.path)
        // As in a running app's container: -wal (empty after the checkpoint unless rows wait in it) and -shm.
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: url.path + "-wal")
        try FileManager.default.copyItem(atPath: path + "-shm", toPath: url.path + "-shm")
        try queue.close()
        if !externalFiles.isEmpty {
            try FileManager.default.createDirectory(at: externalDir, withIntermediateDirectories: true)
            for (name, bytes) in externalFiles {
                try bytes.write(to: externalDir.appendingPathComponent(name))
            }
        }
        if !futureFiles.isEmpty {
            try FileManager.default.createDirectory(at: futuresDir, withIntermediateDirectories: true)
            for (name, bytes) in futureFiles {
                try bytes.write(to: futuresDir.appendingPathComponent(name))
            }
        }
    }

    /// A file-backed future's column value as Core Data's `_NSDataFileBackedFuture` writes it
    /// (decompiled CoreData `-_storeMetadata`): the tag `03 23 23 23` ("\x03###"), the file's size as
    /// a 64-bit little-endian integer, the UUID's 16 bytes, then the file name (the UUID string, no NUL).
    public static func futureReference(uuid: String, size: UInt64) -> Data {
        var data = Data([0x03, 0x23, 0x23, 0x23])
        withUnsafeBytes(of: size.littleEndian) { data.append(contentsOf: $0) }
        let parsed = UUID(uuidString: uuid) ?? UUID()
        withUnsafeBytes(of: parsed.uuid) { data.append(contentsOf: $0) }
        data.append(Data(uuid.utf8))
        return data
    }

    /// Runs SQL on a store the test owns (this checkpoints its WAL: never use on a user's store).
    /// The store keeps the shape of its file set: closing checkpoints and removes -wal and -shm, so
    /// empty ones are put back when they were there (an empty -wal is a fully checkpointed one).
    public static func mutate(_ url: URL, _ sql: String) throws {
        let sidecars = [url.path + "-wal", url.path + "-shm"].filter { FileManager.default.fileExists(atPath: $0) }
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
        for path in sidecars where !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: Data())
        }
    }

    /// A plain SQLite database that is not a Core Data store.
    public static func writePlainSQLite(to url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(
                sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('hello')"
            )
        }
        try queue.close()
    }

    // MARK: - Pieces

    static func schemaSQL(history: Bool, futures: Bool = false, cloudKit: Bool = false) -> String {
        var sql = """
            CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHOR INTEGER, ZSHELF INTEGER,
                Z_FOK_SHELF INTEGER, ZISSUE INTEGER, ZCREATED TIMESTAMP, ZTITLE VARCHAR, ZCOVER BLOB\(futures ? ", ZRECORDING BLOB" : "") );
            CREATE INDEX ZITEM_ZAUTHOR_INDEX ON ZITEM (ZAUTHOR);
            CREATE INDEX ZITEM_ZSHELF_INDEX ON ZITEM (ZSHELF);
            CREATE INDEX ZITEM_Z_ENT_INDEX ON ZITEM (Z_ENT);
            CREATE TABLE ZAUTHOR ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE TABLE ZSHELF ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE TABLE Z_1TAGS ( Z_1ITEMS INTEGER, Z_6TAGS INTEGER, PRIMARY KEY (Z_1ITEMS, Z_6TAGS) );
            CREATE INDEX Z_1TAGS_Z_6TAGS_INDEX ON Z_1TAGS (Z_6TAGS, Z_1ITEMS);
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 0), (2, 'Book', 1, 0), (3, 'Magazine', 1, 0),
                (4, 'Author', 0, 0), (5, 'Shelf', 0, 0), (6, 'Tag', 0, 0);
            """
        if history {
            sql += """
                CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, ZENTITY INTEGER,
                    ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB );
                CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID);
                CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER,
                    ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR,
                    ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB );
                CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
                CREATE UNIQUE INDEX Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC);
                INSERT INTO Z_PRIMARYKEY VALUES (16001, 'CHANGE', 0, 0), (16002, 'TRANSACTION', 0, 0), (16003, 'TRANSACTIONSTRING', 0, 0);
                """
        }
        if cloudKit {
            // Table names as coredata-format.md §1.9 lists them; the entity rows' numbers and names
            // (the table name without its A prefix, as for history) are inferred.
            sql += """
                CREATE TABLE ANSCKDATABASEMETADATA ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZDATABASESCOPENUM INTEGER,
                    ZCURRENTCHANGETOKEN BLOB );
                CREATE TABLE ANSCKRECORDZONEMETADATA ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZDATABASE INTEGER,
                    ZCKRECORDZONENAME VARCHAR, ZCKOWNERNAME VARCHAR );
                CREATE TABLE ANSCKRECORDMETADATA ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZENTITYID INTEGER,
                    ZENTITYPK INTEGER, ZNEEDSCLOUDDELETE INTEGER, ZNEEDSUPLOAD INTEGER, ZRECORDZONE INTEGER,
                    ZLASTEXPORTEDTRANSACTIONNUMBER INTEGER, ZCKRECORDNAME VARCHAR, ZCKRECORDSYSTEMFIELDS BLOB );
                CREATE UNIQUE INDEX Z_RecordMetadata_UNIQUE_entityId_entityPK ON ANSCKRECORDMETADATA (ZENTITYID COLLATE BINARY ASC, ZENTITYPK COLLATE BINARY ASC);
                CREATE INDEX ANSCKRECORDMETADATA_ZRECORDZONE_INDEX ON ANSCKRECORDMETADATA (ZRECORDZONE);
                INSERT INTO Z_PRIMARYKEY VALUES (16004, 'NSCKDatabaseMetadata', 0, 0), (16005, 'NSCKRecordMetadata', 0, 0),
                    (16006, 'NSCKRecordZoneMetadata', 0, 0);
                """
        }
        return sql
    }

    /// NSPersistentCloudKitContainer's mirroring state: one database, one zone, and one record
    /// metadata row per item (Z_ENT 2 for the first `books` keys, 3 after), as the mirroring
    /// delegate keeps it.
    static func insertCloudKit(_ db: Database, items: Int, books: Int) throws {
        try db.execute(sql: "INSERT INTO ANSCKDATABASEMETADATA VALUES (1, 16004, 1, 2, x'0102030405')")
        try db.execute(
            sql:
                "INSERT INTO ANSCKRECORDZONEMETADATA VALUES (1, 16006, 1, 1, 'com.apple.coredata.cloudkit.zone', '__defaultOwner__')"
        )
        for item in 1...max(items, 1) where item <= items {
            try db.execute(
                sql: "INSERT INTO ANSCKRECORDMETADATA VALUES (?, 16005, 1, ?, ?, 0, 0, 1, ?, ?, x'00')",
                arguments: [item, item <= books ? 2 : 3, item, item, "record-\(item)"])
        }
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT IN (16004, 16006)")
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 16005", arguments: [items])
    }

    static func insertItem(
        _ db: Database, pk: Int, ent: Int, title: String, o: Options, cover: Data?, position: Int, issue: Int? = nil
    ) throws {
        let author: Int? = ent == 2 && o.authors > 0 ? (pk % o.authors) + 1 : nil
        let shelf: Int? = o.shelves > 0 ? (pk % o.shelves) + 1 : nil
        // One prepared statement for every row (rows by the ten thousand in the larger fixtures).
        try db.cachedStatement(
            sql: """
                INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZSHELF, Z_FOK_SHELF, ZISSUE, ZCREATED, ZTITLE, ZCOVER)
                VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                pk, ent, author, shelf, shelf.map { _ in (position + 1) * 1024 }, issue, 743_906_532.0 + Double(pk),
                title, cover,
            ])
    }

    static func insertHistory(_ db: Database, items: Int) throws {
        try db.execute(
            sql: "INSERT INTO ATRANSACTIONSTRING VALUES (1, 16003, 1, 'com.example.app'), (2, 16003, 1, 'Example')")
        try db.execute(
            sql:
                "INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZBUNDLEIDTS, ZPROCESSIDTS, ZTIMESTAMP) VALUES (1, 16002, 1, 1, 2, 743906532.0)"
        )
        let insert = try db.cachedStatement(
            sql:
                "INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID) VALUES (?, 16001, 1, 0, 2, ?, 1)"
        )
        for item in 1...max(items, 1) where item <= items {
            try insert.execute(arguments: [item, item])
        }
    }

    /// The counters as Core Data keeps them: a hierarchy's on its root's row (Item), its
    /// sub-entities' rows (Book, Magazine) left at 0 (every store of the corpus with inheritance).
    /// A ubiquity copy's root counters sit at the end of a 1024-key block (see `Ubiquity`).
    static func setMax(_ db: Database, o: Options, itemMax: Int) throws {
        let max = { Ubiquity.counter($0, o) }
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 1", arguments: [max(itemMax)])
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 4", arguments: [max(o.authors)])
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 5", arguments: [max(o.shelves)])
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 6", arguments: [max(o.tags)])
        if o.history {
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 16001", arguments: [itemMax])
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 16002")
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_ENT = 16003")
        }
    }

    /// The binary plist Core Data keeps in Z_METADATA.Z_PLIST.
    public static func metadataPlist(_ o: Options) throws -> Data {
        var hashes: [String: Data] = [:]
        var rng = SeededRandom(seed: 99)
        for name in entityNumbers.keys.sorted() {
            hashes[name] = Data((0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        var dict: [String: Any] = [
            "NSStoreType": "SQLite",
            "NSPersistenceFrameworkVersion": 1345,
            "NSStoreModelVersionHashesVersion": 3,
            "NSStoreModelVersionHashes": hashes,
            "NSStoreModelVersionIdentifiers": [""],
            "_NSAutoVacuumLevel": "2",
        ]
        if o.ubiquityMetadata {
            // An integer, not a boolean, in the real copies.
            dict["com.apple.coredata.ubiquity.ubiquitized"] = 1
            dict["com.apple.coredata.ubiquity.token"] = Data("peer-token".utf8)
            dict["PFUbiquitySetupOriginalStoreURLAbsoluteStringKey"] =
                "file:///var/mobile/Applications/0C4C7F1E-5D27-4B55-9E5B-2A4B4C7E1F00/Documents/UbiquityStore.sqlite"
            dict["com.apple.coredata.ubiquity.baseline.timestamp"] = Date(timeIntervalSinceReferenceDate: 743_906_532)
        }
        return try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0)
    }
}

extension FixtureStore {
    /// What Core Data's iOS 7+ ubiquity engine keeps in a ubiquity copy, as two public real files
    /// hold it: `UserDictionary.db` (macOS text replacements, committed in cfe84/substitutions-sync)
    /// and rljacobson/PillowData's export of an iOS app's synced store.
    public enum Ubiquity {
        /// The tables' DDL exactly as `UserDictionary.db` holds it (sic: `PRIMARY_KEY` in Y_UBRANGE,
        /// so its `Y_PK` is no rowid alias and real rows hold NULL there).
        public static let ddl = [
            "CREATE TABLE Y_UBMETA (Y_PK INTEGER PRIMARY KEY ASC, YPEERID VARCHAR UNIQUE, YTRANSACTIONNUMBER INTEGER)",
            "CREATE TABLE Y_UBRANGE (Y_PK INTEGER PRIMARY_KEY ASC, YPEERID VARCHAR, YENTITYNAME VARCHAR, YRANGESTART INTEGER, YRANGEEND INTEGER, YPEERSTART INTEGER, YPEEREND INTEGER)",
            "CREATE TABLE Y_UBKVS (Y_PK INTEGER PRIMARY KEY ASC, YKEY VARCHAR UNIQUE, YVALUE VARCHAR)",
        ]
        /// The tables' names.
        public static let tables = ["Y_UBMETA", "Y_UBRANGE", "Y_UBKVS"]

        /// Creates the three tables with rows shaped like the real ones.
        static func insertTables(_ db: Database) throws {
            for statement in ddl { try db.execute(sql: statement) }
            try db.execute(
                sql: """
                    INSERT INTO Y_UBMETA (YPEERID, YTRANSACTIONNUMBER) VALUES ('mobile~9F3C2A71-0E54-4D1B-B7A2-6C58D0E4F913', 12);
                    INSERT INTO Y_UBMETA (YPEERID, YTRANSACTIONNUMBER) VALUES ('mac~5D0A7E42-1B39-4C86-A0F7-3E92C1D4B805', 4);
                    INSERT INTO Y_UBRANGE (Y_PK, YPEERID, YENTITYNAME, YRANGESTART, YRANGEEND, YPEERSTART, YPEEREND)
                        VALUES (NULL, 'mac~5D0A7E42-1B39-4C86-A0F7-3E92C1D4B805', 'Item', 1025, 2048, 1, 1024);
                    INSERT INTO Y_UBRANGE (Y_PK, YPEERID, YENTITYNAME, YRANGESTART, YRANGEEND, YPEERSTART, YPEEREND)
                        VALUES (NULL, 'mac~5D0A7E42-1B39-4C86-A0F7-3E92C1D4B805', 'Tag', 1025, 2048, 1, 1024);
                    INSERT INTO Y_UBKVS (YKEY, YVALUE) VALUES ('com.apple.coredata.ubiquity.localImportComplete', '1');
                    """)
        }

        /// A root entity's counter in a copy: the end of the 1024-key block holding `used` (the peer
        /// range Core Data allocated), e.g. 1024 for a few hundred rows; `used` in any other store.
        static func counter(_ used: Int, _ o: Options) -> Int {
            guard o.ubiquityMetadata else { return used }
            return max(1, (used + 1023) / 1024) * 1024
        }
    }
}

/// A small deterministic generator (SplitMix64) so fixtures are the same on every run.
public struct SeededRandom {
    private var state: UInt64
    public init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func word() -> String {
        let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po"]
        return (0..<3).map { _ in syllables[Int(next() % UInt64(syllables.count))] }.joined()
    }

    public mutating func uuid() -> String {
        let a = next()
        let b = next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(i))) }
        for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(i))) }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            )
        ).uuidString
    }
}
