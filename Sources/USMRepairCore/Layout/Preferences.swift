import Foundation

/// The app's preferences plist (binary or XML): `USMCloudEnabledKey`, the StoreUUID cache keys
/// UbiquityStoreManager reads before the marker file, and Core Data's account maps
/// (usm-behaviour.md §1.3–1.4).
public struct Preferences: Sendable, Equatable {
    /// The key UbiquityStoreManager stores iCloud on/off under.
    public static let cloudEnabledKey = "USMCloudEnabledKey"
    /// The key of Core Data's token → container-ID list inside an account map.
    public static let accountMapKey = "PFUbiquitySetupTokenAndIDArray"
    /// A preferences file larger than this is not a preferences file (it is read without being
    /// decoded, so the limit is about meaning, not memory).
    static let maxSize: Int64 = 64 << 20

    /// One cached StoreUUID: a key named by the StoreUUID marker's full device path.
    public struct CachedStoreUUID: Sendable, Encodable, Equatable {
        /// The whole key, e.g. `/private/var/mobile/Library/Mobile Documents/T~com~x/CloudLogs/StoreUUID+`.
        public let key: String
        /// The ubiquity container's path on the device that wrote it (the key before `/CloudLogs/`).
        public let containerPath: String
        /// The marker version the key belongs to (its number of `+`).
        public let cloudVersion: Int
        /// The value when it is a string (the app ignores anything else, and an empty string).
        @NullEncoded public var value: String?
        /// True when the value is a valid store UUID.
        public let valid: Bool
    }

    /// Core Data's account map for one content name: which container-ID folders (`<cid>`) belong
    /// to iCloud accounts of this device.
    public struct AccountMap: Sendable, Encodable, Equatable {
        /// The key: a store UUID (cloud version 1) or the content name (version 0).
        public let contentName: String
        /// The container-ID folder names it lists.
        public let containerIDs: [String]
    }

    /// Where it was read from.
    public let path: String
    /// `USMCloudEnabledKey`, nil when the key is absent.
    public let cloudEnabled: Bool?
    /// True when the key is present.
    public let hasKey: Bool
    /// True for an XML plist (the format a rewrite keeps).
    public let isXML: Bool
    /// Every key ending in `/CloudLogs/StoreUUID` and `+` signs, sorted by key.
    public let cachedStoreUUIDs: [CachedStoreUUID]
    /// Every key holding a dictionary with `PFUbiquitySetupTokenAndIDArray`, sorted by key.
    public let accountMaps: [AccountMap]

    /// The suffix every cache key ends with, before its `+` signs.
    static let cacheKeyMarker = "/CloudLogs/StoreUUID"

    /// Reads the plist at `url`.
    /// - Throws: `notFound`, `unreadable`, or `wrongKind` when it is not a plist dictionary, or the
    ///   key holds something other than a boolean.
    /// Runs the XML editor over the plist at `path`, keeping everything and writing to /dev/null.
    /// - Throws: `PreferencesReader.Malformed` for what the editor cannot cut; `unreadable`.
    private static func checkEditable(_ path: String) throws {
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard null >= 0 else { throw USMError.unreadable(path: "/dev/null", reason: errnoDescription()) }
        defer { close(null) }
        try XMLPlistEditor.rewrite(
            source: fd, sourcePath: path, to: null, path: "/dev/null", decide: { _ in .keep }, add: nil)
    }

    static func read(_ url: URL) throws -> Preferences {
        guard let status = FileStatus.resolve(url.path) else {
            throw USMError.notFound(path: url.path, what: "preferences file")
        }
        guard status.kind == .file else {
            throw USMError.wrongKind(path: url.path, expected: "a preferences plist file")
        }
        guard status.size <= maxSize else {
            throw USMError.wrongKind(
                path: url.path,
                expected: "a preferences plist (it is \(status.size) bytes; preferences this large are not preferences)"
            )
        }
        let scan: PreferencesReader.Scan
        do {
            scan = try PreferencesReader.scan(url.path, cloudKey: cloudEnabledKey, accountMapKey: accountMapKey) {
                cachedStoreUUID(key: $0, value: NSNull()) != nil
            }
            // What is read must be editable: an XML plist is also cut by the editor's own reader
            // (into /dev/null), so a document that libxml2 accepts but the editor cannot cut (a
            // last end tag broken after its name, found by the PreferencesEdit fuzz target) is
            // malformed here, before any plan is made, not refused halfway through one.
            if scan.xml { try checkEditable(url.path) }
        } catch let error as PreferencesReader.Malformed {
            throw USMError.wrongKind(
                path: url.path, expected: "a property list dictionary (binary or XML): \(error.reason)")
        }
        var enabled: Bool?
        switch scan.cloudEnabled {
        case nil: break
        case let .bool(value)?: enabled = value
        case let .integer(value)?:
            // UbiquityStoreManager always writes the key with setBool: an integer is not its
            // writing, and what it means to the app would be a guess (README: bad input, exit 2).
            throw USMError.wrongKind(
                path: url.path,
                expected: "a plist whose \(cloudEnabledKey) is a boolean (it holds the integer \(value))")
        case .other?:
            throw USMError.wrongKind(
                path: url.path,
                expected: "a plist whose \(cloudEnabledKey) is a boolean (it holds a value of another type)")
        }
        let caches = scan.caches.compactMap { cachedStoreUUID(key: $0.key, value: $0.value as Any? ?? NSNull()) }
        // A cache key names the ubiquity container by its full path (the app writes it from the
        // container's URL): one that is not a plain absolute path (`..`, `.`, an empty part, a
        // relative path, a NUL) is not the app's writing, and is never used as a path (README:
        // preferences-malformed, bad input, exit 2).
        if let bad = caches.first(where: { !isPlainAbsolutePath($0.containerPath) }) {
            throw USMError.wrongKind(
                path: url.path,
                expected:
                    "a plist whose cached StoreUUID keys name the ubiquity container by a plain absolute path (the key \"\(bad.key)\" does not: a path read from the preferences is never used unless it is absolute, without . or .. or empty parts)"
            )
        }
        let maps = scan.accountMaps.map { AccountMap(contentName: $0.key, containerIDs: $0.ids) }
        return Preferences(
            path: url.path, cloudEnabled: enabled, hasKey: enabled != nil, isXML: scan.xml,
            cachedStoreUUIDs: caches.sorted { $0.key < $1.key },
            accountMaps: maps.sorted { $0.contentName < $1.contentName })
    }

    /// `USMCloudEnabledKey` as the file holds it, and the file's format, read without decoding the
    /// plist (memory stays flat whatever its size).
    /// - Throws: `notFound`, `unreadable`, `wrongKind` (not a plist dictionary, or larger than `maxSize`).
    static func lookUpCloudKey(_ url: URL) throws -> (xml: Bool, value: PreferencesReader.Value?) {
        guard let status = FileStatus.resolve(url.path) else {
            throw USMError.notFound(path: url.path, what: "preferences file")
        }
        guard status.kind == .file else {
            throw USMError.wrongKind(path: url.path, expected: "a preferences plist file")
        }
        do {
            let scan = try PreferencesReader.scan(url.path, cloudKey: cloudEnabledKey, accountMapKey: nil) { _ in false
            }
            return (scan.xml, scan.cloudEnabled)
        } catch let error as PreferencesReader.Malformed {
            throw USMError.wrongKind(
                path: url.path, expected: "a property list dictionary (binary or XML): \(error.reason)")
        }
    }

    /// True for `/a/b/c`: absolute, each part neither empty, `.` nor `..`, no NUL.
    static func isPlainAbsolutePath(_ path: String) -> Bool {
        guard path.hasPrefix("/"), path.count > 1, !path.utf8.contains(0) else { return false }
        return path.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).allSatisfy {
            !$0.isEmpty && !$0.elementsEqual(".".utf8) && !$0.elementsEqual("..".utf8)
        }
    }

    /// The cache entry a key names, when it is one (`…/CloudLogs/StoreUUID` + `+`×v).
    static func cachedStoreUUID(key: String, value: Any) -> CachedStoreUUID? {
        guard let range = key.range(of: cacheKeyMarker, options: .backwards) else { return nil }
        let pluses = key[range.upperBound...]
        guard pluses.allSatisfy({ $0 == "+" }) else { return nil }
        let text = value as? String
        return CachedStoreUUID(
            key: key, containerPath: String(key[..<range.lowerBound]), cloudVersion: pluses.count,
            value: text, valid: text.map(Marker.isValidUUID) ?? false)
    }

    /// The account map a dictionary holds, when it holds Core Data's list: every container-ID
    /// string found in it (its exact shape is private to Core Data, so it is searched, not assumed).
    static func accountMap(key: String, value: [String: Any]) -> AccountMap? {
        guard let list = value[accountMapKey] else { return nil }
        var ids: [String] = []
        func collect(_ item: Any, depth: Int) {
            guard depth < 6 else { return }
            switch item {
            case let text as String where UUID(uuidString: text) != nil || text == "local":
                if !ids.contains(text) { ids.append(text) }
            case let array as [Any]:
                for element in array { collect(element, depth: depth + 1) }
            case let dict as [String: Any]:
                for element in dict.values { collect(element, depth: depth + 1) }
            default:
                break
            }
        }
        collect(list, depth: 0)
        return AccountMap(contentName: key, containerIDs: ids)
    }

    /// True when the plist holds anything UbiquityStoreManager or Core Data's ubiquity keeps.
    var holdsUbiquityKeys: Bool { hasKey || !cachedStoreUUIDs.isEmpty || !accountMaps.isEmpty }
}
