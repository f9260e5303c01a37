import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What an edit does to one top-level entry of a preferences plist.
enum PlistEntryFate: Equatable {
    case keep
    case remove
    /// Replace the value with this boolean.
    case setBool(Bool)
    /// Remove the entry when its value is a string equal to one of these (at most
    /// `PreferencesReader.maxString` bytes); keep it otherwise.
    case removeIfValue([String])
}

/// Decides each top-level entry's fate from its key (nil when it is not a string of at most
/// `PreferencesReader.maxKey` bytes).
typealias PlistEntryDecision = (_ key: String?) -> PlistEntryFate

/// Rewrites a binary plist (`bplist00`) with its top dictionary edited, as a stream: every object
/// is copied in index order (a 50 MB value in 64 KiB pieces), only the top dictionary is written
/// anew, and an entry that is missing is appended as two new objects. Memory stays flat whatever
/// the plist's size or number of keys. Object numbers do not change, so references are copied as
/// numbers, widened when the new object count needs wider references; an object only removed
/// entries reached becomes a one-byte null (their values do not stay in the file).
///
/// Passes, each needing the one before: 0. the trailer, the top dictionary, the walk of every
/// object the new top reaches (`BinaryPlist.reachable`: one the app could not read refuses the
/// plist); 1. every object's new size; 2. the objects; 3. the offset table, recomputed; 4. the trailer.
final class BinaryPlistEditor {
    private var plist: BinaryPlist
    /// The new top dictionary's (key, value) references, and the objects appended.
    private var entries: [(key: UInt64, value: UInt64)] = []
    private var appended: [[UInt8]] = []
    private var refSize = 1
    private var offsetSize = 1
    private var reachable = ObjectSet(count: 0)

    /// Reads the plist's trailer and top dictionary and decides every entry.
    /// - Parameter add: an entry to add when no entry has its key (the key, a boolean value).
    init(reader: PlistBlockReader, decide: PlistEntryDecision, add: (key: String, value: Bool)?) throws {
        plist = try BinaryPlist(reader: reader)
        let top = try plist.header(plist.top)
        guard top.type == 0xD, top.count <= plist.objects else {
            throw PreferencesReader.Malformed(reason: "its top object is not a dictionary")
        }
        var sawAdded = false
        for i in 0..<top.count {
            let keyRef = try reference(at: top.payload + Int64(i) * Int64(plist.refSize))
            let valueRef = try reference(at: top.payload + Int64(top.count + i) * Int64(plist.refSize))
            let key = try plist.string(keyRef, max: PreferencesReader.maxKey)
            if let key, key == add?.key { sawAdded = true }
            switch decide(key) {
            case .keep: entries.append((keyRef, valueRef))
            case .remove: break
            case let .setBool(value): entries.append((keyRef, newObject([value ? 0x09 : 0x08])))
            case let .removeIfValue(values):
                if let text = try plist.string(valueRef, max: PreferencesReader.maxString), values.contains(text) {
                    break
                }
                entries.append((keyRef, valueRef))
            }
        }
        if let add, !sawAdded {
            let ascii = Array(add.key.utf8)
            entries.append(
                (newObject(Self.header(0x5, count: ascii.count) + ascii), newObject([add.value ? 0x09 : 0x08])))
        }
        let count = plist.objects + UInt64(appended.count)
        refSize = Self.width(count - 1)
        // What the new top dictionary reaches is copied; what only removed entries reached is not.
        reachable = try plist.reachable(from: entries.flatMap { [$0.key, $0.value] }.filter { $0 < plist.objects })
        guard !reachable.contains(plist.top) else {
            throw PreferencesReader.Malformed(reason: "an object contains the top dictionary")
        }
    }

    /// Writes the edited plist to `fd` (`path` for messages).
    func write(to fd: Int32, path: String) throws {
        var output = PlistOutput(fd: fd, path: path)
        try output.write(Array("bplist00".utf8))
        // 1. Sizes: the offset table's position decides the width of its entries.
        var end: UInt64 = 8
        try forEachObject { size, _ in end += size }
        offsetSize = Self.width(end)
        // 2. The objects.
        try forEachObject { _, object in try copy(object, to: &output) }
        // 3. The offset table.
        var offset: UInt64 = 8
        try forEachObject { size, _ in
            try output.write(Self.bigEndian(offset, width: offsetSize))
            offset += size
        }
        // 4. The trailer: 6 unused bytes, the widths, the object count, the top object, the table.
        let count = plist.objects + UInt64(appended.count)
        try output.write(
            [UInt8](repeating: 0, count: 6) + [UInt8(offsetSize), UInt8(refSize)]
                + Self.bigEndian(count, width: 8) + Self.bigEndian(plist.top, width: 8) + Self.bigEndian(end, width: 8))
        try output.flush()
    }

    // MARK: - Objects

    private enum Kind {
        /// An object of the plist, copied (its references rewritten to the new width).
        case object(BinaryPlist.Layout)
        /// The new top dictionary.
        case top
        /// An object nothing refers to any more: a one-byte null keeps the numbering.
        case unused
        /// An object made here.
        case made(Int)
    }

    /// Calls `body` with every object of the new plist, in order, and its size there.
    private func forEachObject(_ body: (UInt64, Kind) throws -> Void) throws {
        for object in 0..<plist.objects {
            if object == plist.top {
                let count = UInt64(entries.count)
                try body(UInt64(Self.header(0xD, count: entries.count).count) + 2 * count * UInt64(refSize), .top)
            } else if !reachable.contains(object) {
                try body(1, .unused)
            } else {
                switch try plist.layout(of: object) {
                case let .bytes(at, count): try body(count, .object(.bytes(at: at, count: count)))
                case let .container(header, at, refs):
                    try body(
                        UInt64(header.count) + refs * UInt64(refSize),
                        .object(.container(header: header, at: at, refs: refs)))
                }
            }
        }
        for (i, bytes) in appended.enumerated() { try body(UInt64(bytes.count), .made(i)) }
    }

    private func copy(_ kind: Kind, to output: inout PlistOutput) throws {
        switch kind {
        case .object(.bytes(var at, var count)):
            while count > 0 {
                let piece = Int(min(count, UInt64(PlistBlockReader.blockSize)))
                try output.write(try plist.reader.bytes(at: at, count: piece))
                at += Int64(piece)
                count -= UInt64(piece)
            }
        case let .object(.container(header, at, refs)):
            try output.write(header)
            for i in 0..<refs {
                try output.write(
                    Self.bigEndian(try reference(at: at + Int64(i) * Int64(plist.refSize)), width: refSize))
            }
        case .top:
            try output.write(Self.header(0xD, count: entries.count))
            for entry in entries { try output.write(Self.bigEndian(entry.key, width: refSize)) }
            for entry in entries { try output.write(Self.bigEndian(entry.value, width: refSize)) }
        case .unused:
            try output.write([0x00])
        case let .made(i):
            try output.write(appended[i])
        }
    }

    /// A reference read at `offset`, which must name an object of the plist.
    private func reference(at offset: Int64) throws -> UInt64 {
        let ref = try plist.reader.integer(at: offset, width: plist.refSize)
        guard ref < plist.objects else {
            throw PreferencesReader.Malformed(reason: "it refers to an object that does not exist")
        }
        return ref
    }

    /// Appends an object made here; returns its number.
    private func newObject(_ bytes: [UInt8]) -> UInt64 {
        appended.append(bytes)
        return plist.objects + UInt64(appended.count - 1)
    }

    // MARK: - Encoding

    /// A marker with its count (a count of 15 or more follows as an integer object).
    static func header(_ type: UInt8, count: Int) -> [UInt8] {
        if count < 15 { return [type << 4 | UInt8(count)] }
        let width = width(UInt64(count))
        return [type << 4 | 0xF, 0x10 | UInt8(width.trailingZeroBitCount)] + bigEndian(UInt64(count), width: width)
    }

    /// The bytes (1, 2, 4 or 8) that hold `value`.
    static func width(_ value: UInt64) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - $0))) }
    }
}

/// Buffered writing of a file being made (64 KiB at a time).
struct PlistOutput {
    let fd: Int32
    let path: String
    private var buffer: [UInt8] = []

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
        buffer.reserveCapacity(1 << 16)
    }

    mutating func write(_ bytes: [UInt8]) throws {
        buffer += bytes
        if buffer.count >= 1 << 16 { try flush() }
    }

    mutating func write(_ text: String) throws { try write(Array(text.utf8)) }

    mutating func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { try FileSync.writeAll(fd, $0, path: path) }
        buffer.removeAll(keepingCapacity: true)
    }
}
