import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// What places an orphaned page (one no intact tree leads to) in a table, and what does not: a
/// page is placed only when the evidence names exactly one table, and otherwise counted as
/// unplaced. Scored as `SalvageDamageTests` scores every kind of damage: no row invented or mixed,
/// every row of an undamaged page salvaged unless the report says why not.
@Suite("salvage: evidence for orphaned pages", .timed)
struct SalvageEvidenceTests {
    /// Where the damage lands besides the overflow page.
    enum Orphaning: String, CaseIterable, CustomTestStringConvertible {
        /// Every interior page of ZITEM (its root too): its leaves are found by the page scan.
        case interiorPages
        /// The same in an auto-vacuum store, whose pointer map hangs each leaf from ZITEM's root.
        case interiorPagesWithPointerMap
        /// Page 1 (sqlite_schema): every table is found by shape and `Z_ENT`, ZAUTHOR, ZSHELF
        /// and ZTAG having the same columns (the schema from a healthy sibling).
        case schemaPage

        var testDescription: String { rawValue }
    }

    /// Books whose cover is kept inline and is long enough to spill onto an overflow page (6,001 bytes).
    static let longCovers = """
        UPDATE ZITEM SET ZCOVER = X'01' || CAST(replace(printf('%3000s', ''), ' ', 'ab') AS BLOB)
            WHERE Z_ENT = 2 AND Z_PK % 37 = 5 AND substr(ZCOVER, 1, 1) = X'01';
        """

    /// A healthy store of the Library model with no rows, for `--schema-from`; `sql` runs on it.
    static func sibling(_ tmp: TempDir, sql: String? = nil) throws -> URL {
        var options = FixtureStore.Options()
        (options.books, options.magazines, options.authors, options.shelves, options.tags, options.externalCovers) = (
            0, 0, 0, 0, 0, 0
        )
        options.storeUUID = "11111111-2222-3333-4444-555555555555"
        let url = tmp.path("sibling/Sibling.sqlite")
        try FixtureStore.write(to: url, options)
        if let sql { try FixtureStore.mutate(url, sql) }
        return url
    }

    /// Rewrites the store at `url` with incremental auto-vacuum (a pointer map), as Core Data's are.
    static func autoVacuum(_ url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            try db.execute(sql: "VACUUM")
            _ = try String.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        try queue.close()
    }

    @Test(
        "an orphaned leaf holding a row whose overflow page is destroyed: its other rows are placed and salvaged, that row counted lost",
        arguments: Orphaning.allCases)
    func brokenOverflowChain(_ orphaning: Orphaning) throws {
        let tmp = try TempDir()
        let sibling = try Self.sibling(tmp)
        let prepare: (URL) throws -> Void = { original in
            try FixtureStore.mutate(original, Self.longCovers)
            if orphaning == .interiorPagesWithPointerMap { try Self.autoVacuum(original) }
        }
        var broken: (leaf: Int, key: Int64, others: Int)?
        let store = try SalvageDamageTests.damaged(tmp, prepare: prepare) { copy, map in
            // A leaf of ZITEM with a row on overflow pages and rows that are whole on the page.
            let leaf = try #require(
                map.leaves["ZITEM"]?.first { leaf in
                    leaf.overflow.count == 1 && leaf.rowids.count >= 3
                }, "no ZITEM leaf with one long cover among other rows")
            let (key, chain) = try #require(leaf.overflow.first)
            broken = (leaf.page, key, leaf.rowids.count - 1)
            let orphaned = orphaning == .schemaPage ? [1] : map.interior["ZITEM"] ?? []
            #expect(!orphaned.isEmpty)
            let pages = orphaned + [chain[0]]
            try StoreDamage.overwrite(copy, pages: pages, pageSize: map.pageSize)
            return Set(pages)
        }
        if orphaning == .interiorPagesWithPointerMap {
            #expect(try DamagedStore(files: StoreFileSet(main: store.damaged)).pointerMap != nil)
        }
        let o = try SalvageDamageTests.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map, extra: orphaning == .schemaPage ? ["--schema-from", sibling.path] : [])
        // Every other row of the leaf is back (the scan used to leave the whole page unplaced).
        SalvageDamageTests.expectSound(o)
        let cell = try #require(broken)
        let item = try #require((o.report["tables"] as? [[String: Any]])?.first { $0["name"] as? String == "ZITEM" })
        #expect(item["lostCells"] as? Int == 1, "\(item)")
        #expect((item["fromOrphanPages"] as? Int ?? 0) >= cell.others, "\(item)")
        let pages = o.report["damagedPages"] as? [[String: Any]] ?? []
        #expect(
            pages.contains {
                $0["page"] as? Int == cell.leaf && ($0["reason"] as? String ?? "").contains("broken overflow chain")
                    && $0["cells"] as? Int == 1
            }, "\(pages)")
        let salvaged = try StoreRows.read(tmp.path("out/Salvaged.sqlite"))
        #expect(salvaged["ZITEM"]?[cell.key] == nil, "the row whose cover was cut short is not salvaged")
    }

    @Test("a row whose last overflow page was zeroed is counted lost, never given back with zeros for its bytes")
    func zeroedOverflowPage() throws {
        let tmp = try TempDir()
        var broken: Int64?
        let prepare: (URL) throws -> Void = { try FixtureStore.mutate($0, Self.longCovers) }
        let store = try SalvageDamageTests.damaged(tmp, prepare: prepare) { copy, map in
            let leaf = try #require(
                map.leaves["ZITEM"]?.first { $0.overflow.count == 1 }, "no ZITEM leaf with a long cover")
            let (key, chain) = try #require(leaf.overflow.first)
            broken = key
            // The chain's last page: its link is 0 whether zeroed or not.
            let last = try #require(chain.last)
            try StoreDamage.zeroPages(copy, pages: [last], pageSize: map.pageSize)
            return [last]
        }
        let o = try SalvageDamageTests.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        SalvageDamageTests.expectSound(o)
        let key = try #require(broken)
        let item = try #require((o.report["tables"] as? [[String: Any]])?.first { $0["name"] as? String == "ZITEM" })
        #expect(item["lostCells"] as? Int == 1, "\(item)")
        let salvaged = try StoreRows.read(tmp.path("out/Salvaged.sqlite"))
        #expect(salvaged["ZITEM"]?[key] == nil, "the row whose cover ends on a zeroed page is not salvaged")
        #expect((salvaged["ZITEM"]?.count ?? 0) > 0)
    }

    @Test(
        "an orphaned leaf whose long row's overflow page belongs to another table's tree: taken for an old copy, left unplaced"
    )
    func overflowPageTakenElsewhere() throws {
        let tmp = try TempDir()
        let prepare: (URL) throws -> Void = { original in try FixtureStore.mutate(original, Self.longCovers) }
        var leaf: PageMap.Leaf?
        let store = try SalvageDamageTests.damaged(tmp, prepare: prepare) { copy, map in
            let found = try #require(map.leaves["ZITEM"]?.first { $0.overflow.count == 1 && $0.rowids.count >= 3 })
            let (key, _) = try #require(found.overflow.first)
            leaf = found
            let interior = map.interior["ZITEM"] ?? []
            try StoreDamage.overwrite(copy, pages: interior, pageSize: map.pageSize)
            // The cell's overflow pointer now names ZAUTHOR's root, a page its tree walk reads.
            let author = try #require(map.roots["ZAUTHOR"])
            try Self.pointOverflow(copy, leaf: found.page, key: key, at: UInt32(author), pageSize: map.pageSize)
            return Set(interior + [found.page])
        }
        let o = try SalvageDamageTests.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map)
        SalvageDamageTests.expectSound(o)
        let keys = try #require(leaf).rowids
        let salvaged = try StoreRows.read(tmp.path("out/Salvaged.sqlite"))
        #expect(keys.allSatisfy { salvaged["ZITEM"]?[$0] == nil }, "rows of the old copy were placed")
        #expect((o.report["unplacedRows"] as? Int ?? 0) >= keys.count, "\(o.report["unplacedRows"] ?? "")")
    }

    /// Rewrites the overflow pointer of the cell with key `key` on table leaf `leaf` to `target`.
    static func pointOverflow(_ store: URL, leaf: Int, key: Int64, at target: UInt32, pageSize: Int) throws {
        let handle = try FileHandle(forUpdating: store)
        defer { try? handle.close() }
        let start = UInt64((leaf - 1) * pageSize)
        try handle.seek(toOffset: start)
        let bytes = try #require(try handle.read(upToCount: pageSize))
        let offset: Int? = bytes.withUnsafeBytes { raw in
            let view = ByteView(raw)
            guard case let .success(page) = BTreePage.parse(view, headerOffset: 0, usable: pageSize) else { return nil }
            for i in 0..<page.cellCount {
                guard let at = page.cellOffset(i, in: view),
                    let cell = BTreePage.leafCell(at: at, in: view, usable: pageSize), cell.rowid == key,
                    cell.overflowPage != nil
                else { continue }
                return cell.localStart + cell.localCount
            }
            return nil
        }
        let pointer = try #require(offset, "no cell \(key) with overflow pages on page \(leaf)")
        try handle.seek(toOffset: start + UInt64(pointer))
        try handle.write(contentsOf: withUnsafeBytes(of: target.bigEndian) { Data($0) })
    }

    @Test(
        "two join tables of the same shape between the same entities, both schema rows lost: their pages stay unplaced, never guessed"
    )
    func sameShapeJoinTables() throws {
        let tmp = try TempDir()
        // A second many-to-many between items and tags: Z_1TAGS's twin in every column.
        let twin = """
            CREATE TABLE Z_1LABELS ( Z_1ITEMS INTEGER, Z_6LABELS INTEGER, PRIMARY KEY (Z_1ITEMS, Z_6LABELS) );
            CREATE INDEX Z_1LABELS_Z_6LABELS_INDEX ON Z_1LABELS (Z_6LABELS, Z_1ITEMS);
            """
        let sibling = try Self.sibling(tmp, sql: twin)
        let prepare: (URL) throws -> Void = { original in
            try FixtureStore.mutate(
                original, twin + "INSERT INTO Z_1LABELS SELECT Z_1ITEMS, Z_6TAGS FROM Z_1TAGS WHERE Z_1ITEMS % 3 = 0;")
        }
        let store = try SalvageDamageTests.damaged(tmp, prepare: prepare) { copy, map in
            try StoreDamage.overwrite(copy, pages: [1], pageSize: map.pageSize)
            return [1]
        }
        let o = try SalvageDamageTests.salvage(
            store.damaged, into: tmp.path("out/Salvaged.sqlite"), original: store.original, lostPages: store.lost,
            map: store.map, extra: ["--schema-from", sibling.path])
        #expect(o.status == 1, "\(o.report["unreadable"] ?? "")")
        #expect(o.invented.isEmpty, "invented or mixed rows: \(o.invented.prefix(5))")
        #expect(o.missed.isEmpty, "rows of the other tables not salvaged: \(o.missed.prefix(5))")
        // Neither table gets a row: each of their leaves fits both.
        let original = try StoreRows.read(store.original)
        let joinRows = (original["Z_1TAGS"]?.count ?? 0) + (original["Z_1LABELS"]?.count ?? 0)
        #expect((original["Z_1LABELS"]?.count ?? 0) > 0)
        let salvaged = try StoreRows.read(tmp.path("out/Salvaged.sqlite"))
        #expect(salvaged["Z_1TAGS"]?.isEmpty ?? true)
        #expect(salvaged["Z_1LABELS"]?.isEmpty ?? true)
        #expect(o.report["unplacedRows"] as? Int == joinRows, "\(o.report["unplacedRows"] ?? "")")
        let leaves = (store.map.leaves["Z_1TAGS"] ?? []).count + (store.map.leaves["Z_1LABELS"] ?? []).count
        #expect(o.report["unplacedPages"] as? Int == leaves, "\(o.report["unplacedPages"] ?? "")")
        #expect(o.checkStatus == 0, "check on the result exits \(o.checkStatus)")
    }

    @Test(
        "the part of a record left on its page when its overflow chain is broken: its shape is read, a header past the page or values not filling its size refused"
    )
    func recordStartOnItsPage() {
        // NULL, an 8-bit integer, 10 bytes of text, 100 bytes of blob: 6 + 1 + 10 + 100 bytes.
        let record: [UInt8] =
            [6, 0, 1, 12 + 2 * 10 + 1, 0x81, 0x54, 7] + Array("0123456789".utf8) + Array(repeating: 0xAB, count: 100)
        #expect(record.count == 117)
        var fields: [FieldValue] = []
        func local(_ count: Int, total: Int) -> RecordDecoder.Defect? {
            Array(record.prefix(count)).withUnsafeBytes {
                RecordDecoder.decodeLocal(ByteView($0), total: total, into: &fields, maxColumns: .max)
            }
        }
        #expect(local(20, total: 117) == nil)
        #expect(fields == [.null, .integer(7), .text(7..<17), .blob(17..<17)])
        // Only the header on the page: the integer is not there to be read.
        #expect(local(6, total: 117) == nil)
        #expect(fields == [.null, .null, .text(6..<6), .blob(6..<6)])
        #expect(local(117, total: 117) == nil)
        #expect(fields == [.null, .integer(7), .text(7..<17), .blob(17..<117)])
        #expect(local(20, total: 118) == .valuesShort)
        #expect(local(20, total: 116) == .valuesOverrun)
        #expect(local(4, total: 117) == .headerSize)
        #expect(local(20, total: 19) == .valuesOverrun)
    }
}
