import CSupport
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Folders reached from a root one name at a time, never through a link: each name is opened with
/// `O_NOFOLLOW` relative to the folder before it, and the change (a new folder, a rename) is made
/// relative to the descriptor of the last one. A check of the path first and a change by path
/// after it leave a moment in which a link swapped in for a folder on the way is followed (a
/// folder made, a file moved, outside the layout); here there is no such moment: a link met on the
/// way is refused, and a folder swapped away after it was opened is still the folder acted in.
enum AnchoredPath {
    /// Opens the folder `path`, which is `root` or lies below it, making the folders that are
    /// missing (mode 0700) when `create` is true. `root` itself is opened as it is named (a root
    /// given on the command line may be reached through a link); nothing below it is.
    /// - Returns: a descriptor the caller closes.
    /// - Throws: `symlinkEscapes` for a link on the way; `writeFailed` when a folder cannot be
    ///   opened or made (missing without `create`, not a folder, an I/O error).
    static func openFolder(_ path: String, under root: String, create: Bool) throws -> Int32 {
        let rootParts = FileSystemPath.components(root)
        let parts = FileSystemPath.components(path)
        guard FileSystemPath.isInside(path, root), parts.count >= rootParts.count else {
            throw USMError.unexpected("\(path) is not below \(root)")
        }
        var fd = FileSystemPath.withCString(root) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else {
            throw USMError.writeFailed(path: root, reason: "cannot open the folder: \(errnoDescription())")
        }
        var current = root
        for part in parts[rootParts.count...] {
            current += (current.hasSuffix("/") ? "" : "/") + part
            guard part != ".", part != ".." else {
                close(fd)
                throw USMError.writeFailed(path: current, reason: "a path with \"\(part)\" in it is never followed")
            }
            var next = openEntry(part, in: fd)
            if next < 0, errno == ENOENT, create {
                let made = FileSystemPath.withCString(part) { mkdirat(fd, $0, 0o700) }
                if made != 0, errno != EEXIST {
                    let code = errno
                    close(fd)
                    throw USMError.writeFailed(
                        path: current, reason: "cannot make the folder: \(errnoDescription(code))")
                }
                next = openEntry(part, in: fd)
            }
            guard next >= 0 else {
                let code = errno
                close(fd)
                if FileStatus.lookup(current)?.kind == .symlink {
                    throw USMError.symlinkEscapes(
                        path: current, target: URL(fileURLWithPath: current).resolvingSymlinksInPath().path, root: root)
                }
                throw USMError.writeFailed(path: current, reason: "cannot open the folder: \(errnoDescription(code))")
            }
            close(fd)
            fd = next
        }
        return fd
    }

    /// Makes the folder `path` (and those missing above it, up to `root`), never through a link.
    static func makeFolder(_ path: String, under root: String) throws {
        close(try openFolder(path, under: root, create: true))
    }

    /// Renames `from` to `to` (each below its own root, which may be the same) through the
    /// descriptors of their folders, opened link-free, and only when nothing is at `to`
    /// (`RENAME_NOREPLACE` where the file system promises it, a check just before otherwise): an
    /// item that appeared there since the plan was checked is never replaced. Both folders are
    /// flushed afterwards.
    /// - Throws: `symlinkEscapes` (a link on the way), `changedSincePlanning` (something at `to`),
    ///   `writeFailed` (the rename failed).
    static func move(_ from: String, under fromRoot: String, to: String, under toRoot: String) throws {
        let source = try openFolder(FileSystemPath.parent(from), under: fromRoot, create: false)
        defer { close(source) }
        let target = try openFolder(FileSystemPath.parent(to), under: toRoot, create: false)
        defer { close(target) }
        let fromName = FileSystemPath.lastComponent(from)
        let toName = FileSystemPath.lastComponent(to)
        var result = FileSystemPath.withCString(fromName) { a in
            FileSystemPath.withCString(toName) { usm_renameat_noreplace(source, a, target, $0) }
        }
        if result != 0, [EINVAL, ENOSYS, ENOTSUP, EOPNOTSUPP].contains(errno) {
            // No promise from this file system: check, then rename (what every system can do).
            guard FileIdentity.of(entry: toName, in: target) == nil else {
                throw USMError.changedSincePlanning(path: to)
            }
            result = FileSystemPath.withCString(fromName) { a in
                FileSystemPath.withCString(toName) { renameat(source, a, target, $0) }
            }
        }
        guard result == 0 else {
            let code = errno
            if code == EEXIST || code == ENOTEMPTY { throw USMError.changedSincePlanning(path: to) }
            throw USMError.writeFailed(path: to, reason: "cannot move \(from) there: \(errnoDescription(code))")
        }
        _ = fsync(target)
        _ = fsync(source)
    }

    /// Opens the entry `name` of the folder `fd` as a folder, never through a link.
    private static func openEntry(_ name: String, in fd: Int32) -> Int32 {
        FileSystemPath.withCString(name) { openat(fd, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
    }
}
