/// Finds the page size of a file whose header is lost (zeroed or overwritten), from the pages
/// themselves: at the true size every page boundary holds a page, and B-tree pages (most pages
/// of a store) have a header a random position almost never imitates. The first 4 MiB are enough.
enum PageSizeProbe {
    /// Bytes examined from the start of the file.
    static let window = 4 << 20

    /// The candidates, smallest first.
    static let sizes = (9...16).map { 1 << $0 }

    /// The page size of the file whose first bytes are `bytes` and whose size is `fileSize`; nil
    /// when no size fits. Page 1's B-tree header sits at offset 100 whatever the size, and must
    /// parse at the size chosen when it parses at any.
    static func infer(_ bytes: ByteView, fileSize: Int64) -> Int? {
        var odd: [Int: Int] = [:]
        for size in sizes {
            // Odd multiples of the size are page boundaries at this size and not at twice it.
            var hits = 0
            var k = 1
            while (k + 1) * size <= bytes.count {
                if let page = bytes.slice((k * size)..<((k + 1) * size)), plausible(page, headerOffset: 0, usable: size)
                {
                    hits += 1
                }
                k += 2
            }
            odd[size] = hits
        }
        let first = sizes.filter { size in
            guard let page = bytes.slice(0..<min(size, bytes.count)), page.count == size else { return false }
            return (try? BTreePage.parse(page, headerOffset: 100, usable: size).get()) != nil
        }
        // The smallest size whose odd boundaries hold pages as often as half of twice its size's do
        // (among those page 1 fits, unless page 1 itself is lost).
        for size in sizes where first.isEmpty || first.contains(size) {
            let hits = odd[size] ?? 0
            let double = odd[size * 2] ?? 0
            if hits > 0, hits * 2 >= double { return size }
        }
        // One page, or no second page recognisable: the smallest size page 1 fits that divides the file.
        return first.first { fileSize % Int64($0) == 0 && fileSize >= Int64($0) } ?? first.first
    }

    /// True when `page` starts like a B-tree page with at least one cell, and its first cell reads.
    static func plausible(_ page: ByteView, headerOffset: Int, usable: Int) -> Bool {
        guard case let .success(parsed) = BTreePage.parse(page, headerOffset: headerOffset, usable: usable),
            parsed.cellCount > 0,
            let offset = parsed.cellOffset(0, in: page)
        else { return false }
        switch parsed.kind {
        case .tableLeaf: return BTreePage.leafCell(at: offset, in: page, usable: usable) != nil
        case .tableInterior: return BTreePage.interiorCell(at: offset, in: page, usable: usable) != nil
        case .indexLeaf, .indexInterior: return page.varint(offset + (parsed.kind == .indexInterior ? 4 : 0)) != nil
        }
    }
}
