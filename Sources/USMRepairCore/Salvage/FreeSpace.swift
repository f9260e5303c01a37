/// What the file itself says about pages no table owns: the freelist (file format section 1.5)
/// and, in auto-vacuum files (Core Data's `_NSAutoVacuumLevel`), the pointer map (section 1.7).
/// Salvage must never take a free page for a lost one: a free page may still hold rows that
/// were deleted or moved, and bringing them back would invent data.
struct Freelist: Sendable {
    /// Free pages found (trunks and leaves).
    var pages: PageBitmap
    /// How many were found.
    var found = 0
    /// True when the walk found exactly the number of pages the header declares, with no loop,
    /// no page out of range and no unreadable trunk.
    var complete = false
    /// What went wrong on the walk, for the report.
    var problems: [String] = []

    /// Walks the trunk chain from `first`. `read(page, body)` calls `body` with the page's bytes and
    /// returns false when the page cannot be read.
    static func walk(
        first: UInt32, declared: Int, pageCount: Int, usable: Int,
        read: (UInt32, (ByteView) -> Void) -> Bool
    ) -> Freelist {
        var list = Freelist(pages: PageBitmap(pageCount: pageCount))
        var trunk = first
        let maxLeaves = usable / 4 - 2
        var broken = false
        while trunk != 0 {
            guard Int(trunk) <= pageCount else {
                list.problems.append(
                    "freelist trunk page \(trunk) is past the end of the database (\(pageCount) pages)")
                broken = true
                break
            }
            guard list.pages.insert(trunk) else {
                list.problems.append("the freelist loops back to page \(trunk)")
                broken = true
                break
            }
            list.found += 1
            var next: UInt32 = 0
            let readable = read(trunk) { page in
                guard let link = page.u32(0), let count = page.u32(4) else { return }
                next = link
                guard Int(count) <= maxLeaves else {
                    list.problems.append("freelist trunk page \(trunk) claims \(count) leaves, more than a page holds")
                    broken = true
                    return
                }
                for i in 0..<Int(count) {
                    guard let leaf = page.u32(8 + 4 * i) else { break }
                    if leaf == 0 || Int(leaf) > pageCount {
                        list.problems.append("freelist trunk page \(trunk) names page \(leaf), outside the database")
                        broken = true
                        continue
                    }
                    if list.pages.insert(leaf) { list.found += 1 }
                }
            }
            guard readable else {
                list.problems.append("freelist trunk page \(trunk) cannot be read")
                broken = true
                break
            }
            if broken { break }
            trunk = next
        }
        list.complete = !broken && list.found == declared
        if !broken, list.found != declared {
            list.problems.append("the header counts \(declared) free pages; the freelist holds \(list.found)")
        }
        return list
    }
}

/// The pointer map of an auto-vacuum file: for every page, its role (root, free, overflow, B-tree
/// page) and its parent. Read lazily, one map page at a time; each map page is read once.
struct PointerMap: Sendable {
    /// A page's entry.
    enum Entry: Equatable, Sendable {
        case root
        case free
        case firstOverflow(cellPage: UInt32)
        case overflow(previous: UInt32)
        case child(parent: UInt32)
    }

    let usable: Int
    let pageSize: Int
    let pageCount: Int
    /// Map pages read, by page number (5 bytes per covered page).
    private var loaded: [UInt32: [UInt8]] = [:]
    private var unreadable: Set<UInt32> = []

    init(usable: Int, pageSize: Int, pageCount: Int) {
        self.usable = usable
        self.pageSize = pageSize
        self.pageCount = pageCount
    }

    /// Pages covered by one map page.
    var perPage: Int { usable / 5 }

    /// The lock-byte page (the page holding file offset 2^30), never used for data.
    var lockPage: UInt32 { UInt32(1_073_741_824 / pageSize + 1) }

    /// The map page holding `page`'s entry (SQLite's `ptrmapPageno`).
    func mapPage(for page: UInt32) -> UInt32 {
        guard page >= 2 else { return 0 }
        let group = (Int(page) - 2) / (perPage + 1)
        var map = UInt32(group * (perPage + 1) + 2)
        if map == lockPage { map += 1 }
        return map
    }

    /// True when `page` is itself a pointer-map page.
    func isMapPage(_ page: UInt32) -> Bool { page >= 2 && mapPage(for: page) == page }

    /// `page`'s entry, reading its map page through `read` the first time; nil when the map page
    /// cannot be read or the entry is not a valid one.
    mutating func entry(_ page: UInt32, read: (UInt32, (ByteView) -> Void) -> Bool) -> Entry? {
        let map = mapPage(for: page)
        guard map >= 2, page > map, Int(page) <= pageCount else { return nil }
        if loaded[map] == nil {
            guard !unreadable.contains(map) else { return nil }
            var bytes: [UInt8] = []
            let ok = read(map) { view in
                bytes = Array(UnsafeRawBufferPointer(rebasing: view.base[0..<min(usable, view.count)]))
            }
            guard ok else {
                unreadable.insert(map)
                return nil
            }
            loaded[map] = bytes
        }
        guard let bytes = loaded[map] else { return nil }
        let offset = 5 * (Int(page) - Int(map) - 1)
        guard offset >= 0, offset + 5 <= bytes.count else { return nil }
        let parent =
            UInt32(bytes[offset + 1]) << 24 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 8
            | UInt32(bytes[offset + 4])
        guard Int(parent) <= pageCount else { return nil }
        switch bytes[offset] {
        case 1: return parent == 0 ? .root : nil
        case 2: return parent == 0 ? .free : nil
        case 3: return parent >= 1 ? .firstOverflow(cellPage: parent) : nil
        case 4: return parent >= 2 ? .overflow(previous: parent) : nil
        case 5: return parent >= 1 ? .child(parent: parent) : nil
        default: return nil
        }
    }

    /// The root `page` hangs from, following parents at most `limit` steps; nil when the chain
    /// breaks, loops, or meets a page that is not a B-tree page.
    mutating func root(of page: UInt32, limit: Int = 64, read: (UInt32, (ByteView) -> Void) -> Bool) -> UInt32? {
        var current = page
        for _ in 0..<limit {
            // Page 1 (sqlite_schema's root) has no entry: the map starts after it.
            if current == 1 { return 1 }
            switch entry(current, read: read) {
            case .root?: return current
            case let .child(parent)?: current = parent
            default: return nil
            }
        }
        return nil
    }
}
