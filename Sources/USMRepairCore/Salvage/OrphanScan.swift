/// The scan for table-leaf pages that no intact tree leads to (their interior page, or their
/// table's root, was lost). A page is placed in a table only when all of these hold, and
/// otherwise counted as unplaced, never guessed:
/// 1. it is not free, not read before, and every one of its cells decodes, keys strictly rising;
///    but for cells whose overflow chain is broken (an overflow page destroyed): such a cell is
///    lost, and counted so, but its header and the values on the page must still decode to
///    exactly its declared size, its first overflow page must not belong to anything else (a
///    tree, the freelist, another page in the pointer map: the page would be an old copy), and
///    at least one cell of the page must be whole;
/// 2. every row fits the table's shape: column count, the `Z_PK` slot NULL, each value of a
///    type its column's affinity stores, `Z_ENT` one of the table's entities (for a cell lost to
///    its overflow chain: the types its header declares, and the values on the page);
/// 3. all its keys lie in one range of that table whose pages were lost (so it cannot be an old
///    copy of keys an intact page holds);
/// 4. where the file has a pointer map, the map hangs it from that table's root;
/// 5. exactly one table is left. Two placed pages of one table whose key spans overlap are two
///    versions of the same rows: both are taken out again.
extension DamagedStore {
    /// A page placed in a table.
    struct Placement {
        let table: Int
        let first: Int64
        let last: Int64
        let page: UInt32
        var rows: Int
        /// Cells lost to a broken overflow chain.
        var lostCells = 0
        var void = false
    }

    /// What the scan found.
    struct ScanResult {
        var placements: [Placement] = []
        var unplacedPages = 0
        var unplacedRows = 0
    }

    /// Scans every page not read yet for table-leaf pages of the tables in `eligible` (those with
    /// lost key ranges) and hands the rows of each page placed to `sink`. Only the `final` scan
    /// (after every tree was walked) counts the table leaves it could not place: an earlier one,
    /// for `sqlite_schema` or the bookkeeping tables, meets the pages of trees not walked yet.
    func scanOrphans(
        eligible: [Int], tables: [SalvageTable], rows: inout [SalvageReport.TableRows], sink: RowSink,
        final: Bool = true, result: inout ScanResult
    ) {
        guard !eligible.isEmpty, pageCount > 0 else { return }
        var fields: [FieldValue] = []
        for number in 1...pageCount {
            let page = UInt32(number)
            guard available(page) else { continue }
            // The pointer map says what a page is without reading it.
            switch mapEntry(page) {
            case .free?, .firstOverflow?, .overflow?: continue
            default: break
            }
            var candidates = eligible
            var cellCount = 0
            var whole = 0
            let readable: Void? = withPage(page) { view in
                let headerOffset = page == 1 ? 100 : 0
                guard case let .success(parsed) = BTreePage.parse(view, headerOffset: headerOffset, usable: usable),
                    parsed.kind == .tableLeaf, parsed.cellCount > 0
                else {
                    candidates = []
                    return
                }
                cellCount = parsed.cellCount
                var keys: (first: Int64, last: Int64)?
                var previous: Int64?
                for i in 0..<parsed.cellCount {
                    guard let offset = parsed.cellOffset(i, in: view),
                        let cell = BTreePage.leafCell(at: offset, in: view, usable: usable),
                        previous.map({ cell.rowid > $0 }) ?? true
                    else {
                        candidates = []
                        return
                    }
                    previous = cell.rowid
                    let fits = withRecord(cell, on: view, leaf: page, mark: false) { record -> Bool in
                        guard RecordDecoder.decode(record, into: &fields, maxColumns: Int.max) == nil else {
                            return false
                        }
                        candidates = candidates.filter { tables[$0].admits(fields, strict: true) }
                        return true
                    }
                    switch fits {
                    case .success(true):
                        whole += 1
                    case .failure(.overflow), .failure(.tooLarge):
                        // The row is lost with its chain (or too long to read here); what is on the page must still be one of the table's.
                        guard let first = cell.overflowPage, !overflowTaken(first, leaf: page),
                            let local = view.slice(cell.localStart..<(cell.localStart + cell.localCount)),
                            RecordDecoder.decodeLocal(
                                local, total: cell.payloadSize, into: &fields, maxColumns: Int.max)
                                == nil
                        else {
                            candidates = []
                            return
                        }
                        candidates = candidates.filter { tables[$0].admits(fields, strict: true) }
                    case .success(false), .failure(.outsidePage):
                        candidates = []
                        return
                    }
                    guard !candidates.isEmpty else { return }
                    keys = (keys?.first ?? cell.rowid, cell.rowid)
                }
                guard let keys, whole > 0 else { return }
                candidates = candidates.filter { tables[$0].lostRangeHolds(keys.first, keys.last) }
                if pointerMap != nil, let root = mapRoot(page) {
                    let rooted = candidates.filter { tables[$0].root == root }
                    candidates = rooted.isEmpty ? candidates.filter { tables[$0].root == nil } : rooted
                }
                guard candidates.count == 1, let table = candidates.first else { return }
                place(
                    page, view, parsed, table: table, keys: keys, tables: tables, fields: &fields, rows: &rows,
                    sink: sink,
                    result: &result)
            }
            // A table leaf outside every tree that no table takes: counted, never guessed.
            if final, readable != nil, cellCount > 0, !visited.contains(page) {
                result.unplacedPages += 1
                result.unplacedRows += cellCount
            }
        }
    }

    /// True when `first`, the first overflow page of a cell on orphaned page `leaf`, belongs to
    /// something else: read as part of a tree, free, or hung by the pointer map from another page.
    /// The leaf is then an old copy whose overflow pages were used again, not a live page whose
    /// overflow page was destroyed.
    private func overflowTaken(_ first: UInt32, leaf: UInt32) -> Bool {
        if Int(first) <= pageCount, visited.contains(first) || freelist.pages.contains(first) { return true }
        if pointerMap != nil, let entry = mapEntry(first), entry != .firstOverflow(cellPage: leaf) { return true }
        return false
    }

    /// Takes page `page` into table `table`, unless its keys overlap a page placed there before
    /// (then both are taken out again and counted as unplaced).
    private func place(
        _ page: UInt32, _ view: ByteView, _ parsed: BTreePage, table: Int, keys: (first: Int64, last: Int64),
        tables: [SalvageTable], fields: inout [FieldValue], rows: inout [SalvageReport.TableRows], sink: RowSink,
        result: inout ScanResult
    ) {
        if let other = result.placements.firstIndex(where: {
            $0.table == table && $0.first <= keys.last && keys.first <= $0.last
        }) {
            let earlier = result.placements[other]
            if !earlier.void {
                let removed = sink.remove(table: table, range: earlier.first...earlier.last)
                rows[table].salvaged -= removed
                rows[table].fromOrphanPages -= removed
                rows[table].lostCells -= earlier.lostCells
                result.placements[other].void = true
                result.unplacedPages += 1
                result.unplacedRows += earlier.rows + earlier.lostCells
            }
            // This page is counted as unplaced by the caller (it stays unread as far as trees go).
            record(
                page: Int(page), table: tables[table].name,
                reason:
                    "an orphaned page whose keys overlap those of orphaned page \(earlier.page): two versions of the same rows, neither kept",
                cells: parsed.cellCount)
            return
        }
        var stored = 0
        var lost = 0
        for i in 0..<parsed.cellCount {
            guard let offset = parsed.cellOffset(i, in: view),
                let cell = BTreePage.leafCell(at: offset, in: view, usable: usable)
            else { continue }
            let read: Result<Void, CellFailure> = withRecord(cell, on: view, leaf: page) { record in
                guard RecordDecoder.decode(record, into: &fields, maxColumns: tables[table].columns.count) == nil else {
                    return
                }
                switch sink.store(table: table, rowid: cell.rowid, fields: fields, record: record, orphan: page) {
                case .stored:
                    stored += 1
                case .duplicate: break
                case .conflict: rows[table].dropped["a second copy of a key with other content", default: 0] += 1
                case .refused: rows[table].dropped["refused by the result's schema", default: 0] += 1
                }
            }
            if case .failure = read { lost += 1 }
        }
        visited.insert(page)
        rows[table].salvaged += stored
        rows[table].fromOrphanPages += stored
        if lost > 0 {
            rows[table].lostCells += lost
            record(
                page: Int(page), table: tables[table].name,
                reason: "an orphaned page: \(lost) of its cells have a broken overflow chain", cells: lost)
        }
        result.placements.append(
            Placement(table: table, first: keys.first, last: keys.last, page: page, rows: stored, lostCells: lost))
    }
}
