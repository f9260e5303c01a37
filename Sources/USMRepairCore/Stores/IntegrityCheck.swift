import Foundation
import GRDB
import Synchronization

/// `PRAGMA integrity_check` of a whole store, split so that both cores share it: the same findings
/// as one `integrity_check`, never fewer.
///
/// SQLite's `integrity_check` is `quick_check` (every B-tree's pages, cells and order; the freelist;
/// every page used exactly once; NOT NULL) plus, per table, the comparison of its rows with every
/// index on it, UNIQUE and CHECK constraints. That second part is most of the time on a large store.
/// `PRAGMA integrity_check(T)` runs both parts for table T alone, leaving out only the store-wide
/// page accounting and the freelist; `quick_check` runs exactly that store-wide part. So a
/// `quick_check` of the store plus `integrity_check(T)` of every table covers everything one
/// `integrity_check` covers, and the pieces run on two connections at once, largest first.
enum IntegrityCheck {
    /// Page cache per checking connection of the split check, KiB: twice the inspector's, for the
    /// random lookups of an index check; 8 MiB each took a merge of 1.5M objects to 68 MiB peak, over
    /// the 64 MiB budget.
    static let cacheKiB = 4096
    /// Page cache of the one connection of an unsplit check, KiB, for a store of `bytes` bytes: a
    /// tenth of the store, at least the two split connections' together (8 MiB) and, without
    /// `resident`, at most 12 MiB (16 MiB whatever the memory took `rebuild --from cloud
    /// --replace` of 1M objects to 69 MiB, over the 64 MiB budget).
    /// The index an index check looks rows up in at random must fit in it, or every lookup reads a
    /// page again and checks its cells again (`cell_size_check`): on 1,001,000 objects (155 MiB,
    /// its largest index 15 MiB) sqlite3's `integrity_check` with `cell_size_check` took 6.3 s with
    /// 8 MiB, 3.2 s with 12 MiB, 2.7 s with 16 MiB; on 301,000 objects (46 MiB) 1.1 s with 4 MiB,
    /// 0.4 s with 8 MiB. The cache fills as the check reads, so a small store never takes more.
    ///
    /// With `resident` (the process's memory as the check starts), the cap rises up to 16 MiB as
    /// far as the budget leaves room beside the check's cache for what the rest of a verification
    /// adds once it started (`besideBytes`): on 1,001,000 objects the check of `migrate-store
    /// --strategy ios` (35-37 MiB resident) took 2.5-2.8 s with 12 MiB and 2.0-2.3 s with 15.5 MiB;
    /// `migrate cloud-to-local --replace` (44-48 MiB resident) stays at 12-14 MiB. Never below 12 MiB.
    static func singleCacheKiB(forBytes bytes: Int64, resident: Int64? = nil) -> Int {
        let tenth = max(Int64(2 * cacheKiB), bytes / 10 / 1024)
        var cap = Int64(12_288)
        if let resident {
            cap = min(Int64(16_384), max(cap, (budgetBytes - besideBytes - resident) / 1024))
        }
        return Int(min(cap, tenth))
    }

    /// Whether one `integrity_check` with a cache of `cacheKiB` may start at once on a thread of
    /// its own (`Background`) rather than wait its turn on the dispatch pool: only where the budget
    /// leaves room for that cache and 10 MiB beside it, since everything else running then runs
    /// beside it from the start. Measured on 1,001,000 objects (issue 33), peak less resident less
    /// cache: 5-7 MiB on its own thread, 1-5 MiB on the pool. `migrate-store --strategy ios` (35-37
    /// MiB resident, 15.5 MiB of cache) peaked at 57.4 MiB on its own thread and gained 0.4 s;
    /// `migrate cloud-to-local --replace` (44-51 MiB resident, 12-14 MiB) went from 59-61 to 63-68
    /// MiB on its own thread, so it waits its turn there (at 300,000 objects, 8 MiB, it need not).
    static func roomForItsOwnThread(resident: Int64?, cacheKiB: Int) -> Bool {
        guard let resident else { return false }
        return budgetBytes - resident >= Int64(cacheKiB) * 1024 + (10 << 20)
    }

    /// The peak memory every command keeps under (README: 64 MiB).
    static let budgetBytes: Int64 = 64 << 20
    /// What a verification adds beside its check's cache once the check started, with the check
    /// on the dispatch pool: the reading connection's and the result's digests' caches, the external
    /// data's buffers, SQLite's and the allocator's own (1-5 MiB measured at 1M objects).
    static let besideBytes: Int64 = 8 << 20

    /// Whether splitting the check over two connections pays: only with two cores idle for it
    /// beside the one the inspector's own reads (counts, keys, join rows) keep busy. Otherwise one
    /// `integrity_check` does the same work with less: the split walks every page twice (its
    /// `quick_check`, then each table's B-trees) and runs three threads on fewer cores. On the
    /// 2-core machine measured (issue 33), never.
    /// - Parameters:
    ///   - cores: processors this process may use.
    ///   - load: the 1-minute load average, nil when unknown (then: not idle).
    static func splitPays(cores: Int, load: Double?) -> Bool {
        guard let load, load.isFinite, load >= 0 else { return false }
        return Double(cores) - load >= 3
    }

    /// `splitPays` for this machine, now.
    static func splitPays() -> Bool {
        var averages = [Double](repeating: 0, count: 1)
        let load = getloadavg(&averages, 1) == 1 ? averages[0] : nil
        return splitPays(cores: ProcessInfo.processInfo.activeProcessorCount, load: load)
    }
    /// Problems kept, as `PRAGMA integrity_check(20)` would.
    static let maxLines = 20

    /// Runs the split check on `first` and `second`, two connections to the same store (the first
    /// also reads the list of tables). Returns `["ok"]` or the problems found (at most `maxLines`).
    /// `note` hears each piece as a worker takes it (`integrity_check: 3 of 12 (ZBOOK)`).
    static func run(
        _ first: DatabaseQueue, _ second: DatabaseQueue, note: @escaping ProgressNote.Sink = { _ in }
    ) throws -> [String] {
        let pieces = WorkList(try first.read { db in try plan(db) }, note: note)
        let other = Background { try work(second, pieces) }
        let mine = Result { try work(first, pieces) }
        let theirs = Result { try other.value() }
        let lines = try mine.get() + theirs.get()
        return lines.isEmpty ? ["ok"] : Array(lines.prefix(maxLines))
    }

    /// The statements to run, the longest expected first (greedy scheduling on two workers):
    /// `quick_check` of the store, then `integrity_check(T)` of every table by its estimated size
    /// (rows times one plus its indexes).
    static func plan(_ db: Database) throws -> [String] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT t.name AS name, (SELECT COUNT(*) FROM sqlite_master i WHERE i.type = 'index' AND i.tbl_name = t.name) AS indexes
                FROM sqlite_master t WHERE t.type = 'table' AND t.sql NOT LIKE 'CREATE VIRTUAL%'
                """)
        var tables: [(sql: String, weight: Int64)] = []
        for row in rows {
            guard let name = String.fromDatabaseValue(row["name"] as DatabaseValue) else { continue }
            let indexes = Int64.fromDatabaseValue(row["indexes"] as DatabaseValue) ?? 0
            // The largest rowid estimates the rows in O(log n); a WITHOUT ROWID table has none and
            // is put first (its size is unknown).
            // (an empty table's MAX is NULL: 0 rows; a table it cannot ask is put first)
            let estimate: Int64
            do {
                estimate = try Int64.fetchOne(db, sql: "SELECT MAX(rowid) FROM \(name.sqlIdentifier)") ?? 0
            } catch {
                estimate = .max / 4
            }
            tables.append(
                (
                    "PRAGMA integrity_check(\(name.sqlIdentifier))",
                    estimate.multipliedReportingOverflow(by: 1 + indexes).overflow
                        ? Int64.max : estimate * (1 + indexes)
                ))
        }
        // quick_check reads every page once without index lookups: about as long as the largest
        // table's index comparison on the stores measured, so it goes first.
        return ["PRAGMA quick_check"] + tables.sorted { $0.weight > $1.weight }.map(\.sql)
    }

    /// `quick_check` of the named tables that exist (names compared without case) and their
    /// indexes: what a reader of those tables alone relies on. Returns `["ok"]` or the problems found.
    static func quickCheck(_ queue: DatabaseQueue, tables: [String]) throws -> [String] {
        let wanted = Set(tables.map { $0.uppercased() })
        let lines = try queue.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'").filter {
                wanted.contains($0.uppercased())
            }
            .flatMap { try String.fetchAll(db, sql: "PRAGMA quick_check(\($0.sqlIdentifier))") }.filter { $0 != "ok" }
        }
        return lines.isEmpty ? ["ok"] : Array(lines.prefix(maxLines))
    }

    /// Runs statements from `pieces` on `queue` until none is left; returns the lines that are not "ok".
    private static func work(_ queue: DatabaseQueue, _ pieces: WorkList) throws -> [String] {
        try queue.read { db in
            var problems: [String] = []
            while let sql = pieces.next() {
                let lines = try String.fetchAll(db, sql: sql)
                if lines != ["ok"] { problems += lines.filter { $0 != "ok" } }
            }
            return problems
        }
    }
}

/// The statements not yet taken by a worker, shared by both.
private final class WorkList: Sendable {
    private let items: Mutex<(left: [String], taken: Int)>
    private let count: Int
    private let note: ProgressNote.Sink

    init(_ items: [String], note: @escaping ProgressNote.Sink = { _ in }) {
        self.items = Mutex((items, 0))
        count = items.count
        self.note = note
    }

    /// Takes the next statement, or nil when every one has been taken.
    func next() -> String? {
        let taken = items.withLock { state -> (String, Int)? in
            guard !state.left.isEmpty else { return nil }
            state.taken += 1
            return (state.left.removeFirst(), state.taken)
        }
        guard let (sql, index) = taken else { return nil }
        let prefix = "PRAGMA integrity_check("
        let what =
            sql.hasPrefix(prefix)
            ? String(sql.dropFirst(prefix.count).dropLast()).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            : "every page"
        note("integrity_check: \(index) of \(count) (\(what))")
        return sql
    }
}
