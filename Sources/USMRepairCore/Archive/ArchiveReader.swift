import CArchive
import Foundation

/// Reads an archive entry by entry through libarchive, any format and filter it knows.
/// A libarchive handle is not thread-safe: use one reader from one task.
final class ArchiveReader {
    /// One entry's header.
    struct Entry {
        enum Kind: String { case file, directory, symlink, hardlink, other }
        let path: String
        let kind: Kind
        /// The size the header declares (files).
        let size: Int64?
        let mode: UInt32
        let mtime: FileTime
        /// Symlink target, or hard-link target for hard links.
        let linkTarget: String?
    }

    private let handle: OpaquePointer
    let path: String

    /// Bytes per read block.
    static let blockSize = 1 << 20

    /// Opens the archive at `path`.
    init(path: String) throws {
        self.path = path
        guard FileStatus.resolve(path)?.kind == .file else {
            if FileStatus.lookup(path) == nil { throw USMError.notFound(path: path, what: "archive") }
            throw USMError.wrongKind(path: path, expected: "an archive file")
        }
        guard let h = archive_read_new() else {
            throw USMError.archive(path: path, code: ARCHIVE_FATAL, message: "out of memory")
        }
        handle = h
        archive_read_support_filter_all(h)
        archive_read_support_format_tar(h)
        archive_read_support_format_zip(h)
        let r = FileSystemPath.withCString(path) { archive_read_open_filename(h, $0, Self.blockSize) }
        if r != ARCHIVE_OK {
            // deinit frees the handle: every stored property is set by now.
            throw failure()
        }
    }

    deinit { archive_read_free(handle) }

    /// True when the archive read so far is a zip (known once a header was read).
    var isZip: Bool { archive_format(handle) & ARCHIVE_FORMAT_BASE_MASK == ARCHIVE_FORMAT_ZIP }

    /// The next entry's header, or nil at the end.
    func next() throws -> Entry? {
        var entry: OpaquePointer?
        let r = archive_read_next_header(handle, &entry)
        if r == ARCHIVE_EOF { return nil }
        guard r >= ARCHIVE_WARN, let entry else { throw failure() }
        let path = ArchiveNames.path(of: entry)
        let type = UInt32(archive_entry_filetype(entry))
        let hardlink = ArchiveNames.hardlink(of: entry)
        let kind: Entry.Kind
        if hardlink != nil {
            kind = .hardlink
        } else {
            switch type {
            case USM_AE_IFREG: kind = .file
            case USM_AE_IFDIR: kind = .directory
            case USM_AE_IFLNK: kind = .symlink
            default: kind = .other
            }
        }
        let symlink = ArchiveNames.symlink(of: entry)
        return Entry(
            path: path, kind: kind,
            size: archive_entry_size_is_set(entry) != 0 ? Int64(archive_entry_size(entry)) : nil,
            mode: UInt32(archive_entry_perm(entry)),
            mtime: FileTime(
                seconds: Int64(archive_entry_mtime(entry)), nanoseconds: Int32(archive_entry_mtime_nsec(entry))),
            linkTarget: hardlink ?? symlink)
    }

    /// Streams the current entry's data to `body` block by block; returns the byte count.
    /// Stops with an error once more than `limit` bytes arrive (an entry larger than declared).
    @discardableResult
    func readData(limit: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.blockSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let n = archive_read_data(handle, buffer, Self.blockSize)
            if n == 0 { break }
            if n < 0 { throw failure() }
            total += Int64(n)
            if total > limit {
                throw USMError.hostileArchive(path: path, reason: "an entry holds more bytes than declared")
            }
            try body(UnsafeRawBufferPointer(start: buffer, count: n))
        }
        return total
    }

    /// The error of the last call: the file system's (an I/O error, a permission: the archive could
    /// not be read, exit 74) or the archive's own (its bytes are not what they claim, exit 2).
    private func failure() -> USMError {
        let code = archive_errno(handle)
        if Self.systemErrors.contains(code) {
            return USMError.unreadable(path: path, reason: ArchiveWriter.errorString(handle))
        }
        return USMError.brokenArchive(path: path, message: ArchiveWriter.errorString(handle))
    }

    /// errno values libarchive passes on from a failed read or open of the file itself.
    private static let systemErrors: Set<Int32> = [
        EIO, EACCES, EPERM, ENXIO, ENODEV, EBADF, EISDIR, ENOMEM, ESTALE, ETIMEDOUT, EINTR,
    ]
}
