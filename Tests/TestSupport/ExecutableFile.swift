import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// Writes a program (a plugin script) for a test to run. The file is written through a
/// close-on-exec descriptor: commands run in process, so a process another test starts meanwhile
/// must not inherit a descriptor open for writing on it (exec would then fail with ETXTBSY).
public enum ExecutableFile {
    public static func write(_ text: String, to url: URL) throws {
        try copy(Data(text.utf8), to: url)
    }

    /// Copies `source` to `url` as an executable, the same way.
    public static func copy(from source: URL, to url: URL) throws {
        try copy(Data(contentsOf: source), to: url)
    }

    private static func copy(_ data: Data, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
        defer { close(fd) }
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
                offset += n
            }
        }
        _ = fchmod(fd, 0o755)
    }
}
