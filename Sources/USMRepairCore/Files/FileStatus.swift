import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `lstat` says about a path, without following a final symlink.
public struct FileStatus: Sendable, Equatable {
    /// The kind of file system object.
    public enum Kind: String, Sendable, Codable {
        case file, directory, symlink, fifo, socket
        case characterDevice = "char-device"
        case blockDevice = "block-device"
        case other

        /// The kind in words, for messages ("a FIFO (named pipe)", "a regular file"...), without the article.
        public var description: String {
            switch self {
            case .file: "regular file"
            case .directory: "folder"
            case .symlink: "symlink"
            case .fifo: "FIFO (named pipe)"
            case .socket: "socket"
            case .characterDevice: "character device"
            case .blockDevice: "block device"
            case .other: "special file"
            }
        }
    }

    /// Kind of the object itself (a symlink is `.symlink`, not its target's kind).
    public let kind: Kind
    /// Size in bytes.
    public let size: Int64
    /// Permission bits.
    public let mode: UInt32
    /// Last modification.
    public let mtime: FileTime
    /// Last status change: a rewrite in place that restores the mtime still changes it.
    public let ctime: FileTime
    /// Inode number: a file replaced by rename has another.
    public let inode: UInt64
    /// The device holding it: with the inode, what identifies one file system object.
    public let device: UInt64

    /// True when two looks at one path saw the same unchanged file.
    public func sameContent(as other: FileStatus) -> Bool {
        kind == other.kind && size == other.size && mtime == other.mtime && ctime == other.ctime && inode == other.inode
    }

    /// Stats `path` without following a symlink; nil when nothing is there.
    public static func lookup(_ path: String) -> FileStatus? {
        try? examine(path)
    }

    /// The number of hard links (names) of the object at `path`, not following a symlink: a file
    /// with more than one is also reachable elsewhere. Nil when nothing is there.
    public static func links(_ path: String) -> UInt64? {
        var st = stat()
        guard FileSystemPath.withCString(path, { Glibc_lstat($0, &st) }) == 0 else { return nil }
        return UInt64(st.st_nlink)
    }

    /// Stats `path` following symlinks; nil when nothing (or a dangling link) is there.
    public static func resolve(_ path: String) -> FileStatus? {
        var st = stat()
        guard FileSystemPath.withCString(path, { Glibc_stat($0, &st) }) == 0 else { return nil }
        return FileStatus(st)
    }

    /// True when `first` and `second` name one file system object, links followed (the same
    /// device and inode): a hard link, a path through a symlinked folder or a symlink to the
    /// other. False when either is absent.
    public static func sameObject(_ first: String, _ second: String) -> Bool {
        guard let a = resolve(first), let b = resolve(second) else { return false }
        return a.device == b.device && a.inode == b.inode
    }

    /// Stats `path` without following a symlink and tells absence from failure: nil when nothing
    /// is there (or a parent is not a folder), `unreadable` when a folder on the way may not be
    /// searched (permissions) or another error stops the look.
    public static func examine(_ path: String) throws -> FileStatus? {
        var st = stat()
        guard FileSystemPath.withCString(path, { Glibc_lstat($0, &st) }) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return nil }
            throw USMError.unreadable(path: path, reason: errnoDescription(code))
        }
        return FileStatus(st)
    }

    /// A status as recorded earlier (a bundle's catalog keeps what it saw).
    init(kind: Kind, size: Int64, mode: UInt32, mtime: FileTime, ctime: FileTime, inode: UInt64, device: UInt64) {
        self.kind = kind
        self.size = size
        self.mode = mode
        self.mtime = mtime
        self.ctime = ctime
        self.inode = inode
        self.device = device
    }

    init(_ st: stat) {
        let fmt = UInt32(st.st_mode) & UInt32(S_IFMT)
        switch fmt {
        case UInt32(S_IFREG): kind = .file
        case UInt32(S_IFDIR): kind = .directory
        case UInt32(S_IFLNK): kind = .symlink
        case UInt32(S_IFIFO): kind = .fifo
        case UInt32(S_IFSOCK): kind = .socket
        case UInt32(S_IFCHR): kind = .characterDevice
        case UInt32(S_IFBLK): kind = .blockDevice
        default: kind = .other
        }
        size = Int64(st.st_size)
        mode = UInt32(st.st_mode) & 0o7777
        inode = UInt64(st.st_ino)
        device = UInt64(st.st_dev)
        #if canImport(Darwin)
            mtime = FileTime(seconds: Int64(st.st_mtimespec.tv_sec), nanoseconds: Int32(st.st_mtimespec.tv_nsec))
            ctime = FileTime(seconds: Int64(st.st_ctimespec.tv_sec), nanoseconds: Int32(st.st_ctimespec.tv_nsec))
        #else
            mtime = FileTime(seconds: Int64(st.st_mtim.tv_sec), nanoseconds: Int32(st.st_mtim.tv_nsec))
            ctime = FileTime(seconds: Int64(st.st_ctim.tv_sec), nanoseconds: Int32(st.st_ctim.tv_nsec))
        #endif
    }
}

private func Glibc_lstat(_ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<stat>) -> Int32 {
    lstat(path, buf)
}

private func Glibc_stat(_ path: UnsafePointer<CChar>, _ buf: UnsafeMutablePointer<stat>) -> Int32 {
    stat(path, buf)
}

/// The text of the last OS error, for messages.
func errnoDescription(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
