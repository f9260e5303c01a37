import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The text of an XML plist as Apple's parser reads it: UTF-8 only, the predefined entities and
/// character references, CDATA as it is. Shared by `PreferencesReader` and `XMLPlistEditor`.
enum XMLPlistText {
    /// CDATA content as text with markup characters escaped, so that `decode` gives it back as it is.
    static func escaped(cdata bytes: [UInt8]) -> [UInt8] {
        let content = bytes.dropFirst(9).dropLast(3)
        var out: [UInt8] = []
        for byte in content {
            switch byte {
            case UInt8(ascii: "&"): out += Array("&amp;".utf8)
            case UInt8(ascii: "<"): out += Array("&lt;".utf8)
            default: out.append(byte)
            }
        }
        return out
    }

    /// Text with its line ends normalised and its entity and character references replaced, as the
    /// reader (`PreferencesReader`, libxml2) reads it: a CR or CR LF in the file is one LF (XML 1.0
    /// §2.11), a `&#13;` stays a CR. The editor decides what to remove from the text the reader
    /// reported, so the two must agree (found by the `PreferencesEdit` fuzz target: a cached value
    /// holding a CR was reported, named for removal, and kept).
    /// - Throws: `Malformed` for a reference it does not know.
    static func decode(_ text: [UInt8]) throws -> String? {
        var raw = text
        if raw.contains(UInt8(ascii: "\r")) {
            raw = []
            raw.reserveCapacity(text.count)
            for (i, byte) in text.enumerated()
            where byte != UInt8(ascii: "\r") || i + 1 == text.count
                || text[i + 1] != UInt8(ascii: "\n")
            {
                raw.append(byte == UInt8(ascii: "\r") ? UInt8(ascii: "\n") : byte)
            }
        }
        guard raw.contains(UInt8(ascii: "&")) else { return String(decoding: raw, as: UTF8.self) }
        var out = String.UnicodeScalarView()
        var bytes: [UInt8] = []
        var i = 0
        func flush() {
            out.append(contentsOf: String(decoding: bytes, as: UTF8.self).unicodeScalars)
            bytes = []
        }
        while i < raw.count {
            guard raw[i] == UInt8(ascii: "&") else {
                bytes.append(raw[i])
                i += 1
                continue
            }
            guard let end = raw[i...].firstIndex(of: UInt8(ascii: ";")), end - i <= 12 else {
                throw PreferencesReader.Malformed(reason: "it has an unfinished entity reference")
            }
            let name = String(decoding: raw[(i + 1)..<end], as: UTF8.self)
            let scalar: Unicode.Scalar?
            switch name {
            case "amp": scalar = "&"
            case "lt": scalar = "<"
            case "gt": scalar = ">"
            case "quot": scalar = "\""
            case "apos": scalar = "'"
            default:
                if name.hasPrefix("#x") {
                    scalar = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if name.hasPrefix("#") {
                    scalar = UInt32(name.dropFirst(1), radix: 10).flatMap(Unicode.Scalar.init)
                } else {
                    scalar = nil
                }
            }
            guard let scalar else {
                throw PreferencesReader.Malformed(
                    reason: "it refers to an entity the app's parser does not know (&\(name);)")
            }
            flush()
            out.append(scalar)
            i = end + 1
        }
        flush()
        return String(out)
    }

    /// Why the document is not one this editor (and the app) reads as UTF-8, judged on its first bytes.
    static func encodingProblem(_ prefix: [UInt8]) -> String? {
        if prefix.starts(with: [0xFE, 0xFF]) || prefix.starts(with: [0xFF, 0xFE]) || prefix.prefix(4).contains(0) {
            return "it is an XML plist in UTF-16 or UTF-32; only UTF-8 is read"
        }
        let text = String(decoding: prefix, as: UTF8.self)
        guard text.drop(while: { $0 == "\u{FEFF}" || $0.isWhitespace }).hasPrefix("<?xml"),
            let close = text.range(of: "?>")
        else { return nil }
        let declaration = text[..<close.lowerBound].lowercased()
        guard let at = declaration.range(of: "encoding") else { return nil }
        let value = declaration[at.upperBound...].drop {
            $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" || $0 == "\t"
        }
        .prefix { $0 != "\"" && $0 != "'" && $0 != " " }
        return ["utf-8", "utf8", "us-ascii", "ascii"].contains(String(value))
            ? nil : "it is an XML plist in \(value); only UTF-8 is read"
    }

    /// Bytes of the prolog (what comes before the root element) read at most.
    static let maxProlog = 1 << 16

    /// The public identifiers of Apple's plist DTD, the only DTD a preferences plist names.
    static let applePublicIDs: Set<String> = ["-//Apple//DTD PLIST 1.0//EN", "-//Apple Computer//DTD PLIST 1.0//EN"]

    /// Why the prolog (the first bytes, up to the root element) is not one the app reads: a
    /// DOCTYPE with an internal subset (entity or parameter-entity declarations), one naming a
    /// DTD by `SYSTEM` or by another public identifier than Apple's plist DTD, or any other
    /// declaration. Apple's `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://...">`
    /// is accepted: it declares nothing and is never fetched. Nil when the prolog is acceptable.
    static func prologProblem(_ prefix: [UInt8]) -> String? {
        var rest = Substring(String(decoding: prefix, as: UTF8.self))
        while true {
            rest = rest.drop { $0.isWhitespace || $0 == "\u{FEFF}" }
            if rest.hasPrefix("<?") {
                guard let end = rest.range(of: "?>") else { return "its XML declaration is not closed" }
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<!--") {
                guard let end = rest.range(of: "-->") else { return "a comment before its root element is not closed" }
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<!DOCTYPE") {
                guard let end = rest.firstIndex(of: ">") else { return "its DOCTYPE is not closed" }
                if let problem = doctypeProblem(rest[rest.index(rest.startIndex, offsetBy: 9)..<end]) {
                    return problem
                }
                rest = rest[rest.index(after: end)...]
            } else if rest.hasPrefix("<!") {
                return
                    "it holds a declaration before its root element (\(rest.prefix(12))...), which the app's parser does not read"
            } else {
                if rest.isEmpty, prefix.count >= maxProlog {
                    return "nothing but declarations and comments in its first \(maxProlog / 1024) KiB"
                }
                return nil
            }
        }
    }

    /// Why one DOCTYPE's body (between `<!DOCTYPE` and `>`) is refused, or nil for Apple's.
    private static func doctypeProblem(_ body: Substring) -> String? {
        if body.contains("[") || body.contains("<") || body.contains("%") {
            return "its DOCTYPE declares entities (an internal subset), which the app's parser does not read"
        }
        // Tokens: the root name, then PUBLIC "id" "uri", SYSTEM "uri", or nothing.
        var tokens: [String] = []
        var current = ""
        var quote: Character?
        for char in body {
            if let open = quote {
                if char == open {
                    tokens.append(current)
                    current = ""
                    quote = nil
                } else {
                    current.append(char)
                }
            } else if char == "\"" || char == "'" {
                quote = char
            } else if char.isWhitespace {
                if !current.isEmpty { tokens.append(current) }
                current = ""
            } else {
                current.append(char)
            }
        }
        if quote != nil { return "its DOCTYPE is not closed" }
        if !current.isEmpty { tokens.append(current) }
        guard tokens.first == "plist" else { return "its DOCTYPE is not a plist's" }
        switch tokens.dropFirst().first {
        case nil:
            return tokens.count == 1 ? nil : "its DOCTYPE is not a plist's"
        case "PUBLIC":
            guard tokens.count <= 4, tokens.count >= 3, applePublicIDs.contains(tokens[2]) else {
                return "its DOCTYPE names a DTD other than Apple's plist DTD, which the app's parser does not read"
            }
            return nil
        default:
            return
                "its DOCTYPE names an external DTD (\(tokens.dropFirst().prefix(2).joined(separator: " "))), which the app's parser does not read"
        }
    }

    /// Why the file at `path` is not valid UTF-8 or holds a processing instruction without data
    /// (nil when neither), read as a stream. The XML parser is handed only valid UTF-8 without such
    /// instructions: FoundationXML stops the process on either (`EmptyInstructionScan`).
    static func utf8Problem(path: String) throws -> String? {
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var need = 0
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        var offset = 0
        var instructions = EmptyInstructionScan()
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw USMError.unreadable(path: path, reason: errnoDescription()) }
            if n == 0 { return need == 0 ? nil : "it is not valid UTF-8 (it ends inside a character)" }
            for i in 0..<n {
                let byte = buffer[i]
                if let start = instructions.feed(byte, at: offset + i) {
                    return EmptyInstructionScan.problem(at: start)
                }
                if need > 0 {
                    guard byte >= low, byte <= high else { return "it is not valid UTF-8 (at byte \(offset + i))" }
                    need -= 1
                    low = 0x80
                    high = 0xBF
                    continue
                }
                switch byte {
                case 0x00: return "it holds a NUL byte (at byte \(offset + i))"
                case 0x01...0x7F: break
                case 0xC2...0xDF: need = 1
                case 0xE0:
                    need = 2
                    low = 0xA0
                case 0xE1...0xEC, 0xEE, 0xEF: need = 2
                case 0xED:
                    need = 2
                    high = 0x9F
                case 0xF0:
                    need = 3
                    low = 0x90
                case 0xF1...0xF3: need = 3
                case 0xF4:
                    need = 3
                    high = 0x8F
                default: return "it is not valid UTF-8 (at byte \(offset + i))"
                }
            }
            offset += n
        }
    }
}
