import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The frames of a `-wal` that SQLite would apply: for each page, its newest frame up to the last
/// commit whose salts and checksum chain hold (`WALFile` checks them). Frames after that commit,
/// a torn last frame, or a whole WAL whose header fails are left out, as SQLite leaves them out.
struct WALIndex: Sendable {
    /// The WAL as read (header validity, frame counts).
    let file: WALFile
    /// The newest committed frame of each page (frame index, from 0).
    let frames: [UInt32: Int32]
    /// The database's size in pages after the last commit, when there was one.
    let databasePages: Int?

    /// Reads the WAL at `path`.
    /// - Throws: `unreadable` when the file cannot be read.
    static func read(path: String) throws -> WALIndex {
        var committed: [UInt32: Int32] = [:]
        var pending: [(UInt32, Int32)] = []
        var size: UInt32 = 0
        let file = try WALFile.read(path: path) { index, page, commit in
            pending.append((page, Int32(clamping: index)))
            guard commit != 0 else { return }
            for (page, frame) in pending { committed[page] = frame }
            pending.removeAll(keepingCapacity: true)
            size = commit
        }
        guard file.headerValid, file.committedFrames > 0 else {
            return WALIndex(file: file, frames: [:], databasePages: nil)
        }
        return WALIndex(file: file, frames: committed, databasePages: size > 0 ? Int(size) : nil)
    }

    /// The byte offset of page `page`'s data in the WAL, when a committed frame holds it.
    func offset(of page: UInt32) -> Int64? {
        guard let frame = frames[page] else { return nil }
        return 32 + Int64(frame) * Int64(24 + file.pageSize) + 24
    }
}

/// Reads pages of a store's main file with its WAL applied, by number, with `pread` on descriptors
/// opened read-only: nothing of the store's file set is written or even opened for writing, and
/// no SQLite connection touches it (which would rewrite its `-shm`).
final class PageSource {
    /// What reading one page gave.
    enum Outcome: Equatable {
        /// The page's bytes are in the buffer (from the main file or the WAL).
        case read
        /// The page lies past the end of the main file (truncated) and no WAL frame holds it.
        case missing
        /// The file ends inside the page: only `bytes` of it exist.
        case short(bytes: Int)
        /// The operating system could not read it.
        case failed(errno: Int32)
    }

    let pageSize: Int
    /// Pages salvage reads: the database's size (the WAL's last commit says, else the header, else
    /// the file's), but never past the last page that exists (in the file or in a WAL frame), so
    /// that a size field holding any number costs nothing.
    let pageCount: Int
    /// The database's size as the WAL or the header says it, when that is more than exists.
    let claimedPages: Int?
    /// Whole pages present in the main file.
    let filePages: Int
    let wal: WALIndex?
    private let main: Int32
    private let walDescriptor: Int32

    /// Opens the main file (and the WAL when `wal` is given) for reading.
    /// - Throws: `unreadable` when a file cannot be opened.
    init(main path: String, pageSize: Int, declaredPages: Int?, wal: WALIndex?, walPath: String?) throws {
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: path, reason: errnoDescription()) }
        var walFD: Int32 = -1
        if let walPath, wal != nil {
            walFD = FileSystemPath.withCString(walPath) { open($0, O_RDONLY | O_CLOEXEC) }
            guard walFD >= 0 else {
                close(fd)
                throw USMError.unreadable(path: walPath, reason: errnoDescription())
            }
        }
        var info = stat()
        let size = fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
        main = fd
        walDescriptor = walFD
        self.pageSize = pageSize
        self.wal = wal
        filePages = Int(size / Int64(pageSize))
        let partial = size % Int64(pageSize) == 0 ? 0 : 1
        let claimed = wal?.databasePages ?? declaredPages ?? (filePages + partial)
        let existing = max(filePages + partial, Int(wal?.frames.keys.max() ?? 0))
        pageCount = min(claimed, existing)
        claimedPages = claimed > existing ? claimed : nil
    }

    deinit {
        close(main)
        if walDescriptor >= 0 { close(walDescriptor) }
    }

    /// Reads page `number` (from 1) into `buffer`, which holds `pageSize` bytes.
    func read(_ number: UInt32, into buffer: UnsafeMutableRawBufferPointer) -> Outcome {
        guard number >= 1, buffer.count >= pageSize, let base = buffer.baseAddress else { return .missing }
        if let offset = wal?.offset(of: number) {
            return fill(walDescriptor, base, offset: offset)
        }
        let offset = Int64(number - 1) * Int64(pageSize)
        return fill(main, base, offset: offset)
    }

    private func fill(_ fd: Int32, _ base: UnsafeMutableRawPointer, offset: Int64) -> Outcome {
        var done = 0
        while done < pageSize {
            let n = pread(fd, base + done, pageSize - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                return .failed(errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        if done == pageSize { return .read }
        return done == 0 ? .missing : .short(bytes: done)
    }
}
