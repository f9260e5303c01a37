import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads what usm-repair needs from a preferences plist without decoding the plist: a binary
/// plist is walked through its offset table with small reads (a 200 MB plist costs a few hundred
/// KiB), an XML plist is parsed as a stream. Decoding a whole plist into objects costs many times
/// its size in memory, and only a few top-level keys ever matter: `USMCloudEnabledKey`, the cached
/// StoreUUID keys, and the dictionaries holding Core Data's account map. Every value kept is bounded.
struct PreferencesReader {
    /// A scalar value as the plist holds it.
    enum Value: Equatable {
        case bool(Bool)
        case integer(Int64)
        /// Present, of another type (a string, a date...).
        case other
    }

    /// What a scan found.
    struct Scan {
        /// True for an XML plist.
        let xml: Bool
        /// The cloud key's value, nil when absent.
        var cloudEnabled: Value?
        /// Every top-level key the caller's predicate chose, with its value when it is a string.
        var caches: [(key: String, value: String?)] = []
        /// Every top-level key whose value is a dictionary holding the account-map key, with the
        /// UUID (or `local`) strings found in that entry.
        var accountMaps: [(key: String, ids: [String])] = []
    }

    /// Why a file is not a plist dictionary.
    struct Malformed: Error {
        let reason: String
    }

    /// Keys longer than this are not among those looked for.
    static let maxKey = 4096
    /// Strings kept (cache values, container IDs) longer than this are not what is looked for.
    static let maxString = 4096
    /// Objects visited below one account map, and its nesting, at most.
    static let maxVisited = 100_000
    static let maxDepth = 6

    /// Scans the top level of the plist at `path`.
    /// - Parameters:
    ///   - cloudKey: the key whose scalar value is wanted.
    ///   - accountMapKey: the key that makes a dictionary value an account map (nil: not looked for).
    ///   - isCacheKey: chooses the keys whose string values are wanted.
    /// - Throws: `USMError.unreadable` when it cannot be read, `Malformed` when it is not a plist dictionary.
    static func scan(_ path: String, cloudKey: String, accountMapKey: String?, isCacheKey: (String) -> Bool) throws -> Scan {
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        var reader = BlockReader(fd: fd, path: path)
        if reader.size >= 8, try reader.bytes(at: 0, count: 8) == Array("bplist00".utf8) {
            var plist = try BinaryPlist(reader: reader)
            return try plist.scan(cloudKey: cloudKey, accountMapKey: accountMapKey, isCacheKey: isCacheKey)
        }
        return try XMLPlistScan.scan(path: path, cloudKey: cloudKey, accountMapKey: accountMapKey, isCacheKey: isCacheKey)
    }

    /// True for the container-ID strings an account map lists.
    static func isContainerID(_ text: String) -> Bool {
        UUID(uuidString: text) != nil || text == "local"
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
        if order.count >= 64 { blocks[order.removeFirst()] = nil }
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

    mutating func scan(cloudKey: String, accountMapKey: String?, isCacheKey: (String) -> Bool) throws -> PreferencesReader.Scan {
        let dict = try header(top)
        guard dict.type == 0xD else { throw PreferencesReader.Malformed(reason: "its top object is not a dictionary") }
        guard dict.count <= objects else { throw PreferencesReader.Malformed(reason: "its top dictionary is larger than the plist") }
        var result = PreferencesReader.Scan(xml: false)
        let accountKey = accountMapKey.map { Array($0.utf8) }
        for i in 0..<dict.count {
            let keyRef = try reader.integer(at: dict.payload + Int64(i) * Int64(refSize), width: refSize)
            guard let key = try string(keyRef, max: PreferencesReader.maxKey) else { continue }
            let valueRef = try reader.integer(at: dict.payload + Int64(dict.count + i) * Int64(refSize), width: refSize)
            if key == cloudKey {
                result.cloudEnabled = try value(valueRef)
            } else if isCacheKey(key) {
                result.caches.append((key, try string(valueRef, max: PreferencesReader.maxString)))
            }
            if let accountKey, let list = try lookUp(accountKey, inDictionary: valueRef) {
                var ids: [String] = []
                var visited = 0
                try collectIDs(list, depth: 0, into: &ids, visited: &visited)
                result.accountMaps.append((key, ids))
            }
        }
        return result
    }

    /// The value of `key` in the dictionary object `object`; nil when it is not a dictionary or lacks the key.
    private mutating func lookUp(_ key: [UInt8], inDictionary object: UInt64) throws -> UInt64? {
        let h = try header(object)
        guard h.type == 0xD, h.count <= objects else { return nil }
        for i in 0..<h.count {
            let keyRef = try reader.integer(at: h.payload + Int64(i) * Int64(refSize), width: refSize)
            if try string(keyRef, equals: key) {
                return try reader.integer(at: h.payload + Int64(h.count + i) * Int64(refSize), width: refSize)
            }
        }
        return nil
    }

    /// Every container-ID string below `object` (arrays and dictionaries followed, bounded).
    private mutating func collectIDs(_ object: UInt64, depth: Int, into ids: inout [String], visited: inout Int) throws {
        visited += 1
        guard depth < PreferencesReader.maxDepth, visited <= PreferencesReader.maxVisited else { return }
        let h = try header(object)
        switch h.type {
        case 0x5, 0x6:
            if let text = try string(object, max: 64), PreferencesReader.isContainerID(text), !ids.contains(text) { ids.append(text) }
        case 0xA, 0xD:
            guard h.count <= objects else { return }
            // A dictionary's values follow its keys.
            let first: UInt64 = h.type == 0xD ? h.count : 0
            for i in first..<(first + h.count) {
                let ref = try reader.integer(at: h.payload + Int64(i) * Int64(refSize), width: refSize)
                try collectIDs(ref, depth: depth + 1, into: &ids, visited: &visited)
                if visited > PreferencesReader.maxVisited { return }
            }
        default:
            return
        }
    }

    /// The object as text when it is a string (ASCII or UTF-16) of at most `max` characters.
    private mutating func string(_ object: UInt64, max: Int) throws -> String? {
        let h = try header(object)
        switch h.type {
        case 0x5:
            guard h.count <= UInt64(max) else { return nil }
            return String(decoding: try reader.bytes(at: h.payload, count: Int(h.count)), as: UTF8.self)
        case 0x6:
            guard h.count <= UInt64(max) else { return nil }
            let bytes = try reader.bytes(at: h.payload, count: Int(h.count) * 2)
            let units = (0..<Int(h.count)).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
            return String(decoding: units, as: UTF16.self)
        default:
            return nil
        }
    }

    /// True when the object is a string spelling exactly `wanted` (ASCII).
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

/// Streams an XML plist, keeping only what `PreferencesReader.Scan` holds.
private final class XMLPlistScan: NSObject, XMLParserDelegate {
    let cloudKey: String
    let accountMapKey: String?
    let isCacheKey: (String) -> Bool
    var result = PreferencesReader.Scan(xml: true)

    /// Element nesting: 1 is `<plist>`, 2 the top `<dict>`, 3 its keys and values.
    private var depth = 0
    private var sawTopDict = false
    private(set) var structureError: String?
    /// The root element was closed: the document is whole.
    private(set) var closed = false

    /// Text of the `<key>` being read (nil once longer than any key looked for).
    private var keyText: String?
    private var readingKey = false
    /// The top-level key whose value comes next.
    private var currentKey: String?
    /// The element of the current top-level value and its text (kept for scalars and strings).
    private var valueElement: String?
    private var valueText: String?
    /// Inside a dictionary value: the depth-4 key just read, and whether the account map's value is being read.
    private var innerKey: String?
    private var readingInnerKey = false
    private var collectingDepth: Int?
    private var ids: [String] = []
    private var collected = 0
    private var stringText: String?

    init(cloudKey: String, accountMapKey: String?, isCacheKey: @escaping (String) -> Bool) {
        self.cloudKey = cloudKey
        self.accountMapKey = accountMapKey
        self.isCacheKey = isCacheKey
    }

    static func scan(path: String, cloudKey: String, accountMapKey: String?, isCacheKey: (String) -> Bool) throws -> PreferencesReader.Scan {
        guard let stream = InputStream(fileAtPath: path) else { throw USMError.unreadable(path: path, reason: "cannot open it") }
        return try withoutActuallyEscaping(isCacheKey) { predicate in
            let parser = XMLParser(stream: stream)
            parser.shouldResolveExternalEntities = false
            let scan = XMLPlistScan(cloudKey: cloudKey, accountMapKey: accountMapKey, isCacheKey: predicate)
            parser.delegate = scan
            // Parsed to the end: a plist cut short is malformed (the app could not read it either).
            let parsed = parser.parse()
            parser.delegate = nil
            if let error = scan.structureError { throw PreferencesReader.Malformed(reason: error) }
            guard parsed, scan.closed else { throw PreferencesReader.Malformed(reason: "it is neither a binary nor a well-formed XML plist") }
            guard scan.sawTopDict else { throw PreferencesReader.Malformed(reason: "its top object is not a dictionary") }
            return scan.result
        }
    }

    private static func append(_ string: String, to text: inout String?, max: Int) {
        guard let current = text else { return }
        text = current.utf8.count + string.utf8.count > max ? nil : current + string
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
                readingKey = true
                keyText = ""
            } else {
                valueElement = element
                valueText = ""
                innerKey = nil
                ids = []
                collected = 0
                accountKeySeen = false
            }
        case 4 where valueElement == "dict":
            if collectingDepth == nil {
                if element == "key" {
                    readingInnerKey = true
                    innerKey = ""
                } else if let accountMapKey, innerKey == accountMapKey {
                    collectingDepth = depth
                    startCollecting(element)
                }
            }
        default:
            if collectingDepth != nil { startCollecting(element) }
        }
    }

    private func startCollecting(_ element: String) {
        collected += 1
        if element == "string", depth - (collectingDepth ?? depth) < PreferencesReader.maxDepth, collected <= PreferencesReader.maxVisited {
            stringText = ""
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if readingKey { Self.append(string, to: &keyText, max: PreferencesReader.maxKey) }
        if readingInnerKey { Self.append(string, to: &innerKey, max: PreferencesReader.maxKey) }
        if depth == 3, valueElement != nil { Self.append(string, to: &valueText, max: PreferencesReader.maxString) }
        if stringText != nil { Self.append(string, to: &stringText, max: 64) }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        if let text = stringText {
            if PreferencesReader.isContainerID(text), !ids.contains(text) { ids.append(text) }
            stringText = nil
        }
        if depth == 4, readingInnerKey {
            readingInnerKey = false
            if let accountMapKey, innerKey == accountMapKey { accountKeySeen = true }
        }
        if let start = collectingDepth, depth == start { collectingDepth = nil }
        if depth == 3 {
            if readingKey {
                readingKey = false
                currentKey = keyText
            } else if let value = valueElement {
                finish(value)
                valueElement = nil
                currentKey = nil
            }
        }
        depth -= 1
        if depth == 0 { closed = true }
    }

    /// Records the top-level value just read, for the key before it.
    private func finish(_ element: String) {
        guard let key = currentKey else { return }
        if key == cloudKey {
            let text = valueText?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            result.cloudEnabled = switch element {
            case "true": .bool(true)
            case "false": .bool(false)
            case "integer": Int64(text).map { .integer($0) } ?? .other
            default: .other
            }
        } else if isCacheKey(key) {
            result.caches.append((key, element == "string" ? valueText : nil))
        }
        if element == "dict", let accountMapKey, sawAccountKey(accountMapKey) {
            result.accountMaps.append((key, ids))
        }
    }

    private var accountKeySeen = false

    private func sawAccountKey(_ key: String) -> Bool {
        defer { accountKeySeen = false }
        return accountKeySeen
    }

    private func fail(_ parser: XMLParser, _ reason: String) {
        structureError = reason
        parser.abortParsing()
    }
}
