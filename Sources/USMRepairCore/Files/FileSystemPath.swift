import Foundation

/// File names are bytes; Swift strings are Unicode. Paths read from the file system (`readdir`,
/// `readlink`) or from an archive header become strings here, and strings become bytes again
/// only here, so a name round-trips exactly: NFC and NFD spellings stay distinct (they are
/// different files on Linux), and bytes that are not UTF-8 survive.
///
/// A byte that is not part of valid UTF-8 is written as the private-use character U+F700 + byte
/// (U+F780 for 0x80 ...). So that the mapping stays one-to-one, a name that really contains one of
/// U+F700...U+F7FF has each byte of that character written the same way. Everything else is the
/// name's own UTF-8. The manifest documents this (README, `manifest.json`).
public enum FileSystemPath {
    /// The first code point of the escape block.
    static let escapeBase: UInt32 = 0xF700

    /// The string for raw bytes read from the file system or an archive.
    public static func string<C: Collection>(fromBytes bytes: C) -> String where C.Element == UInt8 {
        let array = Array(bytes)
        if let plain = String(validating: array, as: UTF8.self), !containsEscapeBlock(array) { return plain }
        var scalars = String.UnicodeScalarView()
        var i = 0
        while i < array.count {
            if let (scalar, length) = decodeScalar(array, at: i), !(0xF700...0xF7FF).contains(scalar.value) {
                scalars.append(scalar)
                i += length
            } else {
                scalars.append(Unicode.Scalar(escapeBase + UInt32(array[i]))!)
                i += 1
            }
        }
        return String(scalars)
    }

    /// The bytes the file system knows `path` by.
    public static func bytes(_ path: String) -> [UInt8] {
        let utf8 = Array(path.utf8)
        guard containsEscapeBlock(utf8) else { return utf8 }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        for scalar in path.unicodeScalars {
            if (0xF700...0xF7FF).contains(scalar.value) {
                out.append(UInt8(scalar.value - escapeBase))
            } else {
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        return out
    }

    /// Calls `body` with the NUL-terminated bytes of `path`, for a system call.
    public static func withCString<T>(_ path: String, _ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        var raw = bytes(path)
        raw.append(0)
        return try raw.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }

    /// True when `path` holds a name that is not valid UTF-8, or one holding U+F700...U+F7FF (the
    /// escape block above): its string is not its bytes, so any call that takes the string as
    /// UTF-8 (Foundation, SQLite) would address another path. APFS and HFS+ store only valid
    /// Unicode names, so in an iOS or macOS container such a name comes from a damaged copy.
    public static func isUndecodable(_ path: String) -> Bool {
        path.unicodeScalars.contains { (0xF700...0xF7FF).contains($0.value) }
    }

    /// What is wrong with a path `isUndecodable` holds, in words for a message.
    public static func undecodableDefect(_ path: String) -> String {
        String(validating: bytes(path), as: UTF8.self) == nil
            ? "is not valid UTF-8, which APFS and HFS+ never store: the copy was damaged (unpacked with the wrong encoding?), and nothing below it is read"
            : "holds a character of U+F700...U+F7FF, which usm-repair keeps for bytes that are not UTF-8, so it cannot address it exactly: nothing below it is read"
    }

    /// The components of a path split at its `/` bytes, as the kernel splits it. (Splitting a
    /// Swift string at the character "/" would not: "/" followed by a combining mark is one
    /// character, so `../\u{301}x` would look like one name where the kernel goes up a level.)
    public static func components(_ path: String, omittingEmpty: Bool = true) -> [String] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: omittingEmpty).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// True when the path starts with the byte `/` (see `components` for why not `hasPrefix`).
    public static func isAbsolute(_ path: String) -> Bool {
        path.utf8.first == UInt8(ascii: "/")
    }

    /// The folder part of a path (`/` for an item at the top, `.` for a bare name), cut at the last `/` byte.
    public static func parent(_ path: String) -> String {
        let utf8 = path.utf8
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == utf8.startIndex { return "/" }
        return String(decoding: utf8[..<slash], as: UTF8.self)
    }

    /// The last component of a path, cut at the last `/` byte.
    public static func lastComponent(_ path: String) -> String {
        let utf8 = path.utf8
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(decoding: utf8[utf8.index(after: slash)...], as: UTF8.self)
    }

    /// True when `path` is `base` or lies below it, comparing bytes, component-wise.
    public static func isInside(_ path: String, _ base: String) -> Bool {
        let p = Array(path.utf8)
        let b = Array(base.utf8)
        if p == b { return true }
        let prefix = b.last == UInt8(ascii: "/") ? b : b + [UInt8(ascii: "/")]
        return p.count > prefix.count && p.starts(with: prefix)
    }

    /// `path` (absolute) with every symlink on it resolved, component by component, dangling ones
    /// too (their targets are followed as far as they exist): where a write under `path` would
    /// really land. Gives up after 40 links, as the kernel does, and returns what it has.
    public static func resolved(_ path: String) -> String {
        var pending = components(path)
        var result: [String] = []
        var hops = 0
        while !pending.isEmpty {
            let part = pending.removeFirst()
            if part == "." || part.isEmpty { continue }
            if part == ".." {
                _ = result.popLast()
                continue
            }
            let candidate = "/" + (result + [part]).joined(separator: "/")
            if FileStatus.lookup(candidate)?.kind == .symlink, hops < 40,
                let target = try? DirectoryListing.linkTarget(candidate)
            {
                hops += 1
                if isAbsolute(target) { result = [] }
                pending = components(target) + pending
            } else {
                result.append(part)
            }
        }
        return "/" + result.joined(separator: "/")
    }

    /// True when the bytes hold the UTF-8 lead of U+F700...U+F7FF (EF 9C..9F).
    private static func containsEscapeBlock(_ bytes: [UInt8]) -> Bool {
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == 0xEF, (0x9C...0x9F).contains(bytes[i + 1]) { return true }
            i += 1
        }
        return false
    }

    /// One well-formed UTF-8 scalar at `i` (no overlong forms, no surrogates), with its length.
    private static func decodeScalar(_ b: [UInt8], at i: Int) -> (Unicode.Scalar, Int)? {
        let first = b[i]
        let length: Int
        var value: UInt32
        switch first {
        case 0x00...0x7F: return (Unicode.Scalar(first), 1)
        case 0xC2...0xDF:
            length = 2
            value = UInt32(first & 0x1F)
        case 0xE0...0xEF:
            length = 3
            value = UInt32(first & 0x0F)
        case 0xF0...0xF4:
            length = 4
            value = UInt32(first & 0x07)
        default: return nil
        }
        guard i + length <= b.count else { return nil }
        for k in 1..<length {
            let c = b[i + k]
            guard c & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(c & 0x3F)
        }
        let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard value >= minimum, value <= 0x10FFFF, let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }
}

extension String {
    /// This path's bytes compared one by one: two spellings of "é" (NFC, NFD) differ, as they do
    /// on the file system, where Swift's `==` would call them equal.
    var pathKey: [UInt8] { FileSystemPath.bytes(self) }
}
