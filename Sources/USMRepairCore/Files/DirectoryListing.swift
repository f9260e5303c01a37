import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Lists a folder with `readdir`: every name exactly as the file system holds it (see
/// `FileSystemPath`), never following a link, and a folder that cannot be listed is an error, not
/// an empty folder. Streams: a folder of 200,000 entries is never held whole unless asked.
public enum DirectoryListing {
    /// Calls `body` with each entry's name (without `.` and `..`), in the order `readdir` gives.
    /// - Throws: `unreadable` naming the folder when it cannot be opened or read.
    public static func forEach(_ path: String, _ body: (String) throws -> Void) throws {
        guard let dir = FileSystemPath.withCString(path, { opendir($0) }) else {
            throw USMError.unreadable(path: path, reason: "cannot list the folder: \(errnoDescription())")
        }
        defer { closedir(dir) }
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 {
                    throw USMError.unreadable(path: path, reason: "cannot list the folder: \(errnoDescription())")
                }
                return
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
                let bytes = raw.bindMemory(to: UInt8.self)
                let length = bytes.firstIndex(of: 0) ?? bytes.count
                if length == 1, bytes[0] == UInt8(ascii: ".") { return nil }
                if length == 2, bytes[0] == UInt8(ascii: "."), bytes[1] == UInt8(ascii: ".") { return nil }
                return FileSystemPath.string(fromBytes: bytes[0..<length])
            }
            if let name { try body(name) }
        }
    }

    /// Every entry name, sorted by bytes.
    public static func names(_ path: String) throws -> [String] {
        var names: [String] = []
        try forEach(path) { names.append($0) }
        return names.sorted { $0.pathKey.lexicographicallyPrecedes($1.pathKey) }
    }

    /// The target text of the symlink at `path`, exactly as stored.
    public static func linkTarget(_ path: String) throws -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = FileSystemPath.withCString(path) { cpath in
            buffer.withUnsafeMutableBufferPointer {
                readlink(
                    cpath, UnsafeMutableRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count - 1)
            }
        }
        guard n >= 0 else {
            throw USMError.unreadable(path: path, reason: "cannot read the link: \(errnoDescription())")
        }
        return FileSystemPath.string(fromBytes: buffer[0..<n])
    }
}
