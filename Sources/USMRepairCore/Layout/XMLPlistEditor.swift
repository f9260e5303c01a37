import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Rewrites an XML plist with its top dictionary edited, copying its bytes as they are: the
/// document is cut into markup and text as it is read (64 KiB at a time) and every byte goes to the
/// output unchanged, except the top-level entries the edit removes (their key, value and the white
/// space before them) and the values it replaces (`<true/>`, `<false/>`). Nothing is decoded and
/// written again, so what the app's own parser reads (line endings, entities, CDATA, comments,
/// formatting) is what it read before, and memory stays flat whatever the plist's size. Only a key
/// and, for an entry whose fate depends on its value (`removeIfValue`), that value are held (at
/// most 64 KiB each) before being written.
///
/// The document must first pass `PreferencesReader` (a well-formed plist whose top object is a
/// dictionary, in UTF-8, without entity declarations): this cutter relies on that and only tracks
/// nesting depth.
struct XMLPlistEditor {
    private var input: XMLByteStream
    private var output: PlistOutput
    private let decide: PlistEntryDecision
    private let add: (key: String, value: Bool)?

    /// Element nesting of the position: 1 inside `<plist>`, 2 inside the top `<dict>`, 3 inside a key or value.
    private var depth = 0
    private var sawAdded = false

    /// Markup and text between top-level entries, held so that it goes with an entry the edit removes.
    private var pending: [UInt8] = []
    /// Inside a top-level `<key>`: its bytes (with the white space before it) and its raw text.
    private var inKey = false
    private var heldKey: [UInt8] = []
    private var keyText: [UInt8]? = []
    /// The fate of the entry whose key was read last, until its value starts.
    private var awaiting: PlistEntryFate?

    /// What happens to the bytes of the current top-level value.
    private enum Mode {
        case emit, skip
        case buffer([String])
    }
    private var mode = Mode.emit
    private var buffered: [UInt8] = []
    private var bufferedElement = ""
    private var valueText: [UInt8]? = []

    static let maxHeld = 1 << 16
    static let maxTag = 1 << 20

    /// Reads the XML plist at `source` (open as `fd`) and writes the edited one to `out`.
    static func rewrite(
        source fd: Int32, sourcePath: String, to out: Int32, path: String, decide: PlistEntryDecision,
        add: (key: String, value: Bool)?
    ) throws {
        try withoutActuallyEscaping(decide) { decide in
            var editor = XMLPlistEditor(
                input: XMLByteStream(fd: fd, path: sourcePath), output: PlistOutput(fd: out, path: path),
                decide: decide, add: add)
            try editor.run()
        }
    }

    private init(
        input: XMLByteStream, output: PlistOutput, decide: @escaping PlistEntryDecision,
        add: (key: String, value: Bool)?
    ) {
        self.input = input
        self.output = output
        self.decide = decide
        self.add = add
    }

    private mutating func run() throws {
        if let problem = XMLPlistText.encodingProblem(try input.prefix(1024)) {
            throw PreferencesReader.Malformed(reason: problem)
        }
        while let byte = try input.peek() {
            if byte == UInt8(ascii: "<") { try markup() } else { try textRun() }
        }
        guard depth == 0, !inKey else { throw PreferencesReader.Malformed(reason: "it is cut short") }
        try output.flush()
    }

    // MARK: - Cutting

    private mutating func textRun() throws {
        while let run = try input.takeRun(until: UInt8(ascii: "<")) { try text(run, literal: false) }
    }

    private mutating func markup() throws {
        if try input.hasPrefix("<!--") {
            try other(try input.take(through: "-->", limit: Int.max))
        } else if try input.hasPrefix("<![CDATA[") {
            let bytes = try input.take(through: "]]>", limit: Int.max)
            try text(bytes, literal: true)
        } else if try input.hasPrefix("<?") {
            try other(try input.take(through: "?>", limit: Self.maxTag))
        } else if try input.hasPrefix("<!") {
            guard depth == 0 else {
                throw PreferencesReader.Malformed(reason: "it has a declaration inside its elements")
            }
            try other(try input.takeDeclaration(limit: Self.maxTag))
        } else if try input.hasPrefix("</") {
            try endElement(try input.takeTag(limit: Self.maxTag))
        } else {
            let tag = try input.takeTag(limit: Self.maxTag)
            let name = tag.dropFirst().prefix {
                !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0x2F || $0 == 0x3E)
            }
            try startElement(
                String(decoding: name, as: UTF8.self), tag,
                empty: tag.count >= 2 && tag[tag.count - 2] == UInt8(ascii: "/"))
        }
    }

    // MARK: - Structure

    private mutating func startElement(_ name: String, _ tag: [UInt8], empty: Bool) throws {
        let level = depth + 1
        if inKey { throw PreferencesReader.Malformed(reason: "a key holds an element") }
        switch level {
        case 1:
            guard name == "plist" else {
                throw PreferencesReader.Malformed(reason: "its root element is <\(name)>, not <plist>")
            }
            try write(tag)
        case 2:
            guard name == "dict" else {
                throw PreferencesReader.Malformed(reason: "its top object is not a dictionary")
            }
            if empty {
                // `<dict/>`: written open, so that the entry to add has a place.
                try write(Array(tag.dropLast(2)) + [UInt8(ascii: ">")])
                try endTopDictionary(Array("</dict>".utf8))
                return
            }
            try write(tag)
        case 3 where name == "key":
            try endEntry()
            inKey = true
            heldKey = pending + tag
            pending = []
            keyText = []
            if empty { try endKey(nil) }
        case 3:
            try startValue(name, tag)
            if empty { try endValue() }
        default:
            try route(tag)
        }
        if !empty { depth = level }
    }

    private mutating func endElement(_ tag: [UInt8]) throws {
        defer { depth -= 1 }
        guard depth > 0 else { throw PreferencesReader.Malformed(reason: "it closes more elements than it opens") }
        switch depth {
        case 3 where inKey:
            try endKey(tag)
        case 3:
            try route(tag)
            try endValue()
        case 2:
            try endTopDictionary(tag)
        default:
            try route(tag)
        }
    }

    private mutating func endTopDictionary(_ tag: [UInt8]) throws {
        try endEntry()
        if let add, !sawAdded {
            try write(Array("\n\t<key>\(add.key)</key>\n\t<\(add.value)/>".utf8))
            sawAdded = true
        }
        try flushPending()
        try write(tag)
    }

    /// Text (`literal`: the content of a CDATA section).
    private mutating func text(_ bytes: [UInt8], literal: Bool) throws {
        if inKey {
            heldKey += bytes
            if var current = keyText {
                current += literal ? XMLPlistText.escaped(cdata: bytes) : bytes
                keyText = current.count > 8 * PreferencesReader.maxKey ? nil : current
            }
            if heldKey.count > Self.maxHeld {
                // Too long to be a key the edit names: kept, written as it comes from here on.
                keyText = nil
                try flushPending()
                try write(heldKey)
                heldKey = []
            }
            return
        }
        if depth == 2 { return try between(bytes) }
        if depth == 3, case .buffer = mode, var current = valueText {
            current += literal ? XMLPlistText.escaped(cdata: bytes) : bytes
            valueText = current.count > 8 * PreferencesReader.maxString ? nil : current
        }
        try route(bytes)
    }

    /// A comment or processing instruction.
    private mutating func other(_ bytes: [UInt8]) throws {
        if inKey {
            heldKey += bytes
            return
        }
        if depth == 2 { return try between(bytes) }
        try route(bytes)
    }

    // MARK: - Entries

    /// What lies between the top dictionary's entries goes with the entry it precedes or follows.
    private mutating func between(_ bytes: [UInt8]) throws {
        switch awaiting {
        case .remove?:
            return
        case .removeIfValue?:
            heldKey += bytes
            if heldKey.count > Self.maxHeld { try releaseHeldKey() }
        default:
            pending += bytes
            if pending.count > Self.maxHeld { try flushPending() }
        }
    }

    private mutating func endKey(_ tag: [UInt8]?) throws {
        inKey = false
        if let tag { heldKey += tag }
        guard let raw = keyText, let key = try XMLPlistText.decode(raw), key.utf8.count <= PreferencesReader.maxKey
        else {
            try flushPending()
            try write(heldKey)
            heldKey = []
            awaiting = .keep
            return
        }
        if key == add?.key { sawAdded = true }
        let fate = decide(key)
        switch fate {
        case .keep, .setBool:
            try write(heldKey)
            heldKey = []
        case .remove:
            heldKey = []
        case .removeIfValue:
            break
        }
        awaiting = fate
    }

    /// The held key is written after all (its entry is kept).
    private mutating func releaseHeldKey() throws {
        try flushPending()
        try write(heldKey)
        heldKey = []
        if case .removeIfValue? = awaiting { awaiting = .keep }
    }

    /// A key whose value never came: nothing more to decide.
    private mutating func endEntry() throws {
        if case .removeIfValue? = awaiting { try releaseHeldKey() }
        awaiting = nil
    }

    private mutating func startValue(_ name: String, _ tag: [UInt8]) throws {
        switch awaiting ?? .keep {
        case .keep:
            mode = .emit
            try write(tag)
        case .remove:
            mode = .skip
        case let .setBool(value):
            mode = .skip
            try write(Array("<\(value)/>".utf8))
        case let .removeIfValue(values):
            mode = .buffer(values)
            buffered = tag
            bufferedElement = name
            valueText = []
        }
        awaiting = nil
    }

    private mutating func endValue() throws {
        if case let .buffer(values) = mode {
            if bufferedElement == "string", let raw = valueText, let text = try XMLPlistText.decode(raw),
                values.contains(text)
            {
                heldKey = []
            } else {
                try write(heldKey)
                try write(buffered)
                heldKey = []
            }
            buffered = []
        }
        mode = .emit
    }

    // MARK: - Output

    /// Bytes of the current top-level value (or of the document outside the top dictionary).
    private mutating func route(_ bytes: [UInt8]) throws {
        guard depth >= 2 else { return try write(bytes) }
        switch mode {
        case .skip:
            return
        case .buffer:
            buffered += bytes
            if buffered.count > Self.maxHeld {
                // Too large to be a store UUID: kept, written as it comes from here on.
                try write(heldKey)
                try write(buffered)
                heldKey = []
                buffered = []
                mode = .emit
            }
        case .emit:
            try write(bytes)
        }
    }

    private mutating func flushPending() throws {
        guard !pending.isEmpty else { return }
        try write(pending)
        pending = []
    }

    private mutating func write(_ bytes: [UInt8]) throws {
        if !pending.isEmpty, depth < 2 || (depth == 2 && !inKey) {
            let held = pending
            pending = []
            try output.write(held)
        }
        try output.write(bytes)
    }
}

/// A file read byte by byte through a 64 KiB window, for `XMLPlistEditor`.
struct XMLByteStream {
    let fd: Int32
    let path: String
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    private var atEnd = false

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Makes at least `count` bytes available (fewer at the end of the file); returns how many are.
    private mutating func fill(_ count: Int) throws -> Int {
        while end - start < count, !atEnd {
            if start > 0 {
                buffer.withUnsafeMutableBufferPointer { b in
                    for i in 0..<(end - start) { b[i] = b[start + i] }
                }
                end -= start
                start = 0
            }
            if end == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + end, $0.count - end) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw USMError.unreadable(path: path, reason: errnoDescription()) }
            if n == 0 { atEnd = true } else { end += n }
        }
        return min(count, end - start)
    }

    mutating func peek() throws -> UInt8? {
        try fill(1) == 1 ? buffer[start] : nil
    }

    /// Up to `count` first bytes, not taken.
    mutating func prefix(_ count: Int) throws -> [UInt8] {
        let n = try fill(count)
        return Array(buffer[start..<(start + n)])
    }

    mutating func hasPrefix(_ text: String) throws -> Bool {
        let bytes = Array(text.utf8)
        return try fill(bytes.count) == bytes.count && buffer[start..<(start + bytes.count)].elementsEqual(bytes)
    }

    /// The next bytes up to (not including) `stop`, at most what the window holds; nil at `stop` or the end.
    mutating func takeRun(until stop: UInt8) throws -> [UInt8]? {
        guard try fill(1) == 1, buffer[start] != stop else { return nil }
        let stopAt = buffer[start..<end].firstIndex(of: stop) ?? end
        defer { start = stopAt }
        return Array(buffer[start..<stopAt])
    }

    /// The bytes through the first `terminator` (a comment, CDATA section or processing instruction).
    mutating func take(through terminator: String, limit: Int) throws -> [UInt8] {
        let t = Array(terminator.utf8)
        var out: [UInt8] = []
        while true {
            guard try fill(1) == 1 else { throw PreferencesReader.Malformed(reason: "it is cut short") }
            out.append(buffer[start])
            start += 1
            if out.count >= t.count, out[(out.count - t.count)...].elementsEqual(t) { return out }
            if out.count > limit {
                throw PreferencesReader.Malformed(reason: "it has markup longer than \(limit) bytes")
            }
        }
    }

    /// A start or end tag, through its `>` (one inside a quoted attribute value does not end it).
    mutating func takeTag(limit: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var quote: UInt8?
        while true {
            guard try fill(1) == 1 else { throw PreferencesReader.Malformed(reason: "it is cut short") }
            let byte = buffer[start]
            out.append(byte)
            start += 1
            if let q = quote {
                if byte == q { quote = nil }
            } else if byte == 0x22 || byte == 0x27 {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                return out
            }
            if out.count > limit {
                throw PreferencesReader.Malformed(reason: "it has a tag longer than \(limit) bytes")
            }
        }
    }

    /// A `<!DOCTYPE ...>` declaration, its internal subset (quoted strings, comments) included.
    mutating func takeDeclaration(limit: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var quote: UInt8?
        var brackets = 0
        while true {
            guard try fill(1) == 1 else { throw PreferencesReader.Malformed(reason: "it is cut short") }
            let byte = buffer[start]
            out.append(byte)
            start += 1
            if let q = quote {
                if byte == q { quote = nil }
            } else if out.count >= 4, out.suffix(4).elementsEqual(Array("<!--".utf8)) {
                out += try take(through: "-->", limit: limit)
            } else if byte == 0x22 || byte == 0x27 {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                brackets += 1
            } else if byte == UInt8(ascii: "]") {
                brackets -= 1
            } else if byte == UInt8(ascii: ">"), brackets <= 0 {
                return out
            }
            if out.count > limit {
                throw PreferencesReader.Malformed(reason: "it has a declaration longer than \(limit) bytes")
            }
        }
    }
}
