import Foundation
import GRDB

/// Every entry a bundle will hold, and everything left out, kept in an SQLite file in the run's
/// private folder rather than in memory: a container of 200,000 transaction logs costs the same
/// few MiB as one of ten. Paths are compared byte for byte (SQLite's BINARY collation), so names
/// that Swift would call equal (NFC and NFD) stay two entries, as they are two files.
final class BundleCatalog {
    /// What a file is, which decides how redaction treats it.
    enum Category: Equatable {
        case storeMember(store: Int, member: String)
        case externalData(store: Int)
        case transactionLog
        case marker
        case preferences
        case other

        var name: String {
            switch self {
            case .storeMember: "member"
            case .externalData: "external"
            case .transactionLog: "log"
            case .marker: "marker"
            case .preferences: "preferences"
            case .other: "other"
            }
        }
    }

    /// One entry bound for the archive.
    struct Entry {
        /// The path inside the archive.
        var path: String
        /// `file`, `directory` or `symlink`.
        var kind: String
        /// Where it was read from (recorded in the manifest).
        var source: String?
        /// A private copy to read the bytes from instead of `source` (captures, redacted stand-ins).
        var bytesFrom: String?
        /// The source's status when it was listed; for files read from `source`, re-checked when written.
        var status: FileStatus
        var size: Int64
        var sha256: String?
        var linkTarget: String?
        var transformed: String?
        /// Re-check `source` unchanged when writing (false for private copies).
        var checkSource: Bool
        var category: Category

        /// Where the bytes come from.
        var readPath: String? { bytesFrom ?? source }

        /// The manifest's record of this entry.
        var record: BundleFile {
            BundleFile(
                kind: kind, path: path, size: size, mode: status.mode, mtime: status.mtime, sha256: sha256,
                linkTarget: linkTarget,
                source: source, transformed: transformed)
        }
    }

    private let queue: ScratchDatabase

    /// A new, empty catalog in `folder` (a private scratch folder).
    init(folder: URL) throws {
        do {
            queue = try ScratchDatabase(named: "catalog.sqlite", in: folder, label: "usm-repair.catalog")
            try queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE entry(
                          path TEXT PRIMARY KEY, kind TEXT NOT NULL, source TEXT, bytesFrom TEXT,
                          statusKind TEXT NOT NULL, statusSize INTEGER NOT NULL, mode INTEGER NOT NULL, mtime INTEGER NOT NULL,
                          ctime INTEGER NOT NULL, inode INTEGER NOT NULL, device INTEGER NOT NULL,
                          size INTEGER NOT NULL, sha256 TEXT, linkTarget TEXT, transformed TEXT, checkSource INTEGER NOT NULL,
                          category TEXT NOT NULL, store INTEGER, member TEXT
                        ) WITHOUT ROWID;
                        CREATE TABLE skipped(id INTEGER PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL,
                          unreadable INTEGER NOT NULL);
                        """)
            }
        } catch {
            throw USMError.wrap(error, path: folder.path)
        }
    }

    // MARK: - Writing

    /// Adds an entry; false when the path is already taken (the first one stays).
    @discardableResult
    func insert(_ e: Entry) throws -> Bool {
        try queue.write { db in try Self.insert(e, db) }
    }

    /// Adds entries in one transaction; paths already taken keep their first entry.
    func insert(_ entries: [Entry]) throws {
        try queue.write { db in
            for e in entries { _ = try Self.insert(e, db) }
        }
    }

    private static func insert(_ e: Entry, _ db: Database) throws -> Bool {
        let (category, store, member) = Self.encode(e.category)
        try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO entry VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            e.path, e.kind, e.source, e.bytesFrom, e.status.kind.rawValue, e.status.size, Int64(e.status.mode),
            e.status.mtime.totalNanoseconds, e.status.ctime.totalNanoseconds, Int64(bitPattern: e.status.inode),
            Int64(bitPattern: e.status.device), e.size, e.sha256, e.linkTarget, e.transformed, e.checkSource, category,
            store,
            member,
        ])
        return db.changesCount > 0
    }

    /// Replaces the entry at `entry.path` (or adds it).
    func replace(_ entry: Entry) throws {
        try remove(entry.path)
        try insert(entry)
    }

    /// Removes the entry at `path`.
    func remove(_ path: String) throws {
        try queue.write { db in
            try db.cachedStatement(sql: "DELETE FROM entry WHERE path = ?").execute(arguments: [path])
        }
    }

    /// True when an entry has this archive path.
    func contains(_ path: String) throws -> Bool {
        try queue.read { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM entry WHERE path = ?"), arguments: [path]) ?? false
        }
    }

    /// Records something left out (unreadable: the bundle is then incomplete).
    func skip(_ skip: BundleSkip) throws {
        try queue.write { db in
            try db.cachedStatement(sql: "INSERT INTO skipped(path, kind, reason, unreadable) VALUES(?, ?, ?, ?)")
                .execute(arguments: [skip.path, skip.kind, skip.reason, skip.unreadable])
        }
    }

    /// Sets what was learnt by hashing, in one transaction.
    func setHashes(_ hashes: [(path: String, sha256: String)]) throws {
        try queue.write { db in
            let statement = try db.cachedStatement(sql: "UPDATE entry SET sha256 = ? WHERE path = ?")
            for (path, sha) in hashes { try statement.execute(arguments: [sha, path]) }
        }
    }

    // MARK: - Reading

    /// Calls `body` with every entry matching `filter` (SQL over the columns), ordered by path,
    /// a page at a time: the body may change the catalog, but not the paths still to come.
    func forEach(where filter: String = "1", pageSize: Int = 512, _ body: ([Entry]) throws -> Void) throws {
        var last: String?
        while true {
            let page: [Entry] = try queue.read { db in
                // Two spellings, so that SQLite walks the primary key from where the last page ended
                // (an `OR` in the condition would make every page scan the whole table).
                let rows =
                    if let last {
                        try Row.fetchAll(
                            db.cachedStatement(
                                sql:
                                    "SELECT \(Self.columns) FROM entry WHERE path > ? AND (\(filter)) ORDER BY path LIMIT ?"
                            ),
                            arguments: [last, pageSize])
                    } else {
                        try Row.fetchAll(
                            db.cachedStatement(
                                sql: "SELECT \(Self.columns) FROM entry WHERE (\(filter)) ORDER BY path LIMIT ?"),
                            arguments: [pageSize])
                    }
                return rows.map(Self.decode)
            }
            guard let tail = page.last else { return }
            try body(page)
            last = tail.path
        }
    }

    /// Entries and bytes of content.
    func totals() throws -> (entries: Int, bytes: Int64) {
        try queue.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM entry")
            return (row?[0] ?? 0, row?[1] ?? 0)
        }
    }

    /// The `limit` largest files, as (where to read, size).
    func largestFiles(_ limit: Int) throws -> [(String, Int64)] {
        try queue.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT COALESCE(bytesFrom, source), size FROM entry WHERE kind = 'file' AND size > 0 ORDER BY size DESC LIMIT ?",
                arguments: [limit]
            ).compactMap { row in (row[0] as String?).map { ($0, row[1]) } }
        }
    }

    /// How many items were left out, and how many of them because they could not be read.
    func skippedCounts() throws -> (all: Int, unreadable: Int) {
        try queue.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), COALESCE(SUM(unreadable), 0) FROM skipped")
            return (row?[0] ?? 0, row?[1] ?? 0)
        }
    }

    /// Everything left out, in the order it was found, a page at a time.
    func forEachSkipped(limit: Int = .max, _ body: ([BundleSkip]) throws -> Void) throws {
        var last: Int64 = 0
        var remaining = limit
        while remaining > 0 {
            let rows = try queue.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT id, path, kind, reason, unreadable FROM skipped WHERE id > ? ORDER BY id LIMIT ?",
                    arguments: [last, min(512, remaining)])
            }
            guard let tail = rows.last else { return }
            last = tail[0]
            remaining -= rows.count
            try body(rows.map { BundleSkip(path: $0[1], kind: $0[2], reason: $0[3], unreadable: $0[4]) })
        }
    }

    // MARK: - Rows

    private static func encode(_ category: Category) -> (String, Int?, String?) {
        switch category {
        case let .storeMember(store, member): (category.name, store, member)
        case let .externalData(store): (category.name, store, nil)
        default: (category.name, nil, nil)
        }
    }

    /// The columns `decode` reads, by position (a lookup by name costs more than the row).
    private static let columns = """
        path, kind, source, bytesFrom, statusKind, statusSize, mode, mtime, ctime, inode, device, size, sha256, linkTarget, \
        transformed, checkSource, category, store, member
        """

    private static func decode(_ row: Row) -> Entry {
        let category: Category =
            switch row[16] as String? {
            case "member": .storeMember(store: row[17] ?? 0, member: row[18] ?? "")
            case "external": .externalData(store: row[17] ?? 0)
            case "log": .transactionLog
            case "marker": .marker
            case "preferences": .preferences
            default: .other
            }
        let status = FileStatus(
            kind: FileStatus.Kind(rawValue: row[4] ?? "") ?? .other, size: row[5] ?? 0,
            mode: UInt32(truncatingIfNeeded: row[6] as Int64? ?? 0),
            mtime: FileTime(totalNanoseconds: row[7] ?? 0), ctime: FileTime(totalNanoseconds: row[8] ?? 0),
            inode: UInt64(bitPattern: row[9] ?? 0), device: UInt64(bitPattern: row[10] ?? 0))
        return Entry(
            path: row[0] ?? "", kind: row[1] ?? "", source: row[2], bytesFrom: row[3], status: status,
            size: row[11] ?? 0, sha256: row[12], linkTarget: row[13], transformed: row[14],
            checkSource: row[15] ?? false, category: category)
    }
}
