import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Each kind of damage of issue 17 on a fixture store made here, salvaged in process, and the
/// result scored against the healthy original: every salvaged row identical to the original's row
/// with its key (or differing only by a reference the report says was cut), every row whose page
/// was not damaged salvaged, and the result passing `check`.
@Suite("salvage: damage kinds", .timed)
struct SalvageDamageTests {
    /// A Library store with several pages per table and interior pages in ZITEM and Z_1TAGS.
    static func options(walOnlyBooks: Int = 0) -> FixtureStore.Options {
        var o = FixtureStore.Options()
        o.books = 2500
        o.magazines = 400
        o.authors = 40
        o.shelves = 8
        o.tags = 30
        o.externalCovers = 3
        o.walOnlyBooks = walOnlyBooks
        return o
    }

    /// What a salvage of a damaged copy gave, scored.
    struct Outcome {
        let status: Int32
        let report: [String: Any]
        /// Salvaged rows not identical to the original's (nor cut-equal), with why.
        var invented: [String] = []
        /// Rows of the original on undamaged pages missing from the salvage (join rows cut excepted).
        var missed: [String] = []
        /// Rows identical but for references set to NULL, by `table.column`.
        var cut: [String: Int] = [:]
        /// Join rows of undamaged pages missing (what the report's join-row cuts must account for).
        var joinRowsMissing = 0
        var checkStatus: Int32 = -1

        var reportedCuts: [String: Int] {
            var result: [String: Int] = [:]
            for cut in report["referencesCut"] as? [[String: Any]] ?? [] {
                result[
                    "\(cut["kind"] as? String ?? ""):\(cut["table"] as? String ?? "").\(cut["column"] as? String ?? "")"
                ] = cut["rows"] as? Int ?? 0
            }
            return result
        }
    }

    /// Salvages `damaged` into `output` and scores it against `original` (a healthy copy), the
    /// rows on `lostPages` (page numbers of the original) being the ones that may be missing.
    static func salvage(
        _ damaged: URL, into output: URL, original: URL, lostPages: Set<Int>, map: PageMap,
        extra: [String] = []
    ) throws -> Outcome {
        let r = USM.run(["salvage", damaged.path, output.path, "--json"] + extra)
        return try score(
            Outcome(status: r.status, report: r.details), output: output, original: original, lostPages: lostPages,
            map: map)
    }

    /// Scores the store at `output` (salvaged from a damaged copy of `original`, whose pages
    /// `lostPages` were damaged) against `original`: rows invented or missed, references cut.
    static func score(_ outcome: Outcome, output: URL, original: URL, lostPages: Set<Int>, map: PageMap) throws
        -> Outcome
    {
        var outcome = outcome
        guard FileManager.default.fileExists(atPath: output.path) else { return outcome }
        outcome.checkStatus = USM.run(["check", "--store", output.path]).status
        let before = try StoreRows.read(original)
        let after = try StoreRows.read(output)
        let lost = map.rows(on: lostPages)
        let references: Set<String> = ["ZAUTHOR", "ZSHELF", "Z_FOK_SHELF", "ZCOVER"]
        for (table, rows) in after where table != "Z_METADATA" {
            let columns = try columnNames(output, table)
            for (key, values) in rows {
                guard let old = before[table]?[key] else {
                    outcome.invented.append("\(table) \(key): no such key in the original")
                    continue
                }
                var nulled: [String] = []
                var same = true
                for (i, (a, b)) in zip(values, old).enumerated() where a != b {
                    if table == "Z_PRIMARYKEY", columns[i] == "Z_MAX" { continue }
                    if a.isNull, references.contains(columns[i]) { nulled.append(columns[i]) } else { same = false }
                }
                if !same || values.count != old.count {
                    outcome.invented.append("\(table) \(key): \(values) vs \(old)")
                } else {
                    // ZSHELF and its order column are cut together: counted once, as the key.
                    for column in nulled where column != "Z_FOK_SHELF" {
                        outcome.cut["\(table).\(column)", default: 0] += 1
                    }
                }
            }
        }
        for (table, rows) in before where table != "Z_METADATA" {
            for key in rows.keys where !(lost[table]?.contains(key) ?? false) && after[table]?[key] == nil {
                if table.hasPrefix("Z_1") {
                    outcome.joinRowsMissing += 1
                } else {
                    outcome.missed.append("\(table) \(key)")
                }
            }
        }
        return outcome
    }

    static func columnNames(_ store: URL, _ table: String) throws -> [String] {
        let queue = try DatabaseQueue(
            path: store.path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        return try queue.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
        }
    }

    /// The checks every damage kind shares: precision, recall, cuts reported, `check` passes.
    static func expectSound(_ o: Outcome, status: Int32 = 1, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(o.status == status, "exit \(o.status): \(o.report["unreadable"] ?? "")", sourceLocation: sourceLocation)
        #expect(o.invented.isEmpty, "invented or mixed rows: \(o.invented.prefix(5))", sourceLocation: sourceLocation)
        #expect(
            o.missed.isEmpty, "rows of undamaged pages not salvaged: \(o.missed.count) \(o.missed.prefix(5))",
            sourceLocation: sourceLocation)
        #expect(o.checkStatus == 0, "check on the result exits \(o.checkStatus)", sourceLocation: sourceLocation)
        let reported = o.reportedCuts
        for (column, count) in o.cut {
            #expect(
                reported["to-one:\(column)"] ?? reported["external-data:\(column)"] == count,
                "\(column): \(count) cut, report says \(reported)", sourceLocation: sourceLocation)
        }
        let joinCuts = reported.filter { $0.key.hasPrefix("join-row:") }.values.reduce(0, +)
        #expect(
            o.joinRowsMissing == joinCuts, "join rows missing \(o.joinRowsMissing), reported cut \(joinCuts)",
            sourceLocation: sourceLocation)
    }

    /// A fixture and a damaged copy of it: `damage(copy, map)` returns the pages it damaged.
    static func damaged(
        _ tmp: TempDir, options: FixtureStore.Options = options(), prepare: ((URL) throws -> Void)? = nil,
        _ damage: (URL, PageMap) throws -> Set<Int>
    ) throws -> (original: URL, damaged: URL, lost: Set<Int>, map: PageMap) {
        let original = tmp.path("original/Library.sqlite")
        try FixtureStore.write(to: original, options)
        try prepare?(original)
        let map = try PageMap.read(original)
        try FileManager.default.createDirectory(at: tmp.path("damaged"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: tmp.path("original").path) {
            try FileManager.default.copyItem(at: tmp.path("original/\(name)"), to: tmp.path("damaged/\(name)"))
        }
        let copy = tmp.path("damaged/Library.sqlite")
        let lost = try damage(copy, map)
        return (original, copy, lost, map)
    }

    @Test(
        "random pages overwritten (1 %, 5 %, 20 %): no row invented, every row of an undamaged page salvaged",
        arguments: [1, 5, 20])
    func randomPages(percent: Int) throws {
        let tmp = try TempDir()
        let store = try Self.damaged(tmp) { copy, map in
            var rng = SeededRandom(seed: UInt64(percent))
            // Core Data's bookkeeping pages are spared here (their loss is `bookkeepingLost`'s case).
            let bookkeeping = Set(["Z_PRIMARYKEY", "Z_METADATA"].flatMap { (map.leaves[$0] ?? []).map(\.page) })
            var candidates = Array(2...map.pageCount).filter { !bookkeeping.contains($0) }
            var chosen: [Int] = []
            for _ in 0..<max(1, map.pageCount * percent / 100) {
                chosen.append(candidates.remove(at: Int(rng.next() % UInt64(candidates.count))))
            }
            try StoreDamage.overwrite(copy, pages: chosen, pageSize: map.pageSize, seed: UInt64(percent))
            return Set(chosen)
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
        #expect((o.report["damagedPageCount"] as? Int ?? 0) > 0)
    }

    @Test("an interior page destroyed: its leaves are found by the page scan and every row comes back")
    func interiorDestroyed() throws {
        let tmp = try TempDir()
        let store = try Self.damaged(tmp) { copy, map in
            let interior = try #require(
                map.interior["ZITEM"]?.first { $0 != map.roots["ZITEM"] } ?? map.interior["ZITEM"]?.first)
            try StoreDamage.overwrite(copy, pages: [interior], pageSize: map.pageSize)
            return [interior]
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
        let item = try #require((o.report["tables"] as? [[String: Any]])?.first { $0["name"] as? String == "ZITEM" })
        #expect((item["fromOrphanPages"] as? Int ?? 0) > 0, "\(item)")
        #expect(o.cut.isEmpty, "nothing is lost, so nothing is cut: \(o.cut)")
    }

    @Test("a page's header zeroed: the rows under it come back through the page scan")
    func pageHeaderZeroed() throws {
        let tmp = try TempDir()
        let store = try Self.damaged(tmp) { copy, map in
            let page = try #require(map.interior["Z_1TAGS"]?.first ?? map.interior["ZITEM"]?.first)
            try StoreDamage.zeroPageHeader(copy, page: page, pageSize: map.pageSize)
            return [page]
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
    }

    @Test("the file truncated mid-page: every row before the cut is salvaged, references to the rest cut")
    func truncated() throws {
        let tmp = try TempDir()
        let store = try Self.damaged(tmp) { copy, map in
            let cutPage = map.pageCount * 8 / 10
            try StoreDamage.truncate(copy, to: (cutPage - 1) * map.pageSize + map.pageSize / 2)
            return Set(cutPage...map.pageCount)
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
        // The header still declares the original size: salvage reads what exists and says the rest is past the end.
        let source = o.report["source"] as? [String: Any] ?? [:]
        #expect(source["pages"] as? Int == store.lost.min(), "\(source)")  // the whole pages and the cut one
        #expect(
            "\(o.report)".contains("of the \(store.map.pageCount) its header declares"),
            "\(o.report["unreadable"] ?? "")")
    }

    @Test(
        "a header declaring 2^31 pages: only the pages that exist are read (no bitmap or scan that size), every row comes back"
    )
    func headerClaimsHugeSize() throws {
        let tmp = try TempDir()
        let store = try Self.damaged(tmp) { copy, _ in
            try StoreDamage.declarePages(copy, 0x7FFF_FFF0)
            return []
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o, status: 0)
        let source = o.report["source"] as? [String: Any] ?? [:]
        #expect(source["pages"] as? Int == store.map.pageCount, "\(source)")
        #expect((source["pagesRead"] as? Int ?? .max) <= store.map.pageCount * 2, "\(source)")
    }

    @Test("the -wal torn in its last frame: the last transaction is left out (and said), everything before it salvaged")
    func walTorn() throws {
        let tmp = try TempDir()
        var walPages: Set<Int> = []
        let store = try Self.damaged(tmp, options: Self.options(walOnlyBooks: 60)) { copy, map in
            // FixtureStore commits the WAL-only books in one transaction: every page it wrote is lost.
            walPages = try Set(WALIndex.read(path: copy.path + "-wal").frames.keys.map(Int.init))
            try StoreDamage.tearWAL(copy, pageSize: map.pageSize)
            return walPages
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
        #expect(
            (o.report["unreadable"] as? [String] ?? []).contains { $0.contains("-wal") },
            "\(o.report["unreadable"] ?? "")")
        #expect(!walPages.isEmpty)
    }

    @Test(
        "sqlite_schema's page destroyed: with --schema-from a healthy sibling, the tables are found by shape and Z_ENT")
    func schemaDestroyed() throws {
        let tmp = try TempDir()
        var sibling = FixtureStore.Options()
        (sibling.books, sibling.magazines, sibling.authors, sibling.shelves, sibling.tags, sibling.externalCovers) = (
            0, 0, 0, 0, 0, 0
        )
        sibling.storeUUID = "11111111-2222-3333-4444-555555555555"
        try FixtureStore.write(to: tmp.path("sibling/Sibling.sqlite"), sibling)
        let store = try Self.damaged(tmp) { copy, map in
            try StoreDamage.overwrite(copy, pages: [1], pageSize: map.pageSize)
            return [1]
        }
        let without = USM.run(["salvage", store.damaged.path, tmp.path("out/NoSchema.sqlite").path])
        #expect(without.status == 2)
        #expect(without.stderr.contains("--schema-from"))
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map, extra: ["--schema-from", tmp.path("sibling/Sibling.sqlite").path])
        Self.expectSound(o)
        #expect((o.report["schema"] as? String) == "schema-from")
        #expect((o.report["source"] as? [String: Any])?["header"] as? String != "intact")
    }

    @Test(
        "a leaf of sqlite_schema lost without --schema-from: every table read is salvaged, and the report says tables may be missing and how to get them"
    )
    func schemaPartlyLost() throws {
        let tmp = try TempDir()
        // Views with long statements spread sqlite_schema over several leaves, the last holding only views.
        let views = (1...40).map {
            "CREATE VIEW usm_pad_\($0) AS SELECT '\(String(repeating: "x", count: 400))' AS pad;"
        }.joined(separator: "\n")
        let prepare: (URL) throws -> Void = { original in try FixtureStore.mutate(original, views) }
        let store = try Self.damaged(tmp, prepare: prepare) { copy, map in
            let leaves = (map.leaves["sqlite_schema"] ?? map.leaves["sqlite_master"] ?? []).map(\.page)
            #expect(leaves.count >= 3, "sqlite_schema leaves: \(leaves)")
            guard let last = leaves.last else { return [] }
            try StoreDamage.overwrite(copy, pages: [last], pageSize: map.pageSize)
            return [last]
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
        let unreadable = o.report["unreadable"] as? [String] ?? []
        #expect(unreadable.contains { $0.contains("not salvaged") && $0.contains("--schema-from") }, "\(unreadable)")
    }

    @Test("the header zeroed: the page size is found from the pages and every row comes back")
    func headerZeroed() throws {
        let tmp = try TempDir()
        let store = try Self.damaged(tmp) { copy, _ in
            try StoreDamage.zeroFileHeader(copy)
            return []
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o, status: 0)
        let header = (o.report["source"] as? [String: Any])?["header"] as? String ?? ""
        #expect(header.hasPrefix("inferred"), "\(header)")
    }

    @Test("a freelist that loops: the walk stops, the loop is reported, every row comes back")
    func freelistLoop() throws {
        let tmp = try TempDir()
        let prepare: (URL) throws -> Void = { original in
            try FixtureStore.mutate(
                original,
                """
                CREATE TABLE usm_filler (x BLOB);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO usm_filler SELECT randomblob(1500) FROM n;
                DROP TABLE usm_filler;
                """)
        }
        let store = try Self.damaged(tmp, prepare: prepare) { copy, map in
            let trunks = try StoreDamage.loopFreelist(copy, pageSize: map.pageSize)
            #expect(!trunks.isEmpty)
            return []
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
        #expect(
            (o.report["unreadable"] as? [String] ?? []).contains { $0.contains("loops") },
            "\(o.report["unreadable"] ?? "")")
    }

    @Test("the authors' and tags' pages lost: to-one keys set to NULL and join rows removed, each counted")
    func referencesCut() throws {
        let tmp = try TempDir()
        let store = try Self.damaged(tmp) { copy, map in
            let pages = (map.leaves["ZAUTHOR"] ?? []).map(\.page) + (map.leaves["ZTAG"] ?? []).map(\.page)
            try StoreDamage.overwrite(copy, pages: pages, pageSize: map.pageSize)
            return Set(pages)
        }
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        Self.expectSound(o)
        #expect((o.cut["ZITEM.ZAUTHOR"] ?? 0) > 0, "\(o.cut)")
        #expect(o.joinRowsMissing > 0)
    }

    @Test(
        "Z_PRIMARYKEY's page lost: refused without a sibling (rows could not be named); with --schema-from its rows come back"
    )
    func bookkeepingLost() throws {
        let tmp = try TempDir()
        var sibling = FixtureStore.Options()
        (sibling.books, sibling.magazines, sibling.authors, sibling.shelves, sibling.tags, sibling.externalCovers) = (
            0, 0, 0, 0, 0, 0
        )
        try FixtureStore.write(to: tmp.path("sibling/Sibling.sqlite"), sibling)
        let store = try Self.damaged(tmp) { copy, map in
            let pages = (map.leaves["Z_PRIMARYKEY"] ?? []).map(\.page)
            try StoreDamage.overwrite(copy, pages: pages, pageSize: map.pageSize)
            return Set(pages)
        }
        let refused = USM.run(["salvage", store.damaged.path, tmp.path("out/Refused.sqlite").path])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("Z_PRIMARYKEY lost the entities"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: tmp.path("out/Refused.sqlite").path))
        let o = try Self.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map, extra: ["--schema-from", tmp.path("sibling/Sibling.sqlite").path])
        // Z_PRIMARYKEY's rows come from the sibling (Z_MAX raised to the keys): all of them are back.
        Self.expectSound(o)
        #expect(
            Set(o.report["entitiesRestored"] as? [String] ?? []) == [
                "Item", "Book", "Magazine", "Author", "Shelf", "Tag",
            ])
    }
}
