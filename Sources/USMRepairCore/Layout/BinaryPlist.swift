import Foundation

/// Apple's binary plist (`bplist00`): a trailer at the end gives the offset table, each object
/// starts with a marker byte. Every object reachable from the top is checked (as the app's parser
/// would refuse the whole plist for one it cannot read); only the top dictionary's keys and the
/// values asked for are read.
struct BinaryPlist {
    /// How an object is laid out.
    enum Layout {
        /// Bytes without references: copied as they are.
        case bytes(at: Int64, count: UInt64)
        /// A container: its header, then `refs` references of `refSize` bytes at `at`.
        case container(header: [UInt8], at: Int64, refs: UInt64)
    }

    /// Containers nested deeper than this are refused (the app's parser recurses).
    static let maxDepth = 512

    var reader: PlistBlockReader
    let offsetSize: Int
    let refSize: Int
    let objects: UInt64
    let top: UInt64
    let tableOffset: Int64

    init(reader: PlistBlockReader) throws {
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

    mutating func offset(of object: UInt64) throws -> Int64 {
        guard object < objects else {
            throw PreferencesReader.Malformed(reason: "it refers to an object that does not exist")
        }
        let value = try reader.integer(at: tableOffset + Int64(object) * Int64(offsetSize), width: offsetSize)
        guard value >= 8, value < UInt64(tableOffset) else {
            throw PreferencesReader.Malformed(reason: "an object lies outside it")
        }
        return Int64(value)
    }

    /// The marker's type nibble, the object's count (length) and where its payload starts.
    mutating func header(_ object: UInt64) throws -> (type: UInt8, low: UInt8, count: UInt64, payload: Int64) {
        let at = try offset(of: object)
        let marker = try reader.bytes(at: at, count: 1)[0]
        let type = marker >> 4
        let low = marker & 0x0F
        guard low == 0x0F, [0x4, 0x5, 0x6, 0x8, 0xA, 0xC, 0xD].contains(type) else {
            return (type, low, UInt64(low), at + 1)
        }
        // A count of 15 or more follows as an integer object.
        let intMarker = try reader.bytes(at: at + 1, count: 1)[0]
        guard intMarker >> 4 == 0x1, intMarker & 0x0F <= 3 else {
            throw PreferencesReader.Malformed(reason: "a length is not an integer")
        }
        let width = 1 << Int(intMarker & 0x0F)
        let count = try reader.integer(at: at + 2, width: width)
        return (type, low, count, at + 2 + Int64(width))
    }

    mutating func scan(cloudKey: String, accountMapKey: String?, isCacheKey: (String) -> Bool) throws
        -> PreferencesReader.Scan
    {
        // All of it, as the app reads it: one object it cannot read and it reads no preferences at all.
        _ = try reachable(from: [top])
        let dict = try header(top)
        guard dict.type == 0xD else { throw PreferencesReader.Malformed(reason: "its top object is not a dictionary") }
        guard dict.count <= objects else {
            throw PreferencesReader.Malformed(reason: "its top dictionary is larger than the plist")
        }
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
    private mutating func collectIDs(_ object: UInt64, depth: Int, into ids: inout [String], visited: inout Int) throws
    {
        visited += 1
        guard depth < PreferencesReader.maxDepth, visited <= PreferencesReader.maxVisited else { return }
        let h = try header(object)
        switch h.type {
        case 0x5, 0x6:
            if let text = try string(object, max: 64), PreferencesReader.isContainerID(text), !ids.contains(text) {
                ids.append(text)
            }
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
    mutating func string(_ object: UInt64, max: Int) throws -> String? {
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
    /// Where an object lies and which of its bytes are references, from its marker byte, checked
    /// as Apple's parser checks it: a type the format does not have, or an object that runs into
    /// the offset table, makes the plist one the app cannot read.
    mutating func layout(of object: UInt64) throws -> Layout {
        let at = try offset(of: object)
        let marker = try reader.bytes(at: at, count: 1)[0]
        let type = marker >> 4
        let low = marker & 0x0F
        func malformed() -> PreferencesReader.Malformed {
            .init(reason: String(format: "it holds an object of unknown type 0x%02X", marker))
        }
        switch type {
        case 0x0:
            guard [0x0, 0x8, 0x9, 0xF].contains(low) else { throw malformed() }
            return .bytes(at: at, count: 1)
        case 0x1:
            guard low <= 4 else { throw malformed() }
            return .bytes(at: at, count: 1 + (1 << UInt64(low)))
        case 0x2:
            guard low == 2 || low == 3 else { throw malformed() }
            return .bytes(at: at, count: 1 + (1 << UInt64(low)))
        case 0x3:
            guard low == 3 else { throw malformed() }
            return .bytes(at: at, count: 9)
        case 0x8:
            return .bytes(at: at, count: 2 + UInt64(low))
        case 0x4, 0x5, 0x6, 0x7, 0xA, 0xB, 0xC, 0xD:
            var headerLength: Int64 = 1
            var count = UInt64(low)
            if low == 0xF {
                let intMarker = try reader.bytes(at: at + 1, count: 1)[0]
                guard intMarker >> 4 == 0x1, intMarker & 0x0F <= 3 else {
                    throw PreferencesReader.Malformed(reason: "a length is not an integer")
                }
                let width = 1 << Int(intMarker & 0x0F)
                count = try reader.integer(at: at + 2, width: width)
                headerLength = 2 + Int64(width)
            }
            // Everything an object holds lies before the offset table.
            guard tableOffset - at - headerLength >= 0 else {
                throw PreferencesReader.Malformed(reason: "an object runs past its end")
            }
            let room = UInt64(tableOffset - at - headerLength)
            switch type {
            case 0x4, 0x5, 0x7:
                guard count <= room else { throw PreferencesReader.Malformed(reason: "an object runs past its end") }
                return .bytes(at: at, count: UInt64(headerLength) + count)
            case 0x6:
                guard count <= room / 2 else {
                    throw PreferencesReader.Malformed(reason: "an object runs past its end")
                }
                return .bytes(at: at, count: UInt64(headerLength) + 2 * count)
            default:
                let refs = type == 0xD ? 2 * count : count
                guard count <= room, refs <= room / UInt64(refSize) else {
                    throw PreferencesReader.Malformed(reason: "an object runs past its end")
                }
                return .container(
                    header: try reader.bytes(at: at, count: Int(headerLength)), at: at + headerLength, refs: refs)
            }
        default:
            throw malformed()
        }
    }

    /// Checks every object reachable from `roots` (its layout, its references, no cycle, nesting at
    /// most `maxDepth`) and returns which objects those are, one bit each: memory is a bit per
    /// object and a frame per level, whatever the plist's size.
    /// - Throws: `Malformed` for a plist the app's parser would refuse.
    mutating func reachable(from roots: [UInt64]) throws -> ObjectSet {
        var seen = ObjectSet(count: objects)
        var onPath = ObjectSet(count: objects)
        var stack: [(object: UInt64, at: Int64, refs: UInt64, next: UInt64)] = []
        func enter(_ object: UInt64) throws {
            guard object < objects else {
                throw PreferencesReader.Malformed(reason: "it refers to an object that does not exist")
            }
            if onPath.contains(object) { throw PreferencesReader.Malformed(reason: "an object contains itself") }
            guard !seen.contains(object) else { return }
            seen.insert(object)
            if case let .container(_, at, refs) = try layout(of: object), refs > 0 {
                guard stack.count < Self.maxDepth else {
                    throw PreferencesReader.Malformed(reason: "it nests containers deeper than \(Self.maxDepth) levels")
                }
                onPath.insert(object)
                stack.append((object, at, refs, 0))
            }
        }
        for root in roots {
            try enter(root)
            while let frame = stack.last {
                guard frame.next < frame.refs else {
                    onPath.remove(frame.object)
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].next += 1
                try enter(try reader.integer(at: frame.at + Int64(frame.next) * Int64(refSize), width: refSize))
            }
        }
        return seen
    }
}

/// A set of object numbers, one bit each.
struct ObjectSet {
    private var words: [UInt64]

    init(count: UInt64) { words = [UInt64](repeating: 0, count: Int((count + 63) / 64)) }

    func contains(_ object: UInt64) -> Bool { words[Int(object / 64)] & (1 << (object % 64)) != 0 }
    mutating func insert(_ object: UInt64) { words[Int(object / 64)] |= 1 << (object % 64) }
    mutating func remove(_ object: UInt64) { words[Int(object / 64)] &= ~(1 << (object % 64)) }
}
