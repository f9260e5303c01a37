import CSupport
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What identifies one file system object: its device, inode and kind. A scratch item is removed
/// only while the path still holds the very object that was created there.
public struct FileIdentity: Sendable, Equatable, Codable {
    /// `file` or `directory`: the only kinds this tool creates as scratch items.
    public enum Kind: String, Sendable, Codable { case file, directory, other }

    /// The device holding it.
    public let device: UInt64
    /// Its inode number on that device.
    public let inode: UInt64
    /// What it is.
    public let kind: Kind
    /// When it was created, where the file system keeps it: an inode number reused by a later
    /// file (same device, inode and kind) still differs here.
    public var birth: FileTime?

    init(_ st: stat, birth: FileTime? = nil) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        switch UInt32(st.st_mode) & UInt32(S_IFMT) {
        case UInt32(S_IFREG): kind = .file
        case UInt32(S_IFDIR): kind = .directory
        default: kind = .other
        }
        self.birth = birth
    }

    /// Same object: device, inode and kind equal, and birth times equal where both are known.
    public static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        a.device == b.device && a.inode == b.inode && a.kind == b.kind
            && (a.birth == nil || b.birth == nil || a.birth == b.birth)
    }

    /// The identity of what an open descriptor refers to.
    static func of(fd: Int32) -> FileIdentity? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return FileIdentity(st, birth: birthTime(dirfd: fd, name: nil))
    }

    /// The identity of the entry `name` of the open folder `dirfd`, without following a link.
    static func of(entry name: String, in dirfd: Int32) -> FileIdentity? {
        var st = stat()
        guard FileSystemPath.withCString(name, { fstatat(dirfd, $0, &st, AT_SYMLINK_NOFOLLOW) }) == 0 else {
            return nil
        }
        return FileIdentity(st, birth: birthTime(dirfd: dirfd, name: name))
    }

    private static func birthTime(dirfd: Int32, name: String?) -> FileTime? {
        var seconds: Int64 = 0
        var nanoseconds = 0
        let result: Int32
        if let name {
            result = FileSystemPath.withCString(name) {
                usm_birth_time(dirfd, $0, AT_SYMLINK_NOFOLLOW, &seconds, &nanoseconds)
            }
        } else {
            result = usm_birth_time(dirfd, nil, 0, &seconds, &nanoseconds)
        }
        return result == 0 ? FileTime(seconds: seconds, nanoseconds: Int32(nanoseconds)) : nil
    }
}

/// Removes a tree this tool made without ever following a symlink: every step works on file
/// descriptors (`openat` with `O_NOFOLLOW`, `fstatat` without following, `unlinkat`), a folder is
/// made writable through its own descriptor, never through a path, and a link found inside is
/// removed as a link. Never throws: what cannot be removed is left.
enum SafeRemove {
    /// Folders nested deeper than this are left (each level holds one descriptor open).
    static let maxDepth = 400

    /// Removes the item at `path` when it is still `expected` (device, inode and kind; a regular
    /// file or a folder), a folder with everything in it. Returns false when something else is
    /// there now, or it could not be removed; a symlink at `path` is never followed nor removed.
    @discardableResult
    static func remove(_ path: String, expected: FileIdentity) -> Bool {
        guard expected.kind != .other else { return false }
        let parent = FileSystemPath.withCString(FileSystemPath.parent(path)) {
            open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard parent >= 0 else { return false }
        defer { close(parent) }
        return removeEntry(in: parent, FileSystemPath.lastComponent(path), expected: expected, depth: 0)
    }

    /// Removes whatever is at `url` (a folder with everything in it, a file, a link as a link),
    /// never following a symlink: for trees this tool made and no longer records (an operation's
    /// staging or trash, found through its journal).
    /// - Throws: `writeFailed` naming `url` when something in it could not be removed.
    static func tree(_ url: URL) throws {
        let path = url.path
        guard FileStatus.lookup(path) != nil else { return }
        let parent = FileSystemPath.withCString(FileSystemPath.parent(path)) {
            open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard parent >= 0 else { throw USMError.writing(path) }
        defer { close(parent) }
        guard removeEntry(in: parent, FileSystemPath.lastComponent(path), expected: nil, depth: 0) else {
            throw USMError.writeFailed(path: path, reason: "it could not be removed entirely (\(errnoDescription()))")
        }
    }

    /// Removes the entry `name` of the open folder `dirfd`; `expected` nil removes whatever it is
    /// (inside a tree already proven ours), a link as a link.
    private static func removeEntry(in dirfd: Int32, _ name: String, expected: FileIdentity?, depth: Int) -> Bool {
        var st = stat()
        guard FileSystemPath.withCString(name, { fstatat(dirfd, $0, &st, AT_SYMLINK_NOFOLLOW) }) == 0 else {
            return false
        }
        let found = expected == nil ? FileIdentity(st) : (FileIdentity.of(entry: name, in: dirfd) ?? FileIdentity(st))
        if let expected, expected != found { return false }
        guard found.kind == .directory else {
            return FileSystemPath.withCString(name) { unlinkat(dirfd, $0, 0) } == 0
        }
        guard depth < maxDepth else { return false }
        var fd = FileSystemPath.withCString(name) { openat(dirfd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        if fd < 0, errno == EACCES {
            // A folder we made read-only (a restored mode): make it ours again without following a link.
            guard FileSystemPath.withCString(name, { fchmodat(dirfd, $0, 0o700, AT_SYMLINK_NOFOLLOW) }) == 0 else {
                return false
            }
            fd = FileSystemPath.withCString(name) { openat(dirfd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        }
        guard fd >= 0 else { return false }
        // Still the folder that was looked at (not swapped between the two calls).
        guard FileIdentity.of(fd: fd) == found else {
            close(fd)
            return false
        }
        if UInt32(st.st_mode) & 0o700 != 0o700 { _ = fchmod(fd, 0o700) }
        empty(fd, depth: depth)
        close(fd)
        return FileSystemPath.withCString(name) { unlinkat(dirfd, $0, AT_REMOVEDIR) } == 0
    }

    /// At most this many removals wait on the device at once (`unlinkFiles`).
    static let lanes = 16

    /// Removes the entries of `names` in the open folder `fd` that are not folders, several at a
    /// time (`usm_unlink_files`: a file's removal can wait on the device — a discard on a file
    /// system mounted with `discard` took about 4 ms per synced file here — and those waits
    /// overlap), and returns the rest: folders, and entries whose removal failed, for
    /// `removeEntry` to handle one by one. Few names are removed on this thread.
    private static func unlinkFiles(_ names: [String], in fd: Int32) -> [String] {
        guard names.count >= 8 else { return names }
        let raw = names.map { name -> UnsafeMutablePointer<CChar>? in
            var bytes = FileSystemPath.bytes(name)
            bytes.append(0)
            return bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { strdup($0.baseAddress!) }
            }
        }
        defer { for pointer in raw { free(pointer) } }
        guard raw.allSatisfy({ $0 != nil }) else { return names }
        var results = [Int32](repeating: -1, count: names.count)
        let pointers = raw.map { UnsafePointer($0) }
        _ = pointers.withUnsafeBufferPointer { list in
            results.withUnsafeMutableBufferPointer { out in
                usm_unlink_files(fd, list.baseAddress, Int32(names.count), Int32(lanes), out.baseAddress)
            }
        }
        return zip(names, results).compactMap { $1 == 0 ? nil : $0 }
    }

    /// Removes everything in the open folder `fd`, a batch of names at a time (memory stays flat).
    private static func empty(_ fd: Int32, depth: Int) {
        let copy = dup(fd)
        guard copy >= 0, let dir = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return
        }
        defer { closedir(dir) }
        var failed: Set<[UInt8]> = []
        while true {
            var batch: [String] = []
            while batch.count < 1024, let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
                    let bytes = raw.bindMemory(to: UInt8.self)
                    let length = bytes.firstIndex(of: 0) ?? bytes.count
                    if length == 1, bytes[0] == UInt8(ascii: ".") { return nil }
                    if length == 2, bytes[0] == UInt8(ascii: "."), bytes[1] == UInt8(ascii: ".") { return nil }
                    return FileSystemPath.string(fromBytes: bytes[0..<length])
                }
                if let name, !failed.contains(name.pathKey) { batch.append(name) }
            }
            if batch.isEmpty { return }
            for name in unlinkFiles(batch, in: fd)
            where !removeEntry(in: fd, name, expected: nil, depth: depth + 1) {
                failed.insert(name.pathKey)
            }
            rewinddir(dir)
        }
    }
}
