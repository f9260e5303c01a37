import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// Every entry below a folder as raw bytes, read with `readdir`, `lstat` and `readlink` and hashed
/// here (what `find -printf` and `sha256sum` would print): independent of the code under test, and
/// exact for names that are not UTF-8.
public enum RawTree {
    /// One line per entry, sorted by name bytes: `name|kind|size|mode|link target|sha256 of a file`.
    public static func listing(_ root: URL) throws -> Data {
        var lines: [[UInt8]] = []
        try walk(Array(root.path.utf8), relative: [], into: &lines)
        return Data(lines.sorted { $0.lexicographicallyPrecedes($1) }.joined(separator: [0x0A]))
    }

    private static func walk(_ dir: [UInt8], relative: [UInt8], into lines: inout [[UInt8]]) throws {
        guard let handle = cPath(dir, opendir) else { throw CocoaError(.fileReadUnknown) }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            let path = dir + [0x2F] + name
            let rel = relative.isEmpty ? name : relative + [0x2F] + name
            var st = stat()
            guard cPath(path, { lstat($0, &st) }) == 0 else { throw CocoaError(.fileReadUnknown) }
            var line = rel
            let kind = st.st_mode & S_IFMT
            line += Array(
                "|\(kind == S_IFDIR ? "d" : kind == S_IFLNK ? "l" : kind == S_IFREG ? "f" : "?")|\(kind == S_IFREG ? Int(st.st_size) : 0)|\(String(st.st_mode & 0o7777, radix: 8))|"
                    .utf8)
            if kind == S_IFLNK {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let n = cPath(path) { p in
                    buffer.withUnsafeMutableBufferPointer {
                        readlink(p, UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), 4096)
                    }
                }
                line += buffer.prefix(max(0, n))
            } else if kind == S_IFREG {
                let data = try cPath(path) { p -> Data in
                    let fd = open(p, O_RDONLY | O_CLOEXEC)
                    guard fd >= 0 else { throw CocoaError(.fileReadUnknown) }
                    defer { close(fd) }
                    return FileHandle(fileDescriptor: fd, closeOnDealloc: false).readDataToEndOfFile()
                }
                line +=
                    Array("|".utf8) + Array(SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined().utf8)
            }
            lines.append(line)
            if kind == S_IFDIR { try walk(path, relative: rel, into: &lines) }
        }
    }

    private static func cPath<T>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        try (bytes + [0]).withUnsafeBufferPointer {
            try $0.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }
}
