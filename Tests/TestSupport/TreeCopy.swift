import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Copies a folder tree as `cp -a` would, in process: files with their bytes, modes and file
/// times (to the nanosecond), symbolic links as links, so that a copy compares equal to its
/// original in a `TreeSnapshot`.
public enum TreeCopy {
    public static func copy(_ from: URL, to: URL) throws {
        var info = stat()
        guard lstat(from.path, &info) == 0 else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: from.path])
        }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            try FileManager.default.createDirectory(at: to, withIntermediateDirectories: false)
            for name in try FileManager.default.contentsOfDirectory(atPath: from.path) {
                try copy(from.appendingPathComponent(name), to: to.appendingPathComponent(name))
            }
        case S_IFLNK:
            let target = try FileManager.default.destinationOfSymbolicLink(atPath: from.path)
            try FileManager.default.createSymbolicLink(atPath: to.path, withDestinationPath: target)
            return
        default:
            try FileManager.default.copyItem(at: from, to: to)
        }
        chmod(to.path, info.st_mode & 0o7777)
        #if canImport(Glibc)
            var times = [info.st_atim, info.st_mtim]
        #else
            var times = [info.st_atimespec, info.st_mtimespec]
        #endif
        utimensat(AT_FDCWD, to.path, &times, AT_SYMLINK_NOFOLLOW)
    }
}
