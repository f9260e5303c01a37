/// Finds an XML processing instruction without data (`<?name?>`), byte by byte, in a stream.
///
/// libxml2 hands such an instruction to its callback with a NULL data pointer, and Foundation's
/// `XMLParser` on Linux takes the length of that pointer: the process dies (SIGSEGV) whatever the
/// delegate does. An instruction with data (`<?xml version="1.0"?>`, `<?name data?>`) passes a
/// string and is harmless. So every document usm-repair hands to `XMLParser` (preferences, an Xcode
/// model's `contents`) is scanned first, and one holding such an instruction, anywhere (a comment
/// or CDATA section too, to stay simple and safe), is refused as malformed. Property lists and
/// models written by Apple's tools hold none. Found by the `PreferencesRead` fuzz target.
struct EmptyInstructionScan {
    private enum State {
        case text
        /// After `<`.
        case open
        /// After `<?` and `length` bytes of a target name.
        case target(length: Int)
        /// After `<?name?`.
        case question
    }

    private var state = State.text
    private var start = 0

    /// The offset of the `<?` of an instruction without data that ends with the byte at `offset`,
    /// or nil.
    mutating func feed(_ byte: UInt8, at offset: Int) -> Int? {
        switch (state, byte) {
        case (_, UInt8(ascii: "<")):
            state = .open
            start = offset
        case (.open, UInt8(ascii: "?")):
            state = .target(length: 0)
        case (.target(let length), UInt8(ascii: "?")) where length > 0:
            state = .question
        case (.target(let length), _) where Self.isNameByte(byte):
            state = .target(length: length + 1)
        case (.question, UInt8(ascii: ">")):
            state = .text
            return start
        default:
            state = .text
        }
        return nil
    }

    /// The offset of the first instruction without data in `bytes`, or nil.
    static func first(in bytes: some Sequence<UInt8>) -> Int? {
        var scan = EmptyInstructionScan()
        for (offset, byte) in bytes.enumerated() {
            if let found = scan.feed(byte, at: offset) { return found }
        }
        return nil
    }

    /// The sentence saying why a document holding one at `offset` is refused.
    static func problem(at offset: Int) -> String {
        "it holds a processing instruction without data (<?name?>, at byte \(offset)), which usm-repair's XML reader cannot read safely"
    }

    /// Bytes of an XML name (letters, digits, `_ : . -`, and any non-ASCII byte of a UTF-8 letter).
    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "."),
            UInt8(ascii: "-"), 0x80...0xFF:
            return true
        default:
            return false
        }
    }
}
