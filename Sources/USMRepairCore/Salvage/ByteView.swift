/// Bounds-checked reads over a byte buffer for the SQLite file-format decoders: every read past
/// either end returns nil instead of trapping, so a page, cell or record made of any bytes at all
/// decodes to "invalid" and never stops the process. Big-endian, as SQLite writes its files.
struct ByteView {
    /// The bytes (borrowed: valid only while the owner keeps them alive).
    let base: UnsafeRawBufferPointer

    init(_ base: UnsafeRawBufferPointer) {
        self.base = base
    }

    /// The number of bytes.
    var count: Int { base.count }

    /// The byte at `at`.
    @inline(__always)
    func u8(_ at: Int) -> UInt8? {
        at >= 0 && at < base.count ? base[at] : nil
    }

    /// The unsigned 16-bit big-endian value at `at`.
    @inline(__always)
    func u16(_ at: Int) -> Int? {
        guard at >= 0, at <= base.count - 2 else { return nil }
        return Int(base[at]) << 8 | Int(base[at + 1])
    }

    /// The unsigned 32-bit big-endian value at `at`.
    @inline(__always)
    func u32(_ at: Int) -> UInt32? {
        guard at >= 0, at <= base.count - 4 else { return nil }
        return UInt32(base[at]) << 24 | UInt32(base[at + 1]) << 16 | UInt32(base[at + 2]) << 8 | UInt32(base[at + 3])
    }

    /// The two's-complement big-endian integer of `width` bytes (1 to 8) at `at`.
    @inline(__always)
    func signed(_ at: Int, width: Int) -> Int64? {
        guard width >= 1, width <= 8, at >= 0, at <= base.count - width else { return nil }
        var value: UInt64 = base[at] & 0x80 != 0 ? UInt64.max : 0
        for i in 0..<width { value = value << 8 | UInt64(base[at + i]) }
        return Int64(bitPattern: value)
    }

    /// The SQLite variable-length integer at `at` (1 to 9 bytes: seven bits per byte while the high
    /// bit is set, all eight bits of a ninth byte) and its length in bytes.
    @inline(__always)
    func varint(_ at: Int) -> (value: Int64, length: Int)? {
        guard at >= 0, at < base.count else { return nil }
        var value: UInt64 = 0
        for i in 0..<8 {
            guard at + i < base.count else { return nil }
            let byte = base[at + i]
            value = value << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 { return (Int64(bitPattern: value), i + 1) }
        }
        guard at + 8 < base.count else { return nil }
        value = value << 8 | UInt64(base[at + 8])
        return (Int64(bitPattern: value), 9)
    }

    /// The bytes `range` as a view, when they lie inside this one.
    func slice(_ range: Range<Int>) -> ByteView? {
        guard range.lowerBound >= 0, range.upperBound <= base.count else { return nil }
        return ByteView(UnsafeRawBufferPointer(rebasing: base[range]))
    }
}
