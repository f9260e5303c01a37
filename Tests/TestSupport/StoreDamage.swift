import Foundation
import GRDB

/// Where the rows of a healthy store lie, page by page, as SQLite's own `dbstat` table says
/// (independent of usm-repair's reader): the salvage tests damage chosen pages and then know which
/// rows were on them. Read through a private copy (the `-wal` applied; the original untouched).
public struct PageMap {
    /// A leaf page of a table with the keys of its rows, in order, and each row's overflow pages.
    public struct Leaf {
        public let page: Int
        public var rowids: [Int64] = []
        public var overflow: [Int64: [Int]] = [:]
    }

    public let pageSize: Int
    public let pageCount: Int
    /// Leaves of each table, in key order.
    public var leaves: [String: [Leaf]] = [:]
    /// Interior pages of each table (the root first when it is one).
    public var interior: [String: [Int]] = [:]
    /// Each table's root page.
    public var roots: [String: Int] = [:]
    /// Pages of indexes.
    public var indexPages: Set<Int> = []

    /// Maps the store at `store`.
    public static func read(_ store: URL) throws -> PageMap {
        let work = TestTemporary.path("usm-pagemap")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let copy = work.appendingPathComponent("s.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        if FileManager.default.fileExists(atPath: store.path + "-wal") {
            try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: copy.path + "-wal")
        }
        // Copies of read-only files (the corpus) are made writable: SQLite needs that to read a -wal.
        for path in [copy.path, copy.path + "-wal"] where FileManager.default.fileExists(atPath: path) {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        }
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        return try queue.read { db in
            let size = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            let count = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            var map = PageMap(pageSize: size, pageCount: count)
            let tables = try Row.fetchAll(db, sql: "SELECT type, name, rootpage FROM sqlite_master WHERE rootpage > 0")
            var kinds: [String: String] = ["sqlite_master": "table", "sqlite_schema": "table"]
            for row in tables {
                let name: String = row["name"]
                kinds[name] = row["type"]
                if (row["type"] as String) == "table" { map.roots[name] = row["rootpage"] }
            }
            map.roots["sqlite_master"] = 1
            let stat = try Row.fetchAll(
                db, sql: "SELECT name, path, pageno, pagetype, ncell FROM dbstat ORDER BY name, path")
            var leafByPath: [String: (String, Int)] = [:]
            var order: [String: [(path: String, page: Int, cells: Int)]] = [:]
            for row in stat {
                let name: String = row["name"]
                let path: String = row["path"]
                let page: Int = row["pageno"]
                let type: String = row["pagetype"]
                if kinds[name] != "table" {
                    map.indexPages.insert(page)
                    continue
                }
                switch type {
                case "internal": map.interior[name, default: []].append(page)
                case "leaf":
                    order[name, default: []].append((path, page, row["ncell"]))
                    leafByPath[path + "@" + name] = (name, page)
                default: break
                }
            }
            for (name, leaves) in order {
                let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                let keys = try Int64.fetchAll(
                    db, sql: "SELECT rowid FROM \(name == "sqlite_master" ? "sqlite_master" : quoted) ORDER BY rowid")
                var next = 0
                var result: [Leaf] = []
                for leaf in leaves.sorted(by: { $0.path < $1.path }) {
                    var entry = Leaf(page: leaf.page)
                    entry.rowids = Array(keys[next..<min(keys.count, next + leaf.cells)])
                    next += leaf.cells
                    result.append(entry)
                }
                map.leaves[name] = result
            }
            // Overflow pages: path "<leaf path><cell index, 3 hex digits>+<n, 6 hex digits>".
            for row in stat where (row["pagetype"] as String) == "overflow" {
                let name: String = row["name"]
                let path: String = row["path"]
                let page: Int = row["pageno"]
                guard kinds[name] == "table", let plus = path.firstIndex(of: "+") else { continue }
                let cellPart = path[..<plus]
                let leafPath = String(cellPart.dropLast(3))
                guard let cell = Int(cellPart.suffix(3), radix: 16),
                    let index = map.leaves[name]?.firstIndex(where: { leafByPath[leafPath + "@" + name]?.1 == $0.page }
                    ),
                    let leaves = map.leaves[name], cell < leaves[index].rowids.count
                else { continue }
                map.leaves[name]?[index].overflow[leaves[index].rowids[cell], default: []].append(page)
            }
            return map
        }
    }

    /// The keys of the rows of each table that lie (leaf or overflow) on one of `pages`.
    public func rows(on pages: Set<Int>) -> [String: Set<Int64>] {
        var result: [String: Set<Int64>] = [:]
        for (table, leaves) in leaves {
            for leaf in leaves {
                for key in leaf.rowids
                where pages.contains(leaf.page) || (leaf.overflow[key] ?? []).contains(where: pages.contains) {
                    result[table, default: []].insert(key)
                }
            }
        }
        return result
    }
}

/// Every row of every table of a store (`rowid` first), read through a private copy.
public enum StoreRows {
    public static func read(_ store: URL) throws -> [String: [Int64: [DatabaseValue]]] {
        let work = TestTemporary.path("usm-rows")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let copy = work.appendingPathComponent("s.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        if FileManager.default.fileExists(atPath: store.path + "-wal") {
            try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: copy.path + "-wal")
        }
        // Copies of read-only files (the corpus) are made writable: SQLite needs that to read a -wal.
        for path in [copy.path, copy.path + "-wal"] where FileManager.default.fileExists(atPath: path) {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        }
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        return try queue.read { db in
            var result: [String: [Int64: [DatabaseValue]]] = [:]
            for name in try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            {
                let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                var rows: [Int64: [DatabaseValue]] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT rowid AS usm_key, * FROM \(quoted)") {
                    rows[row["usm_key"]] = Array(row.databaseValues.dropFirst())
                }
                result[name] = rows
            }
            return result
        }
    }
}

/// Ways to damage a store's files, as the salvage tests and benchmark name them.
public enum StoreDamage {
    /// Overwrites whole pages of the main file with deterministic random bytes.
    public static func overwrite(_ store: URL, pages: [Int], pageSize: Int, seed: UInt64 = 7) throws {
        var rng = SeededRandom(seed: seed)
        for page in pages {
            let bytes = Data((0..<pageSize).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            try write(store, at: UInt64((page - 1) * pageSize), bytes)
        }
    }

    /// Zeroes whole pages of the main file (what a lost write or a filesystem's repair leaves).
    public static func zeroPages(_ store: URL, pages: [Int], pageSize: Int) throws {
        for page in pages { try write(store, at: UInt64((page - 1) * pageSize), Data(count: pageSize)) }
    }

    /// Zeroes the B-tree header of `page` (12 bytes: enough for an interior page's).
    public static func zeroPageHeader(_ store: URL, page: Int, pageSize: Int) throws {
        try write(store, at: UInt64((page - 1) * pageSize), Data(count: 12))
    }

    /// Zeroes the first 100 bytes (the file header).
    public static func zeroFileHeader(_ store: URL) throws {
        try write(store, at: 0, Data(count: 100))
    }

    /// Cuts the main file `bytes` long.
    public static func truncate(_ store: URL, to bytes: Int) throws {
        let handle = try FileHandle(forWritingTo: store)
        try handle.truncate(atOffset: UInt64(bytes))
        try handle.close()
    }

    /// Writes `pages` into the header's database size (offset 28), which SQLite trusts while the
    /// version-valid-for number equals the change counter (as in a healthy store).
    public static func declarePages(_ store: URL, _ pages: UInt32) throws {
        try write(
            store, at: 28,
            Data([UInt8(pages >> 24 & 0xFF), UInt8(pages >> 16 & 0xFF), UInt8(pages >> 8 & 0xFF), UInt8(pages & 0xFF)]))
    }

    /// Cuts the `-wal` in the middle of its last frame.
    public static func tearWAL(_ store: URL, pageSize: Int) throws {
        let wal = URL(fileURLWithPath: store.path + "-wal")
        let size = (try FileManager.default.attributesOfItem(atPath: wal.path)[.size] as? NSNumber)?.intValue ?? 0
        let frames = (size - 32) / (24 + pageSize)
        let handle = try FileHandle(forWritingTo: wal)
        try handle.truncate(atOffset: UInt64(32 + (frames - 1) * (24 + pageSize) + 24 + pageSize / 2))
        try handle.close()
    }

    /// Makes the last freelist trunk point back at the first; returns the trunk pages.
    @discardableResult
    public static func loopFreelist(_ store: URL, pageSize: Int) throws -> [Int] {
        let data = try Data(contentsOf: store)
        func be32(_ at: Int) -> Int {
            Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3])
        }
        var trunks: [Int] = []
        var trunk = be32(32)
        while trunk != 0, !trunks.contains(trunk) {
            trunks.append(trunk)
            trunk = be32((trunk - 1) * pageSize)
        }
        guard let first = trunks.first, let last = trunks.last else { return [] }
        try write(
            store, at: UInt64((last - 1) * pageSize),
            Data([UInt8(first >> 24 & 0xFF), UInt8(first >> 16 & 0xFF), UInt8(first >> 8 & 0xFF), UInt8(first & 0xFF)]))
        return trunks
    }

    private static func write(_ store: URL, at offset: UInt64, _ bytes: Data) throws {
        let handle = try FileHandle(forWritingTo: store)
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: bytes)
        try handle.close()
    }
}
