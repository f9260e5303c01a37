import Foundation
import GRDB

/// The parts of a manifest `bundle verify` and `restore` hold in memory: everything but the
/// file records, which go into a `ManifestIndex`.
struct ManifestHeader {
    let format: String
    let formatVersion: Int
    let archiveFormat: String?
    let content: String?
    let roots: [BundleRoot]
    let stores: [BundleStore]
    let snapshot: SnapshotRecord?
}

/// A bundle's manifest records and what a scan of the archive saw, in an SQLite file in the
/// run's private folder: looking up, marking and listing 200,000 entries costs a few MiB.
/// Paths compare byte for byte (SQLite's BINARY collation).
final class ManifestIndex {
    /// A path the manifest lists twice.
    struct Duplicate: Error {
        let path: String
    }

    private let queue: ScratchDatabase

    /// A new, empty index in `folder`.
    init(folder: URL) throws {
        do {
            queue = try ScratchDatabase(named: "manifest-index.sqlite", in: folder, label: "usm-repair.manifest-index")
            try queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE record(path TEXT PRIMARY KEY, kind TEXT NOT NULL, size INTEGER NOT NULL, mode TEXT NOT NULL,
                          mtime TEXT NOT NULL, mtimeNanos INTEGER NOT NULL, sha256 TEXT, linkTarget TEXT, seen INTEGER NOT NULL DEFAULT 0)
                          WITHOUT ROWID;
                        CREATE TABLE extra(path TEXT PRIMARY KEY) WITHOUT ROWID;
                        CREATE TABLE link(path TEXT PRIMARY KEY, target TEXT NOT NULL) WITHOUT ROWID;
                        """)
            }
        } catch {
            throw USMError.wrap(error, path: folder.path)
        }
    }

    /// Adds manifest records in one transaction.
    /// - Throws: `Duplicate` for a path listed twice.
    func add(_ records: [BundleFile]) throws {
        try queue.write { db in
            let statement = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO record VALUES(?, ?, ?, ?, ?, ?, ?, ?, 0)")
            for r in records {
                try statement.execute(arguments: [
                    r.path, r.kind, r.size, r.mode, r.mtime, r.mtimeNanos, r.sha256, r.linkTarget,
                ])
                if db.changesCount == 0 { throw Duplicate(path: r.path) }
            }
        }
    }

    /// Marks `path` seen in the archive; returns its record (nil when the manifest does not list
    /// it) and whether it had been seen before (an entry that appears twice).
    func see(_ path: String) throws -> (record: BundleFile?, repeated: Bool) {
        try queue.inDatabase { db in
            if let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT * FROM record WHERE path = ?"), arguments: [path])
            {
                let repeated: Bool = row["seen"] ?? false
                if !repeated {
                    try db.cachedStatement(sql: "UPDATE record SET seen = 1 WHERE path = ?").execute(arguments: [path])
                }
                return (Self.record(row), repeated)
            }
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO extra VALUES(?)").execute(arguments: [path])
            return (nil, db.changesCount == 0)
        }
    }

    /// True when an entry named `path` was seen in the archive.
    func wasSeen(_ path: String) throws -> Bool {
        try queue.read { db in
            try Bool.fetchOne(
                db,
                sql:
                    "SELECT EXISTS(SELECT 1 FROM record WHERE seen = 1 AND path = ?) OR EXISTS(SELECT 1 FROM extra WHERE path = ?)",
                arguments: [path, path]) ?? false
        }
    }

    /// True when an entry already seen lies below `folder` (`folder/...`).
    func seenBelow(_ folder: String) throws -> Bool {
        let low = folder + "/"
        let high = folder + "0"  // "0" follows "/" in byte order
        return try queue.read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS(SELECT 1 FROM record WHERE seen = 1 AND path > ? AND path < ?)
                        OR EXISTS(SELECT 1 FROM extra WHERE path > ? AND path < ?)
                    """, arguments: [low, high, low, high]) ?? false
        }
    }

    /// Records a symlink entry seen in the archive.
    func addLink(_ path: String, target: String) throws {
        try queue.write { db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO link VALUES(?, ?)").execute(arguments: [path, target])
        }
    }

    /// The target of the symlink entry at `path`, nil when there is none.
    func linkTarget(_ path: String) throws -> String? {
        try queue.read { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT target FROM link WHERE path = ?"), arguments: [path])
        }
    }

    /// Every symlink entry, a page at a time.
    func forEachLink(_ body: (String, String) throws -> Void) throws {
        var last = ""
        while true {
            let page = try queue.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT path, target FROM link WHERE path > ? ORDER BY path LIMIT 512", arguments: [last]
                )
                .map { ($0[0] as String, $0[1] as String) }
            }
            guard let tail = page.last else { return }
            for (path, target) in page { try body(path, target) }
            last = tail.0
        }
    }

    /// Records listed in the manifest and not seen: the first `limit` paths and how many in all.
    func missing(limit: Int) throws -> (paths: [String], count: Int) {
        try queue.read { db in
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM record WHERE seen = 0") ?? 0
            let paths = try String.fetchAll(
                db, sql: "SELECT path FROM record WHERE seen = 0 ORDER BY path LIMIT ?", arguments: [limit])
            return (paths, count)
        }
    }

    /// Forgets what a scan saw, for a second pass over the same archive.
    func resetSeen() throws {
        try queue.write { db in
            try db.execute(sql: "UPDATE record SET seen = 0; DELETE FROM extra; DELETE FROM link")
        }
    }

    /// Every folder record, each after every folder below it (descending byte order puts `a/b`
    /// before `a`), a page at a time.
    func forEachDirectoryDeepestFirst(_ body: ([BundleFile]) throws -> Void) throws {
        var last: String?
        while true {
            let page = try queue.read { db in
                if let last {
                    try Row.fetchAll(
                        db.cachedStatement(
                            sql:
                                "SELECT * FROM record WHERE path < ? AND kind = 'directory' ORDER BY path DESC LIMIT 512"
                        ),
                        arguments: [last])
                } else {
                    try Row.fetchAll(
                        db.cachedStatement(
                            sql: "SELECT * FROM record WHERE kind = 'directory' ORDER BY path DESC LIMIT 512"))
                }
            }
            guard let tail = page.last else { return }
            try body(page.map(Self.record))
            last = tail["path"]
        }
    }

    private static func record(_ row: Row) -> BundleFile {
        let modeText: String = row["mode"] ?? "0"
        var file = BundleFile(
            kind: row["kind"] ?? "", path: row["path"] ?? "", size: row["size"] ?? 0,
            mode: UInt32(modeText, radix: 8) ?? 0,
            mtime: FileTime(totalNanoseconds: row["mtimeNanos"] ?? 0), sha256: row["sha256"],
            linkTarget: row["linkTarget"],
            source: nil)
        file.mode = modeText
        file.mtime = row["mtime"] ?? file.mtime
        return file
    }
}
