/// One bit per page (pages numbered from 1): what salvage has read, what is free. An eighth of a
/// byte per page keeps the bookkeeping of a 4 GiB store of 4 KiB pages at 128 KiB.
struct PageBitmap: Sendable {
    private var words: [UInt64]
    /// The highest page number the bitmap holds.
    let pageCount: Int

    init(pageCount: Int) {
        self.pageCount = max(0, pageCount)
        words = [UInt64](repeating: 0, count: (self.pageCount + 64) / 64)
    }

    /// True when `page` is set (false for page numbers outside 1...pageCount).
    func contains(_ page: UInt32) -> Bool {
        let p = Int(page)
        guard p >= 1, p <= pageCount else { return false }
        return words[p >> 6] & (1 << UInt64(p & 63)) != 0
    }

    /// Sets `page`; returns false when it was set already or is out of range.
    @discardableResult
    mutating func insert(_ page: UInt32) -> Bool {
        let p = Int(page)
        guard p >= 1, p <= pageCount else { return false }
        let mask: UInt64 = 1 << UInt64(p & 63)
        guard words[p >> 6] & mask == 0 else { return false }
        words[p >> 6] |= mask
        return true
    }

    /// Clears `page`.
    mutating func remove(_ page: UInt32) {
        let p = Int(page)
        guard p >= 1, p <= pageCount else { return }
        words[p >> 6] &= ~(1 << UInt64(p & 63))
    }

    /// How many pages are set.
    var count: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }
}
