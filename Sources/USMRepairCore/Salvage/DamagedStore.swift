import Foundation

/// A damaged store's main file and `-wal`, read page by page with salvage's own reader of the
/// SQLite file format: the header (or, when it is lost, a page size found from the pages), the WAL
/// frames of the last valid commit, the freelist and the pointer map. The walks over B-trees
/// (`TreeWalk`) and the scan for orphaned pages (`OrphanScan`) read through it; it remembers which
/// pages were read and used (`visited`), so that each page is read once.
final class DamagedStore {
    /// How the header was found.
    enum HeaderState: Equatable, Sendable {
        /// The file's own header.
        case intact
        /// Lost; the page size was found from the pages (and the WAL, when it has one).
        case inferred(pageSize: Int, reason: String)
    }

    let files: StoreFileSet
    let header: DatabaseHeader
    let headerState: HeaderState
    let pages: PageSource
    /// Pages read and taken as part of a tree (B-tree pages, overflow pages, freelist trunks).
    var visited: PageBitmap
    /// Free pages (freelist, and free entries of the pointer map when it has them).
    var freelist: Freelist
    /// The pointer map, in auto-vacuum files.
    var pointerMap: PointerMap?
    /// Pages that could not be read or parsed where a tree needed them, with why.
    var damaged: [SalvageReport.DamagedPage] = []
    /// All damaged pages, listed or not.
    var damagedCount = 0
    /// Pages read so far (each counted once).
    private(set) var reads = 0
    /// Why frames of the `-wal` were not applied, when some were (a loss the report states).
    var walNote: String?

    private let buffer: UnsafeMutableRawBufferPointer
    private let overflowBuffer: UnsafeMutableRawBufferPointer
    /// The record of the cell being decoded, when it spills to overflow pages.
    var payload: [UInt8] = []
    /// While set, a record whose payload is longer is not assembled (`.tooLarge`) and counted in
    /// `oversized`: the schema walk's bound, so a 50 MB schema text is refused before it is read.
    var maxPayload: Int?
    /// Records refused by `maxPayload` (those a walk took as the table's, `mark`).
    var oversized = 0

    /// Opens `files` for salvage.
    /// - Throws: `notFound`, `unreadable`, `notSQLite` (no page size can be found: not an SQLite file).
    init(files: StoreFileSet) throws {
        self.files = files
        guard let status = FileStatus.resolve(files.main.path) else {
            throw USMError.notFound(path: files.main.path, what: "source store")
        }
        guard status.kind == .file else { throw USMError.wrongKind(path: files.main.path, expected: "a regular file") }
        guard status.size > 0 else { throw USMError.notSQLite(path: files.main.path, reason: "the file is empty") }
        let start = try Self.readStart(files.main.path, count: PageSizeProbe.window)
        var wal: WALIndex?
        var walNote: String?
        if FileStatus.resolve(files.wal.path)?.kind == .file {
            let index = try WALIndex.read(path: files.wal.path)
            if !index.file.headerValid {
                // An empty -wal is what every checkpoint leaves: nothing is lost then.
                if index.file.size > 0 {
                    walNote =
                        "-wal: not used, \(index.file.headerProblem ?? "its header is invalid") (SQLite ignores it too)"
                }
            } else if index.frames.isEmpty {
                walNote =
                    index.file.cutFrames > 0
                    ? "-wal: its \(index.file.cutFrames) frames hold no valid commit; none was applied (SQLite applies none either)"
                    : nil
            } else {
                wal = index
                if index.file.cutFrames > 0 {
                    walNote =
                        "-wal: \(index.file.cutFrames) frames after its last valid commit (a transaction cut short or never committed) were left out, as SQLite leaves them out"
                }
            }
        }
        let found = start.withUnsafeBytes { DatabaseHeader.parse(ByteView($0)) }
        var state = HeaderState.intact
        var header: DatabaseHeader
        if let found {
            header = found
            if let wal, wal.file.pageSize != found.pageSize {
                walNote = "-wal: not used, its page size \(wal.file.pageSize) is not the database's \(found.pageSize)"
            }
        } else {
            let probed = start.withUnsafeBytes { PageSizeProbe.infer(ByteView($0), fileSize: status.size) }
            guard let size = wal?.file.pageSize ?? probed else {
                throw USMError.notSQLite(
                    path: files.main.path, reason: "no SQLite header and no page size fits its pages")
            }
            let why =
                start.starts(with: DatabaseHeader.magic)
                ? "the header's fields are invalid" : "the header is lost (no SQLite magic string)"
            state = .inferred(pageSize: size, reason: why)
            // Page 2 of an auto-vacuum file is the first pointer-map page: its first entry is page 3's.
            header = DatabaseHeader.assumed(pageSize: size, hasPointerMap: false)
        }
        if let w = wal, w.file.pageSize != header.pageSize { wal = nil }
        self.walNote = walNote
        self.header = header
        headerState = state
        pages = try PageSource(
            main: files.main.path, pageSize: header.pageSize,
            declaredPages: state == .intact ? header.declaredPages : nil,
            wal: wal, walPath: wal == nil ? nil : files.wal.path)
        visited = PageBitmap(pageCount: pages.pageCount)
        freelist = Freelist(pages: PageBitmap(pageCount: pages.pageCount))
        buffer = .allocate(byteCount: header.pageSize, alignment: 8)
        overflowBuffer = .allocate(byteCount: header.pageSize, alignment: 8)
        if header.largestRoot != 0 {
            pointerMap = PointerMap(usable: header.usableSize, pageSize: header.pageSize, pageCount: pages.pageCount)
        }
    }

    deinit {
        buffer.deallocate()
        overflowBuffer.deallocate()
    }

    /// The usable bytes of a page.
    var usable: Int { header.usableSize }
    /// Pages in the database.
    var pageCount: Int { pages.pageCount }

    /// Reads the freelist (when the header names one) and marks its pages free.
    func readFreelist() {
        guard header.freelistTrunk != 0 || header.freelistCount != 0 else {
            freelist.complete = headerState == .intact
            return
        }
        freelist = Freelist.walk(
            first: header.freelistTrunk, declared: header.freelistCount, pageCount: pageCount, usable: usable
        ) { page, body in
            withPage(page, overflow: true) { body($0) } != nil
        }
    }

    /// True when `page` may be read as part of a tree: in range, not read before, not free, not a
    /// pointer-map page or the lock-byte page.
    func available(_ page: UInt32) -> Bool {
        guard page >= 1, Int(page) <= pageCount, !visited.contains(page), !freelist.pages.contains(page) else {
            return false
        }
        if let map = pointerMap, map.isMapPage(page) || page == map.lockPage { return false }
        return true
    }

    /// Calls `body` with page `number`'s bytes; nil (and `failure` set) when it cannot be read.
    /// `overflow` reads into the second buffer, so a leaf page stays in the first meanwhile.
    func withPage<T>(
        _ number: UInt32, overflow: Bool = false, failure: UnsafeMutablePointer<String>? = nil, _ body: (ByteView) -> T
    ) -> T? {
        let target = overflow ? overflowBuffer : buffer
        switch pages.read(number, into: target) {
        case .read:
            reads += 1
            return body(ByteView(UnsafeRawBufferPointer(target)))
        case .missing:
            failure?.pointee = "past the end of the file (\(pages.filePages) whole pages)"
        case let .short(bytes):
            reads += 1
            failure?.pointee = "the file ends \(bytes) bytes into it"
        case let .failed(code):
            failure?.pointee = "cannot be read: \(errnoDescription(code))"
        }
        return nil
    }

    /// The pointer-map entry of `page`, when the file has a map.
    func mapEntry(_ page: UInt32) -> PointerMap.Entry? {
        guard var map = pointerMap else { return nil }
        let entry = map.entry(page) { p, body in withPage(p, overflow: true) { body($0) } != nil }
        pointerMap = map
        return entry
    }

    /// The root the pointer map hangs `page` from, when the file has a map and the chain holds.
    func mapRoot(_ page: UInt32) -> UInt32? {
        guard var map = pointerMap else { return nil }
        let root = map.root(of: page) { p, body in withPage(p, overflow: true) { body($0) } != nil }
        pointerMap = map
        return root
    }

    /// Collects the record of `cell` (on page `leaf`, whose bytes are `page`) into one contiguous
    /// buffer and calls `body` with it: the page's own bytes when it fits, else the local part and
    /// its overflow chain. Returns why the chain is broken instead. Overflow pages carry no
    /// checksum, so a chain is believed only when every page on it is available (never read for
    /// another cell, not free), the pointer map (when the file has one) names each page as the
    /// overflow page of the one before, and the last page's link is 0, as SQLite always leaves it:
    /// a page overwritten by other bytes fails one of these, and its row is lost, never mixed.
    /// A page of zeros only is not believed either: its link of 0 would pass as a chain's end, and
    /// a zeroed page (a lost write, a filesystem's repair) is a common kind of damage; a value whose
    /// last overflow page really holds nothing but zeros is counted lost, never given back wrong.
    /// `mark` takes the pages as read (a scan that only looks, and comes back for the cells it
    /// keeps, passes false the first time).
    func withRecord<T>(
        _ cell: BTreePage.LeafCell, on page: ByteView, leaf: UInt32, mark: Bool = true,
        _ body: (ByteView) -> T
    ) -> Result<T, CellFailure> {
        guard let local = page.slice(cell.localStart..<(cell.localStart + cell.localCount)) else {
            return .failure(.outsidePage)
        }
        if let maxPayload, cell.payloadSize > maxPayload {
            if mark { oversized += 1 }
            return .failure(.tooLarge)
        }
        guard let first = cell.overflowPage else { return .success(body(local)) }
        payload.removeAll(keepingCapacity: true)
        payload.append(contentsOf: local.base)
        var remaining = cell.payloadSize - cell.localCount
        var next = first
        var previous = leaf
        let room = usable - 4
        var chain: [UInt32] = []
        var seen: Set<UInt32> = []
        while remaining > 0 {
            let current = next
            guard available(current), seen.insert(current).inserted else { return .failure(.overflow(page: current)) }
            if pointerMap != nil, let entry = mapEntry(current) {
                let expected: PointerMap.Entry =
                    chain.isEmpty ? .firstOverflow(cellPage: previous) : .overflow(previous: previous)
                guard entry == expected else { return .failure(.overflow(page: current)) }
            }
            var taken = false
            let read: Void? = withPage(current, overflow: true) { view in
                guard let link = view.u32(0), !view.base.allSatisfy({ $0 == 0 }) else { return }
                let take = min(remaining, room)
                guard let part = view.slice(4..<(4 + take)) else { return }
                payload.append(contentsOf: part.base)
                remaining -= take
                next = link
                taken = true
            }
            guard read != nil, taken else { return .failure(.overflow(page: current)) }
            chain.append(current)
            previous = current
        }
        guard next == 0 else { return .failure(.overflow(page: previous)) }
        if mark { for page in chain { visited.insert(page) } }
        return .success(payload.withUnsafeBytes { body(ByteView($0)) })
    }

    /// Why a cell's record could not be collected.
    enum CellFailure: Error, Equatable {
        case outsidePage
        case overflow(page: UInt32)
        case tooLarge
    }

    /// The first `count` bytes of the file at `path` (fewer when it is shorter).
    static func readStart(_ path: String, count: Int) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw USMError.unreadable(path: path, reason: errnoDescription())
        }
        defer { try? handle.close() }
        do {
            return [UInt8](try handle.read(upToCount: count) ?? Data())
        } catch {
            throw USMError.unreadable(path: path, reason: error.localizedDescription)
        }
    }
}
