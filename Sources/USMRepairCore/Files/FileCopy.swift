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
    static func copy(from source: String, to destination: String, hashing: Bool) throws -> (
        bytes: Int64, sha256: String?
    ) {
        let output = FileSystemPath.withCString(destination) {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        }
        guard output >= 0 else { throw USMError.writing(destination) }
        var closed = false
        defer { if !closed { close(output) } }
        var hasher: SHA256? = hashing ? SHA256() : nil
        let total = try readBlocks(source) { block in
            hasher?.update(bufferPointer: block)
            try FileSync.writeAll(output, block, path: destination)
        }
        closed = true
        if close(output) != 0 { throw USMError.writing(destination) }
        return (total, hasher?.finalize().hex)
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
