import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A file system mounted in process (`mount(2)`, root only), for the tests of out-of-space and
/// read-only errors without starting `mount`: a small tmpfs, or a folder made read-only in place.
struct TestMount {
    let url: URL

    /// Mounts a tmpfs of `size` bytes at `url` (an existing folder), read-only when asked.
    init(tmpfsAt url: URL, size: Int, readOnly: Bool = false) throws {
        self.url = url
        try Self.check(mount("tmpfs", url.path, "tmpfs", readOnly ? UInt(MS_RDONLY) : 0, "size=\(size)"), url)
    }

    /// Makes the folder `url` read-only where it is (a read-only bind mount of itself): nobody,
    /// root included, can change anything below it until `unmount`. Where the tests do not run as
    /// root, the folder's mode is taken away instead (which then stops its owner too).
    init(readOnly url: URL) throws {
        self.url = url
        guard geteuid() == 0 else {
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: url.path)
            return
        }
        try Self.check(mount(url.path, url.path, nil, UInt(MS_BIND), nil), url)
        try Self.check(mount(nil, url.path, nil, UInt(MS_REMOUNT | MS_BIND | MS_RDONLY), nil), url)
    }

    /// Unmounts it (lazily, so a descriptor left open cannot keep it), or gives the mode back.
    func unmount() {
        if geteuid() == 0 {
            _ = umount2(url.path, Int32(MNT_DETACH))
        } else {
            _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        }
    }

    private static func check(_ result: Int32, _ url: URL) throws {
        guard result == 0 else {
            throw CocoaError(
                .fileWriteUnknown,
                userInfo: [NSLocalizedDescriptionKey: "mount at \(url.path): \(String(cString: strerror(errno)))"])
        }
    }
}
