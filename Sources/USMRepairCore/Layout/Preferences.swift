import Foundation

/// The app's preferences plist (binary or XML), where UbiquityStoreManager keeps `USMCloudEnabledKey`.
public struct Preferences: Sendable, Equatable {
    /// The key UbiquityStoreManager stores iCloud on/off under.
    public static let cloudEnabledKey = "USMCloudEnabledKey"
    /// A preferences file larger than this is not a preferences file (it is read without being
    /// decoded, so the limit is about meaning, not memory).
    static let maxSize: Int64 = 64 << 20

    /// Where it was read from.
    public let path: String
    /// `USMCloudEnabledKey`, nil when the key is absent.
    public let cloudEnabled: Bool?
    /// True when the key is present.
    public let hasKey: Bool

    /// Reads the plist at `url`.
    /// - Throws: `notFound`, `unreadable`, or `wrongKind` when it is not a plist dictionary, or the
    ///   key holds something other than a boolean.
    static func read(_ url: URL) throws -> Preferences {
        let found = try lookUpCloudKey(url)
        switch found.value {
        case nil: return Preferences(path: url.path, cloudEnabled: nil, hasKey: false)
        case let .bool(value)?: return Preferences(path: url.path, cloudEnabled: value, hasKey: true)
        case let .integer(value)?: return Preferences(path: url.path, cloudEnabled: value != 0, hasKey: true)
        case .other?: throw USMError.wrongKind(path: url.path, expected: "a plist whose \(cloudEnabledKey) is a boolean")
        }
    }

    /// `USMCloudEnabledKey` as the file holds it, and the file's format, read without decoding the
    /// rest of the plist (memory stays flat whatever its size).
    /// - Throws: `notFound`, `unreadable`, `wrongKind` (not a plist dictionary, or larger than `maxSize`).
    static func lookUpCloudKey(_ url: URL) throws -> PreferencesReader.Lookup {
        guard let status = FileStatus.resolve(url.path) else { throw USMError.notFound(path: url.path, what: "preferences file") }
        guard status.kind == .file else { throw USMError.wrongKind(path: url.path, expected: "a preferences plist file") }
        guard status.size <= maxSize else {
            throw USMError.wrongKind(path: url.path, expected: "a preferences plist (it is \(status.size) bytes; preferences this large are not preferences)")
        }
        do {
            return try PreferencesReader.lookUp(cloudEnabledKey, in: url.path)
        } catch let error as PreferencesReader.Malformed {
            throw USMError.wrongKind(path: url.path, expected: "a property list dictionary (binary or XML): \(error.reason)")
        }
    }

    /// True when the file parses as a plist dictionary holding `USMCloudEnabledKey` (used to pick
    /// the app's preferences among the several plists of a container).
    static func holdsCloudKey(_ url: URL) -> Bool {
        (try? read(url))?.hasKey == true
    }
}
