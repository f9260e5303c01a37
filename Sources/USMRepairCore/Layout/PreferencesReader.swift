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
    static func scan(_ path: String, cloudKey: String, accountMapKey: String?, isCacheKey: (String) -> Bool) throws
        -> Scan
    {
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        var reader = PlistBlockReader(fd: fd, path: path)
        if reader.size >= 8, try reader.bytes(at: 0, count: 8) == Array("bplist00".utf8) {
            var plist = try BinaryPlist(reader: reader)
            return try plist.scan(cloudKey: cloudKey, accountMapKey: accountMapKey, isCacheKey: isCacheKey)
        }
        return try XMLPlistScan.scan(
            path: path, cloudKey: cloudKey, accountMapKey: accountMapKey, isCacheKey: isCacheKey)
    }

    /// True for the container-ID strings an account map lists.
    static func isContainerID(_ text: String) -> Bool {
        UUID(uuidString: text) != nil || text == "local"
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

    static func scan(path: String, cloudKey: String, accountMapKey: String?, isCacheKey: (String) -> Bool) throws
        -> PreferencesReader.Scan
    {
        guard let stream = InputStream(fileAtPath: path), let head = FileHandle(forReadingAtPath: path) else {
            throw USMError.unreadable(path: path, reason: "cannot open it")
        }
        let prefix = (try? head.read(upToCount: XMLPlistText.maxProlog)) ?? Data()
        try? head.close()
        if let problem = try XMLPlistText.encodingProblem(Array(prefix.prefix(1024)))
            ?? XMLPlistText.utf8Problem(path: path) ?? XMLPlistText.prologProblem(Array(prefix))
        {
            throw PreferencesReader.Malformed(reason: problem)
        }
        return try withoutActuallyEscaping(isCacheKey) { predicate in
            let parser = XMLParser(stream: stream)
            parser.shouldResolveExternalEntities = false
            let scan = XMLPlistScan(cloudKey: cloudKey, accountMapKey: accountMapKey, isCacheKey: predicate)
            parser.delegate = scan
            // Parsed to the end: a plist cut short is malformed (the app could not read it either).
            let parsed = parser.parse()
            parser.delegate = nil
            if let error = scan.structureError { throw PreferencesReader.Malformed(reason: error) }
            guard parsed, scan.closed else {
                throw PreferencesReader.Malformed(reason: "it is neither a binary nor a well-formed XML plist")
            }
            guard scan.sawTopDict else {
                throw PreferencesReader.Malformed(reason: "its top object is not a dictionary")
            }
            return scan.result
        }
    }

    private static func append(_ string: String, to text: inout String?, max: Int) {
        guard let current = text else { return }
        text = current.utf8.count + string.utf8.count > max ? nil : current + string
    }

    func parser(
        _ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        depth += 1
        // Apple's parser reads a key as text only.
        if readingKey || readingInnerKey { return fail(parser, "a key holds an element") }
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
        if element == "string", depth - (collectingDepth ?? depth) < PreferencesReader.maxDepth,
            collected <= PreferencesReader.maxVisited
        {
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
            result.cloudEnabled =
                switch element {
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

    // Apple's parser knows no entities but the predefined ones: a document declaring any is not a plist it reads.
    func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
        fail(parser, "it declares an entity (\(name)), which the app's parser does not read")
    }

    func parser(
        _ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?
    ) {
        fail(parser, "it declares an entity (\(name)), which the app's parser does not read")
    }

    func parser(
        _ parser: XMLParser, foundUnparsedEntityDeclarationWithName name: String, publicID: String?, systemID: String?,
        notationName: String?
    ) {
        fail(parser, "it declares an entity (\(name)), which the app's parser does not read")
    }

    private func fail(_ parser: XMLParser, _ reason: String) {
        structureError = reason
        parser.abortParsing()
    }
}
