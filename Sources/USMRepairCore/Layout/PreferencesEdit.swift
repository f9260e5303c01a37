import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A change to the app's preferences plist, applied to a copy that keeps the file's format
/// (binary or XML) and every key it does not name.
public struct PreferencesEdit: Sendable, Codable, Equatable {
    /// `USMCloudEnabledKey` to set; nil leaves it as it is.
    public var cloudEnabled: Bool?
    /// Remove every cached StoreUUID key (`…/CloudLogs/StoreUUID` + `+`*), whatever its container path.
    public var removeCachedStoreUUIDs: Bool
    /// Account-map keys (Core Data's `<UUID>` keys) to remove.
    public var removeAccountMaps: [String]
    /// Remove only the cached StoreUUID keys holding one of these UUIDs (a store that is not the
    /// active one: the cache of the active store stays).
    public var removeCachedValues: [String]

    public init(
        cloudEnabled: Bool? = nil, removeCachedStoreUUIDs: Bool = false, removeAccountMaps: [String] = [],
        removeCachedValues: [String] = []
    ) {
        self.cloudEnabled = cloudEnabled
        self.removeCachedStoreUUIDs = removeCachedStoreUUIDs
        self.removeAccountMaps = removeAccountMaps
        self.removeCachedValues = removeCachedValues
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        cloudEnabled = try c.decodeIfPresent(Bool.self, forKey: .cloudEnabled)
        removeCachedStoreUUIDs = try c.decode(Bool.self, forKey: .removeCachedStoreUUIDs)
        removeAccountMaps = try c.decode([String].self, forKey: .removeAccountMaps)
        removeCachedValues = try c.decodeIfPresent([String].self, forKey: .removeCachedValues) ?? []
    }

    /// True when the edit removes the cache key `cached`.
    func removes(_ cached: Preferences.CachedStoreUUID) -> Bool {
        removeCachedStoreUUIDs || cached.value.map(removeCachedValues.contains) == true
    }

    /// True when the edit would change nothing in `preferences`.
    public func isNoOp(on preferences: Preferences) -> Bool {
        (cloudEnabled == nil || cloudEnabled == preferences.cloudEnabled)
            && !preferences.cachedStoreUUIDs.contains(where: removes)
            && Set(removeAccountMaps).isDisjoint(with: preferences.accountMaps.map(\.contentName))
    }

    /// The keys the edit changes or removes, for a plan's description.
    public func describe(_ preferences: Preferences) -> [String] {
        var lines: [String] = []
        if let cloudEnabled, cloudEnabled != preferences.cloudEnabled {
            lines.append("\(Preferences.cloudEnabledKey) = \(cloudEnabled ? "YES" : "NO")")
        }
        lines += preferences.cachedStoreUUIDs.filter(removes).map { "remove \($0.key)" }
        for key in removeAccountMaps where preferences.accountMaps.contains(where: { $0.contentName == key }) {
            lines.append("remove \(key) (Core Data's account map)")
        }
        return lines
    }

    /// Writes the edited plist of `source` to `destination` (a new file), in the source's format,
    /// as a stream (`BinaryPlistEditor`, `XMLPlistEditor`): memory stays flat whatever the plist's
    /// size, number of keys or largest value.
    /// - Throws: `wrongKind` when the source is not a plist dictionary, `unreadable`, `writeFailed`.
    public func apply(from source: URL, to destination: URL) throws {
        let fd = FileSystemPath.withCString(source.path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: source.path, reason: errnoDescription()) }
        defer { close(fd) }
        var reader = PlistBlockReader(fd: fd, path: source.path)
        guard reader.size <= Preferences.maxSize else {
            throw USMError.wrongKind(
                path: source.path,
                expected: "a preferences plist (it is \(reader.size) bytes; preferences this large are not preferences)"
            )
        }
        let binary = reader.size >= 8 && (try? reader.bytes(at: 0, count: 8)) == Array("bplist00".utf8)
        let out = FileSystemPath.withCString(destination.path) {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        guard out >= 0 else { throw USMError.writeFailed(path: destination.path, reason: errnoDescription()) }
        var written = false
        defer {
            close(out)
            if !written { _ = FileSystemPath.withCString(destination.path) { unlink($0) } }
        }
        let add = cloudEnabled.map { (key: Preferences.cloudEnabledKey, value: $0) }
        do {
            if binary {
                try BinaryPlistEditor(reader: reader, decide: fate, add: add).write(to: out, path: destination.path)
            } else {
                // Only a document the reader accepts is cut (see `XMLPlistEditor`).
                _ = try PreferencesReader.scan(source.path, cloudKey: Preferences.cloudEnabledKey, accountMapKey: nil) {
                    _ in false
                }
                try XMLPlistEditor.rewrite(
                    source: fd, sourcePath: source.path, to: out, path: destination.path, decide: fate, add: add)
            }
        } catch let error as PreferencesReader.Malformed {
            throw USMError.wrongKind(
                path: source.path, expected: "a property list dictionary (binary or XML): \(error.reason)")
        }
        guard fsync(out) == 0 else { throw USMError.writeFailed(path: destination.path, reason: errnoDescription()) }
        written = true
    }

    /// What the edit does to the top-level entry `key` (nil: a key no edit names).
    func fate(_ key: String?) -> PlistEntryFate {
        guard let key else { return .keep }
        if removeAccountMaps.contains(key) { return .remove }
        if key == Preferences.cloudEnabledKey, let cloudEnabled { return .setBool(cloudEnabled) }
        if Preferences.cachedStoreUUID(key: key, value: NSNull()) != nil {
            if removeCachedStoreUUIDs { return .remove }
            if !removeCachedValues.isEmpty { return .removeIfValue(removeCachedValues) }
        }
        return .keep
    }
}

/// Writing a new small file completely and durably before it is renamed into place.
public enum FileWrite {
    /// Creates `url` (which must not exist) with `contents`, mode 0644, and fsyncs it.
    public static func create(_ url: URL, contents: Data, mode: mode_t = 0o644) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
        defer { close(fd) }
        try contents.withUnsafeBytes { try FileSync.writeAll(fd, $0, path: url.path) }
        guard fsync(fd) == 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
    }

    /// The bytes of a marker file as the app must read them: exactly 36 upper-case ASCII characters.
    /// - Throws: `usage` for anything that is not a UUID.
    public static func markerContents(_ uuid: String) throws -> Data {
        let upper = uuid.uppercased()
        guard Marker.isValidUUID(upper) else {
            throw USMError.usage(
                "'\(uuid)' is not a store UUID (36 characters, e.g. 0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B)")
        }
        return Data(upper.utf8)
    }
}
