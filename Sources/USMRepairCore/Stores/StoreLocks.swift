import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether another process has a store open or locked, asked the way SQLite itself would see it,
/// without taking any lock: `F_GETLK` on the byte ranges SQLite's unix VFS locks (the main file's
/// pending/reserved/shared bytes, and the `-shm` file's WAL-index locks and its "dead man switch"
/// byte, which every connection in WAL mode holds while the store is open), plus a hot `-journal`.
public enum StoreLocks {
    /// Why a store is busy.
    public struct Busy: Sendable, Equatable {
        /// The member file holding the lock (or the journal).
        public let path: String
        /// What was seen, for the message.
        public let reason: String
        /// The process holding the lock, when the system says.
        public let pid: Int32?
    }

    /// SQLite's lock bytes in the main file (os_unix.c: PENDING_BYTE 0x40000000, then RESERVED and 510 SHARED bytes).
    static let pendingByte: Int64 = 0x4000_0000
    /// The WAL-index lock slots in `-shm` (offset 120, 8 slots) and the connection byte after them.
    static let shmLocks: (start: Int64, length: Int64) = (120, 9)

    /// The first sign that another process uses the store, or nil when none does.
    public static func busy(_ files: StoreFileSet) -> Busy? {
        if let held = held(files.main.path, start: pendingByte, length: 512 + 2) {
            return Busy(
                path: files.main.path, reason: "another process holds an SQLite lock on it (it has a transaction open)",
                pid: held)
        }
        if let held = held(files.shm.path, start: shmLocks.start, length: shmLocks.length) {
            return Busy(
                path: files.shm.path, reason: "another process has the store open (it holds its WAL-index lock)",
                pid: held)
        }
        if let journal = FileStatus.lookup(files.journal.path), journal.kind == .file, journal.size > 0 {
            return Busy(
                path: files.journal.path,
                reason:
                    "a rollback journal is present: a write is under way or was interrupted (SQLite rolls it back the next time the app opens the store)",
                pid: nil)
        }
        return nil
    }

    /// The main files of the stores at or below `path` (a file, or a folder walked without
    /// following links): every store a move of `path` would take along, which must not be open
    /// in another process. A file counts when it looks like a store's main file (named `*.sqlite`,
    /// in a `store`/`StoreContent` folder, or with a `-wal`, `-shm` or `-journal` beside it) and
    /// starts with SQLite's header; transaction logs and other files are not opened.
    public static func stores(at path: String) -> [String] {
        guard let status = FileStatus.lookup(path) else { return [] }
        switch status.kind {
        case .file:
            return looksLikeStore(path, size: status.size) ? [path] : []
        case .directory:
            var found: [String] = []
            try? DirectoryListing.forEach(path) { name in found += stores(at: path + "/" + name) }
            return found
        default:
            return []
        }
    }

    private static func looksLikeStore(_ path: String, size: Int64) -> Bool {
        let name = FileSystemPath.lastComponent(path)
        guard size >= 100, !["-wal", "-shm", "-journal"].contains(where: { name.hasSuffix($0) }) else { return false }
        let folder = FileSystemPath.lastComponent(FileSystemPath.parent(path))
        let candidate =
            name.hasSuffix(".sqlite") || folder == "store" || folder.hasPrefix("StoreContent")
            || ["-wal", "-shm", "-journal"].contains { FileStatus.lookup(path + $0) != nil }
        return candidate && (try? SQLiteHeader.read(path: path)) != nil
    }

    /// The pid of a process holding a lock that conflicts with a write lock on the range, or nil.
    static func held(_ path: String, start: Int64, length: Int64) -> Int32? {
        guard FileStatus.lookup(path)?.kind == .file else { return nil }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(start)
        lock.l_len = off_t(length)
        guard fcntl(fd, F_GETLK, &lock) == 0 else { return nil }
        return lock.l_type == Int16(F_UNLCK) ? nil : Int32(lock.l_pid)
    }
}
