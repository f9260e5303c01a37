import Foundation
import GRDB
import GRDBSQLite
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An SQLite file of this tool's own in a private scratch folder (a bundle's catalog, a manifest
/// index). A failed write there is a failed write of the scratch folder: the system's reason is
/// kept, so a full disk or `ulimit -f` is reported as out of space, not as a damaged store.
final class ScratchDatabase {
    private let queue: DatabaseQueue
    let path: String

    init(path: String, configuration: Configuration) throws {
        self.path = path
        queue = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// A new scratch database `name` in `folder`, set up as every one of ours is: a small page
    /// cache, no journal, no syncing, no memory map (it is private and thrown away after the run).
    convenience init(named name: String, in folder: URL, label: String) throws {
        var config = Configuration()
        config.label = label
        config.prepareDatabase { db in
            try db.execute(
                sql:
                    "PRAGMA cache_size = -2048; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA mmap_size = 0"
            )
        }
        try self.init(path: folder.appendingPathComponent(name).path, configuration: config)
    }

    /// Runs `body` in a transaction; the commit (where SQLite writes) is inside, so its error keeps its errno.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try translate {
            try queue.writeWithoutTransaction { db in
                try Self.keepErrno(db, path: path) { db in
                    var result: Result<T, any Error>?
                    try db.inTransaction {
                        result = Result { try body(db) }
                        if case .failure = result { return .rollback }
                        return .commit
                    }
                    guard let result else { throw USMError.unexpected("a scratch database transaction did not run") }
                    return try result.get()
                }
            }
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try translate { try queue.read { db in try Self.keepErrno(db, path: path, body) } }
    }

    func inDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        try translate { try queue.inDatabase { db in try Self.keepErrno(db, path: path, body) } }
    }

    /// The operating-system error behind SQLite's last I/O error, carried out of GRDB's closure.
    private struct SystemError: Error {
        let code: Int32
    }

    private static func keepErrno<T>(_ db: Database, path: String, _ body: (Database) throws -> T) throws -> T {
        do { return try body(db) } catch let error as DatabaseError {
            let primary = error.resultCode.primaryResultCode
            if primary == .SQLITE_IOERR || primary == .SQLITE_FULL {
                // SQLite keeps the errno of some failures only; a write cut short by the file-size
                // limit or a full disk is then told by looking at both.
                var code = sqlite3_system_errno(db.sqliteConnection)
                if code == 0 || !USMError.isOutOfSpace(code) { code = Self.spaceShortage(for: path) ?? code }
                if primary == .SQLITE_FULL, code == 0 { code = ENOSPC }
                if code != 0 { throw SystemError(code: code) }
            }
            throw error
        }
    }

    /// EFBIG when the file has reached the process's file-size limit, ENOSPC when its file system
    /// has less than a MiB free, nil otherwise.
    static func spaceShortage(for path: String) -> Int32? {
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max,
            let size = FileStatus.lookup(path)?.size, UInt64(size) + 65536 >= UInt64(limit.rlim_cur)
        {
            return EFBIG
        }
        var fs = statvfs()
        if FileSystemPath.withCString(FileSystemPath.parent(path), { statvfs($0, &fs) }) == 0,
            UInt64(fs.f_bavail) * UInt64(fs.f_frsize) < 1 << 20
        {
            return ENOSPC
        }
        return nil
    }

    private func translate<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SystemError {
            throw USMError.writing(path, errno: error.code)
        } catch {
            throw USMError.wrap(error, path: path)
        }
    }
}
