import Foundation
import GRDB

/// Core Data-shaped stores of one model written with two different entity numberings, for merge
/// tests: every relationship kind and inheritance, so that a merge must remap `Z_ENT` numbers,
/// join-table and entity-column names, keys and references.
///
/// | entity   | parent | table   | numbering `.a` | numbering `.b` |
/// |----------|--------|---------|----------------|----------------|
/// | Item     | -      | ZITEM   | 1              | 2              |
/// | Book     | Item   | ZITEM   | 2              | 3              |
/// | Magazine | Item   | ZITEM   | 3              | 4              |
/// | Author   | -      | ZAUTHOR | 4              | 1              |
/// | Shelf    | -      | ZSHELF  | 5              | 5              |
/// | Tag      | -      | ZTAG    | 6              | 6              |
///
/// - to-one `Item.author` (ZITEM.ZAUTHOR) and `Item.shelf` with the ordered position `Z_FOK_SHELF`;
/// - polymorphic to-one `Author.favorite` → Item (ZAUTHOR.ZFAVORITE and the entity column `Z<Item>_FAVORITE`);
/// - ordered many-to-many Item.tags ↔ Tag.items: `Z_<Item>TAGS (Z_<Item>ITEMS, Z_6TAGS, Z_FOK_<Item>ITEMS)`;
/// - a uniqueness constraint on Item.code (`Z_Item_UNIQUE_code`);
/// - one-sided columns: `ZISSUE` only with `.a`, `ZRATING` only with `.b`.
/// No model cache: keys are found from Core Data's index names and the entity column, as on old stores.
public enum MergeFixture {
    /// Which numbering (and which one-sided column) to write.
    public enum Numbering: Sendable { case a, b }

    /// The entity numbers of a numbering.
    public static func numbers(_ n: Numbering) -> [String: Int] {
        n == .a
            ? ["Item": 1, "Book": 2, "Magazine": 3, "Author": 4, "Shelf": 5, "Tag": 6]
            : ["Item": 2, "Book": 3, "Magazine": 4, "Author": 1, "Shelf": 5, "Tag": 6]
    }

    /// Writes a store at `url` (no -wal left) with `books` books and `magazines` magazines, whose
    /// titles and codes start with `prefix` (equal prefixes make equal codes: uniqueness conflicts).
    public static func write(
        to url: URL, _ numbering: Numbering, prefix: String, books: Int = 5, magazines: Int = 2,
        authors: Int = 3, shelves: Int = 2, tags: Int = 3
    ) throws {
        let e = numbers(numbering)
        let item = e["Item"]!
        let book = e["Book"]!
        let magazine = e["Magazine"]!
        let author = e["Author"]!
        let oneSided = numbering == .a ? "ZISSUE INTEGER" : "ZRATING INTEGER"
        let join = "Z_\(item)TAGS"
        let itemsColumn = "Z_\(item)ITEMS"
        let order = "Z_FOK_\(item)ITEMS"
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE ZITEM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHOR INTEGER, ZSHELF INTEGER,
                        Z_FOK_SHELF INTEGER, \(oneSided), ZTITLE VARCHAR, ZCODE VARCHAR, ZCOVER BLOB );
                    CREATE INDEX ZITEM_ZAUTHOR_INDEX ON ZITEM (ZAUTHOR);
                    CREATE INDEX ZITEM_ZSHELF_INDEX ON ZITEM (ZSHELF);
                    CREATE INDEX ZITEM_Z_ENT_INDEX ON ZITEM (Z_ENT);
                    CREATE UNIQUE INDEX Z_Item_UNIQUE_code ON ZITEM (ZCODE COLLATE BINARY ASC);
                    CREATE TABLE ZAUTHOR ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFAVORITE INTEGER, Z\(item)_FAVORITE INTEGER, ZNAME VARCHAR );
                    CREATE INDEX ZAUTHOR_ZFAVORITE_INDEX ON ZAUTHOR (ZFAVORITE);
                    CREATE TABLE ZSHELF ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
                    CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
                    CREATE TABLE \(join) ( \(itemsColumn) INTEGER, Z_6TAGS INTEGER, \(order) INTEGER, PRIMARY KEY (\(itemsColumn), Z_6TAGS) );
                    CREATE INDEX \(join)_Z_6TAGS_INDEX ON \(join) (Z_6TAGS, \(itemsColumn));
                    CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                    CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
                    CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
                    """)
            for (name, n) in e {
                let parent = ["Book", "Magazine"].contains(name) ? item : 0
                try db.execute(sql: "INSERT INTO Z_PRIMARYKEY VALUES (?, ?, ?, 0)", arguments: [n, name, parent])
            }
            // Keys start above 1 and differ per prefix, so that kept and moved keys are told apart.
            let base = prefix.unicodeScalars.reduce(0) { $0 + Int($1.value) } % 7
            for a in 1...authors {
                try db.execute(
                    sql: "INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, ?, 1, ?)",
                    arguments: [base + a, author, "\(prefix) author \(a)"])
            }
            for s in 1...shelves {
                try db.execute(
                    sql: "INSERT INTO ZSHELF VALUES (?, ?, 1, ?)",
                    arguments: [base + s, e["Shelf"]!, "\(prefix) shelf \(s)"])
            }
            for t in 1...tags {
                try db.execute(
                    sql: "INSERT INTO ZTAG VALUES (?, ?, 1, ?)", arguments: [base + t, e["Tag"]!, "\(prefix) tag \(t)"])
            }
            let total = books + magazines
            for i in 1...total {
                let isBook = i <= books
                let pk = base + i
                try db.execute(
                    sql: """
                        INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZSHELF, Z_FOK_SHELF, \(numbering == .a ? "ZISSUE" : "ZRATING"), ZTITLE, ZCODE, ZCOVER)
                        VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        pk, isBook ? book : magazine, isBook ? base + (i % authors) + 1 : nil, base + (i % shelves) + 1,
                        i * 1024, i, "\(prefix) item \(i)", "code-\(prefix)-\(i)", Data([0x01, UInt8(i)]),
                    ])
                for t in 1...tags where (i + t) % 2 == 0 {
                    try db.execute(sql: "INSERT INTO \(join) VALUES (?, ?, ?)", arguments: [pk, base + t, t * 1024])
                }
            }
            // Favorites: authors point at a magazine (not the root entity), so the entity column matters.
            for a in 1...authors {
                try db.execute(
                    sql: "UPDATE ZAUTHOR SET ZFAVORITE = ?, Z\(item)_FAVORITE = ? WHERE Z_PK = ?",
                    arguments: [base + books + 1 + (a % max(magazines, 1)), magazine, base + a])
            }
            try db.execute(
                sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZITEM) WHERE Z_ENT IN (?, ?, ?)",
                arguments: [item, book, magazine])
            try db.execute(
                sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZAUTHOR) WHERE Z_ENT = ?",
                arguments: [author])
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZSHELF) WHERE Z_ENT = 5")
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZTAG) WHERE Z_ENT = 6")
            let plist = try PropertyListSerialization.data(
                fromPropertyList: [
                    "NSStoreType": "SQLite", "NSPersistenceFrameworkVersion": 1345, "owner": prefix,
                ] as [String: Any], format: .binary, options: 0)
            try db.execute(sql: "INSERT INTO Z_METADATA VALUES (1, ?, ?)", arguments: [UUID().uuidString, plist])
        }
        try queue.close()
    }

    /// Every relationship of the store at `url` as names, for comparing stores whose keys differ:
    /// "item title → author name", "item title → shelf name @ position", "author → favorite title (entity)",
    /// "item title → tag name @ position".
    public static func relationships(_ url: URL) throws -> [String] {
        let queue = try DatabaseQueue(
            path: url.path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        return try queue.read { db in
            var lines: [String] = []
            let names = Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY").map {
                    (($0["Z_ENT"] as Int?) ?? 0, ($0["Z_NAME"] as String?) ?? "")
                })
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT i.ZTITLE AS t, a.ZNAME AS a, s.ZNAME AS s, i.Z_FOK_SHELF AS p, i.Z_ENT AS e FROM ZITEM i
                    LEFT JOIN ZAUTHOR a ON a.Z_PK = i.ZAUTHOR LEFT JOIN ZSHELF s ON s.Z_PK = i.ZSHELF
                    """)
            {
                let entity = names[(row["e"] as Int?) ?? 0] ?? "?"
                lines.append(
                    "\((row["t"] as String?) ?? "") (\(entity)) → author \((row["a"] as String?) ?? "none"), shelf \((row["s"] as String?) ?? "none") @ \((row["p"] as Int?) ?? -1)"
                )
            }
            let favorite =
                try String.fetchOne(
                    db, sql: "SELECT name FROM pragma_table_info('ZAUTHOR') WHERE name GLOB 'Z[0-9]*_FAVORITE'")
                ?? "Z0_FAVORITE"
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT a.ZNAME AS a, i.ZTITLE AS t, a.\(favorite) AS fe, i.Z_ENT AS ie FROM ZAUTHOR a LEFT JOIN ZITEM i ON i.Z_PK = a.ZFAVORITE"
            ) {
                let said = names[(row["fe"] as Int?) ?? 0] ?? "?"
                let actual = names[(row["ie"] as Int?) ?? 0] ?? "?"
                lines.append(
                    "\((row["a"] as String?) ?? "") → favorite \((row["t"] as String?) ?? "none") (says \(said), is \(actual))"
                )
            }
            let join =
                try String.fetchOne(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'Z_[0-9]*TAGS'")
                ?? "Z_0TAGS"
            let items =
                try String.fetchOne(
                    db, sql: "SELECT name FROM pragma_table_info('\(join)') WHERE name GLOB 'Z_[0-9]*ITEMS'")
                ?? "Z_0ITEMS"
            let order =
                try String.fetchOne(db, sql: "SELECT name FROM pragma_table_info('\(join)') WHERE name GLOB 'Z_FOK_*'")
                ?? "Z_FOK_0ITEMS"
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT i.ZTITLE AS t, g.ZNAME AS g, j.\(order) AS p FROM \(join) j JOIN ZITEM i ON i.Z_PK = j.\(items) JOIN ZTAG g ON g.Z_PK = j.Z_6TAGS"
            ) {
                lines.append(
                    "\((row["t"] as String?) ?? "") → tag \((row["g"] as String?) ?? "") @ \((row["p"] as Int?) ?? -1)")
            }
            return lines.sorted()
        }
    }
}
