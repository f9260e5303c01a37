import Foundation

/// One of UbiquityStoreManager's marker files in `CloudLogs/`: `StoreUUID` / `StoreUUID+` name the
/// active cloud store, `CorruptedUUID` / `CorruptedUUID+` the store some device found corrupt.
/// The number of `+` is the cloud version. Content: the UUID as ASCII text, no newline.
public struct Marker: Sendable, Encodable, Equatable {
    /// Which marker.
    public enum Kind: String, Sendable, Codable {
        case storeUUID = "store-uuid"
        case corruptedUUID = "corrupted-uuid"
    }

    /// File name, e.g. `StoreUUID+`.
    public let name: String
    /// Store-UUID or corruption marker.
    public let kind: Kind
    /// Cloud version the marker belongs to (number of `+`).
    public let cloudVersion: Int
    /// Full path.
    public let path: String
    /// The UUID it names, when it holds one.
    @NullEncoded public var value: String?
    /// False when the file holds something other than a UUID.
    public let valid: Bool

    /// The marker file name for a kind and cloud version.
    public static func fileName(_ kind: Kind, version: Int) -> String {
        (kind == .storeUUID ? "StoreUUID" : "CorruptedUUID") + String(repeating: "+", count: version)
    }

    /// The cloud versions usm-repair knows, highest first (USM counts down from the wanted one).
    public static let versions = [1, 0]

    /// Largest marker accepted; a UUID is 36 bytes, anything far larger is garbage, not read whole.
    static let maxSize = 4096

    /// Reads the marker at `url`; nil when it does not exist.
    /// - Throws: `USMError.unreadable` when it exists but cannot be read.
    static func read(_ url: URL, kind: Kind, version: Int) throws -> Marker? {
        guard FileStatus.lookup(url.path) != nil else { return nil }
        // A symlink that resolves to nothing (to itself, a loop, a missing target) is a marker
        // UbiquityStoreManager cannot read: reported, never skipped as if absent.
        guard let status = FileStatus.resolve(url.path), status.kind == .file else {
            return Marker(name: url.lastPathComponent, kind: kind, cloudVersion: version, path: url.path, value: nil, valid: false)
        }
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw USMError.unreadable(path: url.path, reason: errnoDescription())
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maxSize + 1)) ?? Data()
        let text = data.count <= maxSize ? String(data: data, encoding: .utf8) : nil
        let trimmed = text?.trimmingCharacters(in: .whitespacesAndNewlines)
        let uuid = trimmed.flatMap { UUID(uuidString: $0) != nil ? $0 : nil }
        return Marker(name: url.lastPathComponent, kind: kind, cloudVersion: version, path: url.path, value: uuid, valid: uuid != nil)
    }
}
