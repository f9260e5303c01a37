import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a file at offsets through a small cache of 64 KiB blocks.
struct PlistBlockReader {
    let fd: Int32
    let path: String
    let size: Int64
    private var blocks: [Int64: [UInt8]] = [:]
    private var order: [Int64] = []
    static let blockSize: Int64 = 65536

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
        var st = stat()
        size = fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    mutating func bytes(at offset: Int64, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0, offset + Int64(count) <= size else {
            throw PreferencesReader.Malformed(reason: "it refers past its end")
        }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        var position = offset
        while out.count < count {
            let start = position - position % Self.blockSize
            let block = try self.block(start)
            let from = Int(position - start)
            let take = min(count - out.count, block.count - from)
            guard take > 0 else { throw PreferencesReader.Malformed(reason: "it is cut short") }
            out += block[from..<(from + take)]
            position += Int64(take)
        }
        return out
    }

    private mutating func block(_ start: Int64) throws -> [UInt8] {
        if let cached = blocks[start] { return cached }
        var data = [UInt8](repeating: 0, count: Int(min(Self.blockSize, size - start)))
        var done = 0
        while done < data.count {
            let n = data.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + done, $0.count - done, off_t(start) + off_t(done))
            }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw USMError.unreadable(path: path, reason: errnoDescription()) }
            if n == 0 { break }
            done += n
        }
        data.removeSubrange(done...)
        if order.count >= 64 { blocks[order.removeFirst()] = nil }
        blocks[start] = data
        order.append(start)
        return data
    }

    /// A big-endian unsigned integer of `width` bytes.
    mutating func integer(at offset: Int64, width: Int) throws -> UInt64 {
        try bytes(at: offset, count: width).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
