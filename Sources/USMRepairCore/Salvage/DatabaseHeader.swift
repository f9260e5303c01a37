/// The 100-byte header at the start of an SQLite database file, read for salvage: tolerant where
/// `SQLiteHeader` refuses (a damaged store is the input here), with every field salvage needs.
/// Offsets from SQLite's "Database File Format", section 1.3.
struct DatabaseHeader: Sendable, Equatable {
    /// The text encoding of every text value in the file (offset 56).
    enum TextEncoding: UInt32, Sendable {
        case utf8 = 1
        case utf16le = 2
        case utf16be = 3
    }

    /// Page size in bytes (offset 16; 1 means 65536).
    var pageSize: Int
    /// Bytes reserved at the end of each page (offset 20).
    var reserved: Int
    /// Database size in pages (offset 28), when the header vouches for it (offset 92 equals 24).
    var declaredPages: Int?
    /// The first freelist trunk page (offset 32), 0 when there is none.
    var freelistTrunk: UInt32
    /// Pages on the freelist (offset 36).
    var freelistCount: Int
    /// The largest root page (offset 52): non-zero when the file has pointer-map pages (auto-vacuum).
    var largestRoot: UInt32
    /// Incremental vacuum (offset 64), meaningful with pointer maps.
    var incrementalVacuum: Bool
    /// Text encoding (offset 56; 0 in a file never written with text is taken as UTF-8).
    var encoding: TextEncoding

    /// The bytes of a page salvage may read (the page less its reserved tail).
    var usableSize: Int { pageSize - reserved }

    /// The magic string every SQLite 3 database starts with.
    static let magic: [UInt8] = Array("SQLite format 3\u{0}".utf8)

    /// Parses `bytes` (the file's first 100 bytes or more); nil when they are not an SQLite header
    /// whose page size and reserved space can be believed (zeroed, overwritten, another format).
    static func parse(_ bytes: ByteView) -> DatabaseHeader? {
        guard bytes.count >= 100 else { return nil }
        for (i, byte) in magic.enumerated() where bytes.u8(i) != byte { return nil }
        guard let rawPage = bytes.u16(16), let reserved = bytes.u8(20) else { return nil }
        let pageSize = rawPage == 1 ? 65536 : rawPage
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return nil }
        // SQLite refuses a usable size under 480 bytes.
        guard pageSize - Int(reserved) >= 480 else { return nil }
        // The payload fractions are fixed at 64, 32, 32 in every SQLite 3 file.
        guard bytes.u8(21) == 64, bytes.u8(22) == 32, bytes.u8(23) == 32 else { return nil }
        let counter = bytes.u32(24) ?? 0
        let pages = bytes.u32(28) ?? 0
        let validFor = bytes.u32(92) ?? 0
        let encodingValue = bytes.u32(56) ?? 0
        guard encodingValue <= 3 else { return nil }
        return DatabaseHeader(
            pageSize: pageSize, reserved: Int(reserved),
            declaredPages: pages > 0 && counter == validFor ? Int(pages) : nil,
            freelistTrunk: bytes.u32(32) ?? 0, freelistCount: Int(bytes.u32(36) ?? 0), largestRoot: bytes.u32(52) ?? 0,
            incrementalVacuum: (bytes.u32(64) ?? 0) != 0, encoding: TextEncoding(rawValue: encodingValue) ?? .utf8)
    }

    /// The header assumed for a file whose own header is lost: Core Data's defaults (UTF-8, no
    /// reserved bytes) with the page size found by `PageSizeProbe`, no freelist known.
    static func assumed(pageSize: Int, hasPointerMap: Bool) -> DatabaseHeader {
        DatabaseHeader(
            pageSize: pageSize, reserved: 0, declaredPages: nil, freelistTrunk: 0, freelistCount: 0,
            largestRoot: hasPointerMap ? 1 : 0, incrementalVacuum: false, encoding: .utf8)
    }
}
