import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Streaming file copy with a fixed buffer, so memory stays flat whatever the file size.
enum FileCopy {
    /// Bytes moved per read/write call.
    static let bufferSize = 1 << 20

    /// Copies the regular file at `source` to a new file at `destination` (which must not exist).
    /// Opens the source with `O_NOFOLLOW`: callers resolve and confine symlinks before copying.
    /// - Returns: the number of bytes copied.
    @discardableResult
    static func copy(from source: String, to destination: String) throws -> Int64 {
        try copy(from: source, to: destination, hashing: false).bytes
    }

    /// Copies like `copy(from:to:)` and, when asked, returns the SHA-256 of the bytes copied.
    /// Only the file's data is written: its holes (`SEEK_HOLE`) stay holes in the copy, so a
    /// sparse file takes no more room copied than on its own disk. `limit`: copy only the first
    /// `limit` bytes (what SQLite reads of a store: its header's page count). Before writing, the
    /// room the data needs is checked (`statvfs`).
    /// - Throws: `outOfSpace` (exit 75) when the destination's file system has less room than the
    ///   data to copy, before anything is written.
    static func copy(from source: String, to destination: String, hashing: Bool, limit: Int64? = nil) throws -> (
        bytes: Int64, sha256: String?
    ) {
        let input = try openRegular(source)
        defer { close(input) }
        var st = stat()
        guard fstat(input, &st) == 0 else { throw USMError.unreadable(path: source, reason: errnoDescription()) }
        let end = max(0, min(Int64(st.st_size), limit ?? Int64(st.st_size)))
        let extents = try dataExtents(input, end: end, path: source)
        try requireRoom(
            for: extents.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) }, at: destination, source: source)
        let output = FileSystemPath.withCString(destination) {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        }
        guard output >= 0 else { throw USMError.writing(destination) }
        var closed = false
        defer { if !closed { close(output) } }
        var hasher: SHA256? = hashing ? SHA256() : nil
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        var position: Int64 = 0
        for extent in extents {
            // A hole reads as zeros: hashed as such, never written.
            if hasher != nil, extent.lowerBound > position {
                memset(buffer, 0, bufferSize)
                var left = extent.lowerBound - position
                while left > 0 {
                    let n = Int(min(Int64(bufferSize), left))
                    hasher?.update(bufferPointer: UnsafeRawBufferPointer(start: buffer, count: n))
                    left -= Int64(n)
                }
            }
            position = extent.lowerBound
            guard lseek(input, off_t(position), SEEK_SET) >= 0, lseek(output, off_t(position), SEEK_SET) >= 0 else {
                throw USMError.unreadable(path: source, reason: errnoDescription())
            }
            while position < extent.upperBound {
                let n = read(input, buffer, Int(min(Int64(bufferSize), extent.upperBound - position)))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw USMError.unreadable(path: source, reason: errnoDescription())
                }
                if n == 0 { break }  // the file shrank meanwhile: the copy is cut where it ended
                let block = UnsafeRawBufferPointer(start: buffer, count: n)
                hasher?.update(bufferPointer: block)
                try FileSync.writeAll(output, block, path: destination)
                position += Int64(n)
            }
        }
        if hasher != nil, end > position {
            memset(buffer, 0, bufferSize)
            var left = end - position
            while left > 0 {
                let n = Int(min(Int64(bufferSize), left))
                hasher?.update(bufferPointer: UnsafeRawBufferPointer(start: buffer, count: n))
                left -= Int64(n)
            }
        }
        // A trailing hole: the copy's size set without writing it.
        guard ftruncate(output, off_t(end)) == 0 else { throw USMError.writing(destination) }
        closed = true
        if close(output) != 0 { throw USMError.writing(destination) }
        return (end, hasher?.finalize().hex)
    }

    #if os(Linux)
        /// `SEEK_DATA`/`SEEK_HOLE` (Glibc exposes them only with `_GNU_SOURCE`).
        static let seekData: Int32 = 3
        static let seekHole: Int32 = 4
    #else
        static let seekData: Int32 = SEEK_DATA
        static let seekHole: Int32 = SEEK_HOLE
    #endif

    /// The ranges of `fd` below `end` that hold data (`SEEK_DATA`/`SEEK_HOLE`); the whole range
    /// where the file system cannot say.
    static func dataExtents(_ fd: Int32, end: Int64, path: String) throws -> [Range<Int64>] {
        guard end > 0 else { return [] }
        var extents: [Range<Int64>] = []
        var offset: Int64 = 0
        while offset < end {
            let data = Int64(lseek(fd, off_t(offset), seekData))
            if data < 0 {
                if errno == ENXIO { break }  // no data past `offset`
                return [0..<end]  // SEEK_DATA not supported: all of it is data
            }
            guard data < end else { break }
            var hole = Int64(lseek(fd, off_t(data), seekHole))
            if hole < 0 { return [0..<end] }
            hole = min(hole, end)
            if hole <= data { return [0..<end] }
            extents.append(data..<hole)
            offset = hole
        }
        return extents
    }

    /// Throws `outOfSpace` when the file system holding `destination` has less than `bytes` (and
    /// a margin) free.
    static func requireRoom(for bytes: Int64, at destination: String, source: String) throws {
        var fs = statvfs()
        let folder = FileSystemPath.parent(destination)
        guard FileSystemPath.withCString(folder, { statvfs($0, &fs) }) == 0 else { return }
        let free = Int64(clamping: UInt64(fs.f_bavail) &* UInt64(fs.f_frsize))
        let margin: Int64 = 1 << 20
        guard free < bytes + margin else { return }
        throw USMError.outOfSpace(
            path: folder,
            reason:
                "a private copy of \(source) needs \(bytes) bytes of data and the file system holding \(folder) has \(free) free; nothing was written (make room, or set TMPDIR to a folder with space)"
        )
    }

    /// The SHA-256 of a file's content, read in blocks.
    static func sha256(of path: String) throws -> (bytes: Int64, sha256: String) {
        var hasher = SHA256()
        let total = try readBlocks(path) { hasher.update(bufferPointer: $0) }
        return (total, hasher.finalize().hex)
    }

    /// Reads a regular file (never through a final symlink) block by block; returns the byte count.
    /// - Throws: `wrongKind` for anything but a regular file (a FIFO, socket, device or folder),
    ///   found without blocking: reading a FIFO planted in a container would wait for ever.
    static func readBlocks(_ path: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        let input = try openRegular(path)
        defer { close(input) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let n = read(input, buffer, bufferSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw USMError.unreadable(path: path, reason: errnoDescription())
            }
            if n == 0 { return total }
            try body(UnsafeRawBufferPointer(start: buffer, count: n))
            total += Int64(n)
        }
    }

    /// Opens `path` for reading only when it is a regular file: `O_NONBLOCK` so that opening a FIFO
    /// never waits for a writer, `O_NOFOLLOW` so no final link is followed, then `fstat` on the
    /// descriptor (what was opened, not what a name pointed to a moment before). Blocking reads
    /// are restored for the regular file.
    /// - Throws: `wrongKind` naming what it is, `unreadable` when it cannot be opened.
    static func openRegular(_ path: String) throws -> Int32 {
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        guard fd >= 0 else {
            throw USMError.unreadable(path: path, reason: errnoDescription())
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let code = errno
            close(fd)
            throw USMError.unreadable(path: path, reason: errnoDescription(code))
        }
        let kind = FileStatus(st).kind
        guard kind == .file else {
            close(fd)
            throw USMError.wrongKind(path: path, expected: "a regular file: it is a \(kind.description)")
        }
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        return fd
    }
}
