/// One B-tree page as SQLite lays it out (file format section 1.6): a header, an array of cell
/// pointers, and cells. `parse` checks every field against the page's bounds; the cell readers
/// check each cell's own bounds. Nothing here trusts a byte it has not checked.
struct BTreePage: Sendable, Equatable {
    /// The page types (first byte of the B-tree header).
    enum Kind: UInt8, Sendable {
        case indexInterior = 2
        case tableInterior = 5
        case indexLeaf = 10
        case tableLeaf = 13

        var isInterior: Bool { self == .indexInterior || self == .tableInterior }
        var isTable: Bool { self == .tableInterior || self == .tableLeaf }
    }

    /// Why a page is not a usable B-tree page.
    enum Defect: Error, Equatable, Sendable, CustomStringConvertible {
        case notBTree(UInt8)
        case cellCount(Int)
        case contentStart(Int)
        case cellPointer(index: Int, offset: Int)
        case freeblock(Int)

        var description: String {
            switch self {
            case let .notBTree(byte): "not a B-tree page (type byte \(byte))"
            case let .cellCount(n): "a cell count of \(n) does not fit the page"
            case let .contentStart(offset): "its cell content area starts at \(offset), outside the page"
            case let .cellPointer(index, offset): "cell \(index) points at offset \(offset), outside the cell area"
            case let .freeblock(offset): "its first freeblock is at \(offset), outside the cell area"
            }
        }
    }

    /// A table-leaf cell: a row's key and where its record lies.
    struct LeafCell: Sendable, Equatable {
        /// The rowid (`Z_PK` in a Core Data entity table).
        let rowid: Int64
        /// The record's total size in bytes.
        let payloadSize: Int
        /// Where the part of the record on this page starts, and its length.
        let localStart: Int
        let localCount: Int
        /// The first overflow page holding the rest, when the record does not fit the page.
        let overflowPage: UInt32?
    }

    let kind: Kind
    /// Where the B-tree header starts: 100 on page 1 (after the file header), else 0.
    let headerOffset: Int
    let cellCount: Int
    /// The right-most child of an interior page.
    let rightChild: UInt32?
    /// Where the cell pointer array starts.
    let cellArrayOffset: Int

    /// The largest record believed: SQLite's own limit on a value is 1 GiB (`SQLITE_MAX_LENGTH`).
    static let maxPayload = 1 << 30

    /// Parses the page header and checks the cell pointer array.
    /// - Parameters:
    ///   - page: the page's bytes (its full size; bytes past `usable` are the reserved tail).
    ///   - headerOffset: 100 for page 1, else 0.
    ///   - usable: the page's usable size.
    static func parse(_ page: ByteView, headerOffset: Int, usable: Int) -> Result<BTreePage, Defect> {
        guard usable <= page.count, let type = page.u8(headerOffset) else { return .failure(.notBTree(0)) }
        guard let kind = Kind(rawValue: type) else { return .failure(.notBTree(type)) }
        let headerSize = kind.isInterior ? 12 : 8
        guard let count = page.u16(headerOffset + 3), let rawStart = page.u16(headerOffset + 5),
            let freeblock = page.u16(headerOffset + 1)
        else { return .failure(.notBTree(type)) }
        let arrayStart = headerOffset + headerSize
        let arrayEnd = arrayStart + 2 * count
        guard arrayEnd <= usable else { return .failure(.cellCount(count)) }
        let contentStart = rawStart == 0 ? 65536 : rawStart
        guard contentStart <= usable, count == 0 || contentStart >= arrayEnd else {
            return .failure(.contentStart(contentStart))
        }
        guard freeblock == 0 || (freeblock >= arrayEnd && freeblock <= usable - 4) else {
            return .failure(.freeblock(freeblock))
        }
        var right: UInt32?
        if kind.isInterior {
            guard let child = page.u32(headerOffset + 8) else { return .failure(.notBTree(type)) }
            right = child
        }
        // Every cell must start inside the cell content area (SQLite's iCellFirst...iCellLast).
        for i in 0..<count {
            guard let offset = page.u16(arrayStart + 2 * i), offset >= arrayEnd, offset <= usable - 4 else {
                return .failure(.cellPointer(index: i, offset: page.u16(arrayStart + 2 * i) ?? -1))
            }
        }
        return .success(
            BTreePage(
                kind: kind, headerOffset: headerOffset, cellCount: count, rightChild: right, cellArrayOffset: arrayStart
            ))
    }

    /// The offset of cell `index` (already checked by `parse`).
    func cellOffset(_ index: Int, in page: ByteView) -> Int? {
        guard index >= 0, index < cellCount else { return nil }
        return page.u16(cellArrayOffset + 2 * index)
    }

    /// The child page and key of an interior table cell.
    static func interiorCell(at offset: Int, in page: ByteView, usable: Int) -> (child: UInt32, key: Int64)? {
        guard offset + 5 <= usable, let child = page.u32(offset), let key = page.varint(offset + 4),
            offset + 4 + key.length <= usable
        else { return nil }
        return (child, key.value)
    }

    /// The table-leaf cell at `offset`, when its sizes fit the page.
    static func leafCell(at offset: Int, in page: ByteView, usable: Int) -> LeafCell? {
        guard let payload = page.varint(offset), payload.value >= 0, payload.value <= Int64(maxPayload),
            let rowid = page.varint(offset + payload.length)
        else { return nil }
        let size = Int(payload.value)
        let start = offset + payload.length + rowid.length
        let local = localSize(payload: size, usable: usable)
        guard local >= 0, start + local <= usable else { return nil }
        var overflow: UInt32?
        if local < size {
            guard start + local + 4 <= usable, let page = page.u32(start + local), page >= 2 else { return nil }
            overflow = page
        }
        return LeafCell(
            rowid: rowid.value, payloadSize: size, localStart: start, localCount: local, overflowPage: overflow)
    }

    /// How many bytes of a table-leaf record of `payload` bytes SQLite keeps on the page itself
    /// (the rest goes to overflow pages): file format section 1.6, "X", "M" and "K".
    static func localSize(payload: Int, usable: Int) -> Int {
        let most = usable - 35
        if payload <= most { return payload }
        let least = ((usable - 12) * 32 / 255) - 23
        let k = least + (payload - least) % (usable - 4)
        return k <= most ? k : least
    }
}
