import Foundation

/// The app's preferences plist (binary or XML), where UbiquityStoreManager keeps `USMCloudEnabledKey`.
public struct Preferences: Sendable, Equatable {
    /// The key UbiquityStoreManager stores iCloud on/off under.
    public static let cloudEnabledKey = "USMCloudEnabledKey"
    /// A preferences file larger than this is not a preferences file.
    static let maxSize = 16 << 20

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
        guard let status = FileStatus.resolve(url.path) else { throw USMError.notFound(path: url.path, what: "preferences file") }
        guard status.kind == .file else { throw USMError.wrongKind(path: url.path, expected: "a preferences plist file") }
        guard status.size <= maxSize else { throw USMError.wrongKind(path: url.path, expected: "a preferences plist (it is \(status.size) bytes)") }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw USMError.unreadable(path: url.path, reason: error.localizedDescription)
        }
        guard let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
              let dict = plist as? [String: Any]
        else { throw USMError.wrongKind(path: url.path, expected: "a property list dictionary (binary or XML)") }
        guard let value = dict[cloudEnabledKey] else {
            return Preferences(path: url.path, cloudEnabled: nil, hasKey: false)
        }
        if let bool = value as? Bool { return Preferences(path: url.path, cloudEnabled: bool, hasKey: true) }
        if let number = value as? NSNumber { return Preferences(path: url.path, cloudEnabled: number.intValue != 0, hasKey: true) }
        throw USMError.wrongKind(path: url.path, expected: "a plist whose \(cloudEnabledKey) is a boolean")
    }

    /// True when the file parses as a plist dictionary holding `USMCloudEnabledKey` (used to pick
    /// the app's preferences among the several plists of a container).
    static func holdsCloudKey(_ url: URL) -> Bool {
        (try? read(url))?.hasKey == true
    }
}
