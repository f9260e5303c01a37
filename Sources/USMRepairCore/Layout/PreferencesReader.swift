import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Finds one top-level key of a preferences plist without decoding the plist: a binary plist is
/// read through its offset table with a few small reads (a 200 MB plist costs a few KiB), an XML
/// plist is parsed as a stream. Decoding a whole plist into objects costs many times its size in
/// memory, and only `USMCloudEnabledKey` is ever needed.
struct PreferencesReader {
    /// What the key holds.
    enum Value: Equatable {
        case bool(Bool)
        case integer(Int64)
        /// Present, of another type (a string, a date...).
        case other
    }

    /// What was found: the plist's format and the key's value (nil when the key is absent).
    struct Lookup {
        let xml: Bool
        let value: Value?
    }

    /// Why a file is not a plist dictionary.
    struct Malformed: Error {
        let reason: String
    }

    /// Looks `key` up at the top level of the plist at `path`.
    /// - Throws: `USMError.unreadable` when it cannot be read, `Malformed` when it is not a plist dictionary.
    static func lookUp(_ key: String, in path: String) throws -> Lookup {
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        var reader = BlockReader(fd: fd, path: path)
        if reader.size >= 8, try reader.bytes(at: 0, count: 8) == Array("bplist00".utf8) {
            var plist = try BinaryPlist(reader: reader)
            return Lookup(xml: false, value: try plist.topLevelValue(forKey: key))
        }
        return Lookup(xml: true, value: try XMLPlistScan.value(forKey: key, path: path))
    }
}

/// Reads a file at offsets through a small cache of 64 KiB blocks.
private struct BlockReader {
    let fd: Int32
    let path: String
    let size: Int64
    private var blocks: [Int64: [UInt8]] = [:]
    private var order: [Int64] = []
    static let blockSize: Int64 = 65536

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
        var st = stat()
        size = fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    mutating func bytes(at offset: Int64, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0, offset + Int64(count) <= size else {
            throw PreferencesReader.Malformed(reason: "it refers past its end")
        }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        var position = offset
        while out.count < count {
            let start = position - position % Self.blockSize
            let block = try self.block(start)
            let from = Int(position - start)
            let take = min(count - out.count, block.count - from)
            guard take > 0 else { throw PreferencesReader.Malformed(reason: "it is cut short") }
            out += block[from..<(from + take)]
            position += Int64(take)
        }
        return out
    }

    private mutating func block(_ start: Int64) throws -> [UInt8] {
        if let cached = blocks[start] { return cached }
        var data = [UInt8](repeating: 0, count: Int(min(Self.blockSize, size - start)))
        var done = 0
        while done < data.count {
            let n = data.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(start) + off_t(done)) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw USMError.unreadable(path: path, reason: errnoDescription()) }
            if n == 0 { break }
            done += n
        }
        data.removeSubrange(done...)
        if order.count >= 16 { blocks[order.removeFirst()] = nil }
        blocks[start] = data
        order.append(start)
        return data
    }

    /// A big-endian unsigned integer of `width` bytes.
    mutating func integer(at offset: Int64, width: Int) throws -> UInt64 {
        try bytes(at: offset, count: width).reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// Apple's binary plist (`bplist00`): a trailer at the end gives the offset table, each object
/// starts with a marker byte. Only the top dictionary's keys and one value are read.
private struct BinaryPlist {
    var reader: BlockReader
    let offsetSize: Int
    let refSize: Int
    let objects: UInt64
    let top: UInt64
    let tableOffset: Int64

    init(reader: BlockReader) throws {
        self.reader = reader
        guard reader.size >= 40 else { throw PreferencesReader.Malformed(reason: "it is too short for a binary plist") }
        let trailer = try self.reader.bytes(at: reader.size - 32, count: 32)
        offsetSize = Int(trailer[6])
        refSize = Int(trailer[7])
        func be(_ range: Range<Int>) -> UInt64 { trailer[range].reduce(0) { $0 << 8 | UInt64($1) } }
        objects = be(8..<16)
        top = be(16..<24)
        let table = be(24..<32)
        guard (1...8).contains(offsetSize), (1...8).contains(refSize), objects > 0, top < objects,
              table >= 8, table < UInt64(reader.size),
              objects <= (UInt64(reader.size) - table) / UInt64(offsetSize)
        else { throw PreferencesReader.Malformed(reason: "its binary plist trailer is inconsistent") }
        tableOffset = Int64(table)
    }

    private mutating func offset(of object: UInt64) throws -> Int64 {
        guard object < objects else { throw PreferencesReader.Malformed(reason: "it refers to an object that does not exist") }
        let value = try reader.integer(at: tableOffset + Int64(object) * Int64(offsetSize), width: offsetSize)
        guard value >= 8, value < UInt64(tableOffset) else { throw PreferencesReader.Malformed(reason: "an object lies outside it") }
        return Int64(value)
    }

    /// The marker's type nibble, the object's count (length) and where its payload starts.
    private mutating func header(_ object: UInt64) throws -> (type: UInt8, low: UInt8, count: UInt64, payload: Int64) {
        let at = try offset(of: object)
        let marker = try reader.bytes(at: at, count: 1)[0]
        let type = marker >> 4, low = marker & 0x0F
        guard low == 0x0F, [0x4, 0x5, 0x6, 0x8, 0xA, 0xC, 0xD].contains(type) else { return (type, low, UInt64(low), at + 1) }
        // A count of 15 or more follows as an integer object.
        let intMarker = try reader.bytes(at: at + 1, count: 1)[0]
        guard intMarker >> 4 == 0x1, intMarker & 0x0F <= 3 else { throw PreferencesReader.Malformed(reason: "a length is not an integer") }
        let width = 1 << Int(intMarker & 0x0F)
        let count = try reader.integer(at: at + 2, width: width)
        return (type, low, count, at + 2 + Int64(width))
    }

    mutating func topLevelValue(forKey key: String) throws -> PreferencesReader.Value? {
        let dict = try header(top)
        guard dict.type == 0xD else { throw PreferencesReader.Malformed(reason: "its top object is not a dictionary") }
        guard dict.count <= objects else { throw PreferencesReader.Malformed(reason: "its top dictionary is larger than the plist") }
        let wanted = Array(key.utf8)
        for i in 0..<dict.count {
            let keyRef = try reader.integer(at: dict.payload + Int64(i) * Int64(refSize), width: refSize)
            guard try string(keyRef, equals: wanted) else { continue }
            let valueRef = try reader.integer(at: dict.payload + Int64(dict.count + i) * Int64(refSize), width: refSize)
            return try value(valueRef)
        }
        return nil
    }

    /// True when the object is a string (ASCII or UTF-16) spelling exactly `wanted` (ASCII).
    private mutating func string(_ object: UInt64, equals wanted: [UInt8]) throws -> Bool {
        let h = try header(object)
        switch h.type {
        case 0x5:
            guard h.count == UInt64(wanted.count) else { return false }
            return try reader.bytes(at: h.payload, count: wanted.count) == wanted
        case 0x6:
            guard h.count == UInt64(wanted.count) else { return false }
            let units = try reader.bytes(at: h.payload, count: wanted.count * 2)
            return (0..<wanted.count).allSatisfy { units[2 * $0] == 0 && units[2 * $0 + 1] == wanted[$0] }
        default:
            return false
        }
    }

    private mutating func value(_ object: UInt64) throws -> PreferencesReader.Value {
        let h = try header(object)
        switch (h.type, h.low) {
        case (0x0, 0x8): return .bool(false)
        case (0x0, 0x9): return .bool(true)
        case (0x1, 0...3):
            let width = 1 << Int(h.low)
            let raw = try reader.integer(at: h.payload, width: width)
            // One-, two- and four-byte integers are unsigned; eight-byte ones are signed.
            return .integer(width == 8 ? Int64(bitPattern: raw) : Int64(raw))
        default: return .other
        }
    }
}

/// Streams an XML plist looking for one key of the top-level dictionary.
private final class XMLPlistScan: NSObject, XMLParserDelegate {
    let key: String
    /// Element nesting: 1 is `<plist>`, 2 the top `<dict>`.
    private var depth = 0
    private var sawTopDict = false
    private var inKey = false
    private var keyText = ""
    private var pendingKeyMatched = false
    private var valueElement: String?
    private var valueText = ""
    private(set) var found: PreferencesReader.Value?
    private(set) var structureError: String?
    /// The root element was closed: the document is whole.
    private(set) var closed = false

    init(key: String) { self.key = key }

    static func value(forKey key: String, path: String) throws -> PreferencesReader.Value? {
        guard let stream = InputStream(fileAtPath: path) else { throw USMError.unreadable(path: path, reason: "cannot open it") }
        let parser = XMLParser(stream: stream)
        parser.shouldResolveExternalEntities = false
        let scan = XMLPlistScan(key: key)
        parser.delegate = scan
        // Parsed to the end even once the key is found: a plist cut short is malformed (the app
        // could not read it either), whatever it held before the cut.
        let parsed = parser.parse()
        if let error = scan.structureError { throw PreferencesReader.Malformed(reason: error) }
        guard parsed, scan.closed else { throw PreferencesReader.Malformed(reason: "it is neither a binary nor a well-formed XML plist") }
        guard scan.sawTopDict else { throw PreferencesReader.Malformed(reason: "its top object is not a dictionary") }
        return scan.found
    }

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        depth += 1
        switch depth {
        case 1 where element != "plist":
            fail(parser, "its root element is <\(element)>, not <plist>")
        case 2:
            guard element == "dict" else { return fail(parser, "its top object is not a dictionary") }
            sawTopDict = true
        case 3:
            if element == "key" {
                inKey = true
                keyText = ""
            } else if pendingKeyMatched {
                valueElement = element
                valueText = ""
            }
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inKey, keyText.utf8.count <= key.utf8.count { keyText += string }
        if valueElement != nil, depth == 3, valueText.utf8.count < 64 { valueText += string }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        if depth == 3 {
            if inKey {
                inKey = false
                pendingKeyMatched = keyText == key
            } else if pendingKeyMatched, let value = valueElement {
                found = switch value {
                case "true": .bool(true)
                case "false": .bool(false)
                case "integer": Int64(valueText.trimmingCharacters(in: .whitespacesAndNewlines)).map { .integer($0) } ?? .other
                default: .other
                }
                pendingKeyMatched = false
                valueElement = nil
            }
        }
        depth -= 1
        if depth == 0 { closed = true }
    }

    private func fail(_ parser: XMLParser, _ reason: String) {
        structureError = reason
        parser.abortParsing()
    }
}
