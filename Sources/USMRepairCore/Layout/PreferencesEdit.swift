import Foundation

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

    public init(cloudEnabled: Bool? = nil, removeCachedStoreUUIDs: Bool = false, removeAccountMaps: [String] = [],
                removeCachedValues: [String] = []) {
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

    /// Writes the edited plist of `source` to `destination` (a new file), in the source's format.
    /// - Throws: `wrongKind` when the source is not a plist dictionary, `writeFailed`.
    public func apply(from source: URL, to destination: URL) throws {
        let data: Data
        do { data = try Data(contentsOf: source) } catch {
            throw USMError.unreadable(path: source.path, reason: USMError.wrap(error).message)
        }
        var format = PropertyListSerialization.PropertyListFormat.binary
        guard var dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: &format)) as? [String: Any] else {
            throw USMError.wrongKind(path: source.path, expected: "a property list dictionary (binary or XML)")
        }
        if let cloudEnabled { dict[Preferences.cloudEnabledKey] = cloudEnabled }
        for key in dict.keys {
            guard let cached = Preferences.cachedStoreUUID(key: key, value: dict[key] as Any), removes(cached) else { continue }
            dict[key] = nil
        }
        for key in removeAccountMaps { dict[key] = nil }
        let output: Data
        do {
            output = try PropertyListSerialization.data(fromPropertyList: dict, format: format == .xml ? .xml : .binary, options: 0)
        } catch {
            throw USMError.writeFailed(path: destination.path, reason: "the preferences cannot be written back: \(error)")
        }
        try FileWrite.create(destination, contents: output)
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
        guard Marker.isValidUUID(upper) else { throw USMError.usage("'\(uuid)' is not a store UUID (36 characters, e.g. 0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B)") }
        return Data(upper.utf8)
    }
}
