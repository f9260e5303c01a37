import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A JSON value small enough to hold: what `JSONStream.readValue` returns.
indirect enum JSONValue {
    case object([(String, JSONValue)])
    case array([JSONValue])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.last { $0.0 == key }?.1
    }

    var string: String? { if case let .string(s) = self { s } else { nil } }
    var int64: Int64? { if case let .number(n) = self { Int64(n) } else { nil } }
    var bool: Bool? { if case let .bool(b) = self { b } else { nil } }
    var array: [JSONValue]? { if case let .array(a) = self { a } else { nil } }
    var isNull: Bool { if case .null = self { true } else { false } }
}

/// Reads JSON from a file a block at a time, as a pull parser: a manifest of hundreds of MB is
/// walked with a few KiB of memory. Values are materialized only when asked (`readValue`, within a
/// byte budget) and otherwise skipped without being kept; strings, nesting and numbers are bounded,
/// so no input can make the reader hold more than it allows.
struct JSONStream {
    /// Why the text is not the JSON expected.
    struct Failure: Error {
        let message: String
    }

    /// The longest string kept.
    static let maxString = 1 << 20
    /// The deepest nesting accepted.
    static let maxDepth = 64

    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var filled = 0
    private var index = 0
    private var atEnd = false
    /// Per open container: whether an element has been read (so a comma is due).
    private var started: [Bool] = []

    /// Reads the file open as `fd` (the caller closes it).
    init(fd: Int32) { self.fd = fd }

    // MARK: - Structure

    /// Consumes `{`.
    mutating func beginObject() throws {
        try separator()
        try expect(UInt8(ascii: "{"))
        try push()
    }

    /// The next member's key (its `:` consumed), or nil at `}` (consumed).
    mutating func nextKey() throws -> String? {
        try skipSpace()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            started.removeLast()
            return nil
        }
        if started.last == true { try expect(UInt8(ascii: ",")) } else { started[started.count - 1] = true }
        try skipSpace()
        let key = try parseString(keep: true)
        try skipSpace()
        try expect(UInt8(ascii: ":"))
        return key
    }

    /// Consumes `[`.
    mutating func beginArray() throws {
        try separator()
        try expect(UInt8(ascii: "["))
        try push()
    }

    /// True when another element follows (its comma consumed); false at `]` (consumed).
    mutating func nextElement() throws -> Bool {
        try skipSpace()
        if try peek() == UInt8(ascii: "]") {
            index += 1
            started.removeLast()
            return false
        }
        if started.last == true { try expect(UInt8(ascii: ",")) } else { started[started.count - 1] = true }
        return true
    }

    // MARK: - Values

    /// Reads the next value whole, refusing one that needs more than `budget` bytes.
    mutating func readValue(budget: Int) throws -> JSONValue {
        var left = budget
        try separator()
        return try value(budget: &left, depth: started.count)
    }

    /// True when the next value is an object (only space consumed).
    mutating func peekIsObject() throws -> Bool {
        try skipSpace()
        return try peek() == UInt8(ascii: "{")
    }

    /// Skips the next value, keeping nothing.
    mutating func skipValue() throws {
        try separator()
        try skip(depth: started.count)
    }

    // MARK: - Internals

    /// Values are read right after `nextKey`/`nextElement`, which already consumed the separator.
    private mutating func separator() throws {
        try skipSpace()
    }

    private mutating func push() throws {
        guard started.count < Self.maxDepth else {
            throw Failure(message: "nested more than \(Self.maxDepth) levels deep")
        }
        started.append(false)
    }

    private mutating func value(budget: inout Int, depth: Int) throws -> JSONValue {
        guard depth < Self.maxDepth else { throw Failure(message: "nested more than \(Self.maxDepth) levels deep") }
        try skipSpace()
        budget -= 16
        guard budget >= 0 else { throw Failure(message: "a value is larger than expected") }
        switch try peek() {
        case UInt8(ascii: "{"):
            index += 1
            var members: [(String, JSONValue)] = []
            try skipSpace()
            if try peek() == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                try skipSpace()
                let key = try parseString(keep: true)
                budget -= key.utf8.count
                try skipSpace()
                try expect(UInt8(ascii: ":"))
                members.append((key, try value(budget: &budget, depth: depth + 1)))
                try skipSpace()
                let c = try next()
                if c == UInt8(ascii: "}") { return .object(members) }
                guard c == UInt8(ascii: ",") else { throw Failure(message: "expected , or } in an object") }
            }
        case UInt8(ascii: "["):
            index += 1
            var elements: [JSONValue] = []
            try skipSpace()
            if try peek() == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                elements.append(try value(budget: &budget, depth: depth + 1))
                try skipSpace()
                let c = try next()
                if c == UInt8(ascii: "]") { return .array(elements) }
                guard c == UInt8(ascii: ",") else { throw Failure(message: "expected , or ] in an array") }
            }
        case UInt8(ascii: "\""):
            let s = try parseString(keep: true)
            budget -= s.utf8.count
            guard budget >= 0 else { throw Failure(message: "a value is larger than expected") }
            return .string(s)
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default: return .number(try parseNumber())
        }
    }

    private mutating func skip(depth: Int) throws {
        guard depth < Self.maxDepth else { throw Failure(message: "nested more than \(Self.maxDepth) levels deep") }
        try skipSpace()
        switch try peek() {
        case UInt8(ascii: "{"):
            index += 1
            try skipSpace()
            if try peek() == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                try skipSpace()
                _ = try parseString(keep: false)
                try skipSpace()
                try expect(UInt8(ascii: ":"))
                try skip(depth: depth + 1)
                try skipSpace()
                let c = try next()
                if c == UInt8(ascii: "}") { return }
                guard c == UInt8(ascii: ",") else { throw Failure(message: "expected , or } in an object") }
            }
        case UInt8(ascii: "["):
            index += 1
            try skipSpace()
            if try peek() == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                try skip(depth: depth + 1)
                try skipSpace()
                let c = try next()
                if c == UInt8(ascii: "]") { return }
                guard c == UInt8(ascii: ",") else { throw Failure(message: "expected , or ] in an array") }
            }
        case UInt8(ascii: "\""): _ = try parseString(keep: false)
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try parseNumber()
        }
    }

    private mutating func literal(_ word: String) throws {
        for byte in word.utf8 {
            guard try next() == byte else { throw Failure(message: "not JSON") }
        }
    }

    private mutating func parseNumber() throws -> String {
        var text: [UInt8] = []
        while let c = try peekOrEnd(),
            (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-")
                || c == UInt8(ascii: "+") || c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E")
        {
            index += 1
            text.append(c)
            guard text.count <= 64 else { throw Failure(message: "a number is too long") }
        }
        guard !text.isEmpty else { throw Failure(message: "not JSON") }
        return String(decoding: text, as: UTF8.self)
    }

    /// Reads a string (the opening quote next); keeps it only when asked, within `maxString`.
    private mutating func parseString(keep: Bool) throws -> String {
        try expect(UInt8(ascii: "\""))
        var bytes: [UInt8] = []
        while true {
            let c = try next()
            switch c {
            case UInt8(ascii: "\""):
                return keep ? String(decoding: bytes, as: UTF8.self) : ""
            case UInt8(ascii: "\\"):
                let e = try next()
                var scalar: UInt32?
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): if keep { bytes.append(e) }
                case UInt8(ascii: "b"): if keep { bytes.append(0x08) }
                case UInt8(ascii: "f"): if keep { bytes.append(0x0C) }
                case UInt8(ascii: "n"): if keep { bytes.append(0x0A) }
                case UInt8(ascii: "r"): if keep { bytes.append(0x0D) }
                case UInt8(ascii: "t"): if keep { bytes.append(0x09) }
                case UInt8(ascii: "u"):
                    var unit = try hex4()
                    if (0xD800...0xDBFF).contains(unit) {
                        guard try next() == UInt8(ascii: "\\"), try next() == UInt8(ascii: "u") else {
                            throw Failure(message: "a lone surrogate in a string")
                        }
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw Failure(message: "a lone surrogate in a string")
                        }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    scalar = unit
                default:
                    throw Failure(message: "a bad escape in a string")
                }
                if keep, let scalar {
                    guard let s = Unicode.Scalar(scalar) else { throw Failure(message: "a bad escape in a string") }
                    bytes += Array(String(s).utf8)
                }
            default:
                guard c >= 0x20 else { throw Failure(message: "a control character in a string") }
                if keep { bytes.append(c) }
            }
            if keep, bytes.count > Self.maxString {
                throw Failure(message: "a string is longer than \(Self.maxString) bytes")
            }
        }
    }

    private mutating func hex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = try next()
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: throw Failure(message: "a bad \\u escape in a string")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func skipSpace() throws {
        while let c = try peekOrEnd(), c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard try next() == byte else { throw Failure(message: "expected '\(Character(Unicode.Scalar(byte)))'") }
    }

    private mutating func next() throws -> UInt8 {
        let c = try peek()
        index += 1
        return c
    }

    private mutating func peek() throws -> UInt8 {
        guard let c = try peekOrEnd() else { throw Failure(message: "it ends too early") }
        return c
    }

    private mutating func peekOrEnd() throws -> UInt8? {
        if index < filled { return buffer[index] }
        guard !atEnd else { return nil }
        var n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        while n < 0, errno == EINTR { n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) } }
        if n < 0 { throw Failure(message: "it could not be read (\(errnoDescription()))") }
        if n == 0 {
            atEnd = true
            return nil
        }
        filled = n
        index = 0
        return buffer[0]
    }
}
