import CSupport
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few file-system operations every change is made of: a rename that replaces (or refuses
/// to), an atomic exchange of two paths, fsync of a file descriptor and of a folder, and a write
/// loop that survives interruptions. Renames stay within one file system, so each is atomic.
public enum AtomicRename {
    /// Renames `source` onto `target` in one step. Without `overwrite` an existing target is
    /// refused (`confirmationRequired`); on failure `source` is left for the caller to release.
    public static func replace(_ target: URL, with source: URL, overwrite: Bool) throws {
        if !overwrite, FileStatus.lookup(target.path) != nil {
            throw USMError.confirmationRequired("\(target.path) exists; pass --overwrite to replace it")
        }
        let result = FileSystemPath.withCString(source.path) { from in
            FileSystemPath.withCString(target.path) { rename(from, $0) }
        }
        guard result == 0 else { throw USMError.writeFailed(path: target.path, reason: errnoDescription()) }
    }

    /// Exchanges two existing paths atomically (Linux `renameat2(RENAME_EXCHANGE)`, macOS
    /// `renamex_np(RENAME_SWAP)`). Returns false when the file system cannot (the caller then
    /// moves the old item aside first).
    public static func exchange(_ a: URL, _ b: URL) -> Bool {
        FileSystemPath.withCString(a.path) { from in
            FileSystemPath.withCString(b.path) { usm_rename_exchange(from, $0) }
        } == 0
    }
}

/// fsync helpers: data reaches the disk before a rename makes it visible, and a rename reaches
/// the disk before the step that depends on it.
public enum FileSync {
    /// Flushes a folder's entries (a rename or a new file inside it) to disk; errors are ignored
    /// where the file system does not support it.
    public static func directory(_ url: URL) {
        let fd = FileSystemPath.withCString(url.path) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Flushes one file's bytes to disk, so they are there before a rename makes it visible.
    public static func file(_ url: URL) {
        let fd = FileSystemPath.withCString(url.path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// True where one call flushes a whole file system (Linux `syncfs`): many files written in a
    /// row are then flushed together, instead of one `fsync` each.
    public static var flushesWholeFileSystem: Bool {
        #if os(Linux)
            true
        #else
            false
        #endif
    }

    /// Flushes every file written on the file system holding `url` (and the folders' entries).
    /// - Throws: the write error when the flush fails (ENOSPC, EIO...).
    public static func fileSystem(of url: URL) throws {
        let fd = FileSystemPath.withCString(url.path) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.writing(url.path) }
        defer { close(fd) }
        if usm_sync_filesystem(fd) != 0 {
            guard errno == ENOSYS else { throw USMError.writing(url.path) }
            _ = fsync(fd)
        }
    }

    /// Writes every byte of `bytes` to `fd`, retrying on EINTR.
    /// - Throws: `writeFailed` naming `path` (ENOSPC and EFBIG included).
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw USMError.writing(path)
            }
            offset += n
        }
    }
}
