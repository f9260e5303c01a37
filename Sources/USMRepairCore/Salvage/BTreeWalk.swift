/// Where salvaged rows go (the writer of the result), one row at a time, so that memory does not
/// grow with the number of rows.
protocol RowSink: AnyObject {
    /// Stores one row of table `table` (an index into the salvage's tables). `fields` refer to
    /// `record`'s bytes. `orphan` is the page number when the row comes from a page no intact
    /// tree led to.
    func store(table: Int, rowid: Int64, fields: [FieldValue], record: ByteView, orphan: UInt32?) -> SinkOutcome
    /// Removes the rows of `table` with keys in `range` (an orphaned page found to be one of two
    /// conflicting copies); returns how many were removed.
    func remove(table: Int, range: ClosedRange<Int64>) -> Int
}

/// What the sink did with a row.
enum SinkOutcome: Equatable {
    case stored
    /// A row with this key and the same content is there already.
    case duplicate
    /// A row with this key and other content is there already: not stored.
    case conflict
    /// The destination refused it (a value it cannot hold).
    case refused
}

extension DamagedStore {
    /// One step of a tree walk: a page to read and the keys its rows must have.
    private struct Pending {
        let page: UInt32
        let range: KeyRange
    }

    /// Walks table `index`'s B-tree from its root, handing every intact row to `sink` in key order.
    /// A page that cannot be read, is not a page of this tree, or breaks the key order is recorded
    /// as damaged, and the keys it would have held as lost (where an orphaned page may fill them).
    /// Cells that do not decode are counted as lost; the rest of their page is kept.
    func walk(_ index: Int, tables: inout [SalvageTable], rows: inout [SalvageReport.TableRows], sink: RowSink) {
        guard let root = tables[index].root else { return }
        var fields: [FieldValue] = []
        fields.reserveCapacity(tables[index].columns.count)
        var stack = [Pending(page: root, range: .all)]
        while let step = stack.popLast() {
            let page = step.page
            func lose(_ reason: String, cells: Int? = nil, markDamaged: Bool = true) {
                tables[index].lost.append(step.range)
                if markDamaged {
                    record(page: Int(page), table: tables[index].name, reason: reason, cells: cells)
                    if let cells { rows[index].lostCells += cells } else { rows[index].lostPages += 1 }
                }
            }
            guard page >= 1, Int(page) <= pageCount else {
                if let claimed = pages.claimedPages, Int(page) <= claimed {
                    lose(
                        "past the end of the file (\(pages.filePages) whole pages of the \(claimed) its header declares)"
                    )
                } else {
                    lose("a pointer to page \(page), outside the database (\(pageCount) pages)")
                }
                continue
            }
            guard available(page) else {
                lose(
                    visited.contains(page)
                        ? "reached a second time (a loop or a shared page)"
                        : "a free or reserved page where a tree page belongs")
                continue
            }
            var failure = ""
            var children: [Pending] = []
            let outcome: WalkPage? = withPage(page, failure: &failure) { view -> WalkPage in
                let headerOffset = page == 1 ? 100 : 0
                switch BTreePage.parse(view, headerOffset: headerOffset, usable: usable) {
                case let .failure(defect):
                    let cells =
                        view.u8(headerOffset) == BTreePage.Kind.tableLeaf.rawValue ? view.u16(headerOffset + 3) : nil
                    return .damaged(defect.description, cells: cells.flatMap { $0 <= usable / 2 ? $0 : nil })
                case let .success(parsed) where parsed.kind == .tableInterior:
                    guard let found = interiorChildren(parsed, view, step.range) else {
                        return .damaged(
                            "an interior page whose keys are out of order or outside its parent's", cells: nil)
                    }
                    children = found
                    return .interior
                case let .success(parsed) where parsed.kind == .tableLeaf:
                    return leaf(
                        parsed, view, page: page, range: step.range, table: tables[index], index: index,
                        fields: &fields,
                        rows: &rows[index], sink: sink)
                case let .success(parsed):
                    return .damaged("an index page (type \(parsed.kind.rawValue)) inside a table's tree", cells: nil)
                }
            }
            switch outcome {
            case nil:
                lose("cannot be read: \(failure)")
            case let .damaged(reason, cells)?:
                lose(reason, cells: cells)
            case .interior?:
                visited.insert(page)
                stack.append(contentsOf: children.reversed())
            case let .leaf(lostCells)?:
                visited.insert(page)
                if lostCells > 0 {
                    rows[index].lostCells += lostCells
                    record(
                        page: Int(page), table: tables[index].name, reason: "\(lostCells) of its cells do not decode",
                        cells: lostCells)
                }
            }
        }
    }

    /// What one page of a walk gave.
    private enum WalkPage {
        case interior
        case leaf(lostCells: Int)
        case damaged(String, cells: Int?)
    }

    /// The children of an interior page with the key range of each, or nil when its keys are
    /// not strictly increasing inside `range`.
    private func interiorChildren(_ parsed: BTreePage, _ view: ByteView, _ range: KeyRange) -> [Pending]? {
        guard let right = parsed.rightChild else { return nil }
        var children: [Pending] = []
        children.reserveCapacity(parsed.cellCount + 1)
        var previous = range.after
        for i in 0..<parsed.cellCount {
            guard let offset = parsed.cellOffset(i, in: view),
                let cell = BTreePage.interiorCell(at: offset, in: view, usable: usable)
            else { return nil }
            if let previous, cell.key <= previous { return nil }
            if let limit = range.through, cell.key > limit { return nil }
            children.append(Pending(page: cell.child, range: KeyRange(after: previous, through: cell.key)))
            previous = cell.key
        }
        children.append(Pending(page: right, range: KeyRange(after: previous, through: range.through)))
        return children
    }

    /// Hands the intact rows of a leaf page to the sink; returns how many cells were lost.
    private func leaf(
        _ parsed: BTreePage, _ view: ByteView, page: UInt32, range: KeyRange, table: SalvageTable, index: Int,
        fields: inout [FieldValue], rows: inout SalvageReport.TableRows, sink: RowSink
    ) -> WalkPage {
        var lost = 0
        var previous = range.after
        for i in 0..<parsed.cellCount {
            guard let offset = parsed.cellOffset(i, in: view),
                let cell = BTreePage.leafCell(at: offset, in: view, usable: usable),
                previous.map({ cell.rowid > $0 }) ?? true, range.through.map({ cell.rowid <= $0 }) ?? true
            else {
                lost += 1
                continue
            }
            let stored = withRecord(cell, on: view, leaf: page) { record -> Bool in
                guard RecordDecoder.decode(record, into: &fields, maxColumns: table.columns.count) == nil,
                    table.admits(fields, strict: false)
                else { return false }
                switch sink.store(table: index, rowid: cell.rowid, fields: fields, record: record, orphan: nil) {
                case .stored: rows.salvaged += 1
                case .duplicate: break
                case .conflict: rows.dropped["a second copy of a key with other content", default: 0] += 1
                case .refused: rows.dropped["refused by the result's schema", default: 0] += 1
                }
                return true
            }
            if case .success(true) = stored {
                previous = cell.rowid
            } else {
                lost += 1
            }
        }
        return .leaf(lostCells: lost)
    }

    /// Records a damaged page for the report (the list is capped; the count is not).
    func record(page: Int, table: String?, reason: String, cells: Int?) {
        damagedCount += 1
        if damaged.count < SalvageReport.pageListLimit {
            damaged.append(.init(page: page, table: table, reason: reason, cells: cells))
        }
    }
}
