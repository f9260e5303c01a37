import Foundation

/// One of UbiquityStoreManager's marker files in `CloudLogs/`: `StoreUUID` + `+`×v names the active
/// cloud store of cloud version v, `CorruptedUUID` + `+`×v the store some device failed to load.
///
/// The app reads a marker's bytes as ASCII with no trimming (usm-behaviour.md §1.2) and compares
/// them exactly, so a marker is valid only when it holds exactly 36 upper-case ASCII characters
/// forming a UUID: no newline, no BOM, not empty. Anything else still names *a* store for the app
/// (an empty name, or a UUID with a newline) — the reason such markers are traps (E12).
public struct Marker: Sendable, Encodable, Equatable {
    /// Which marker.
    public enum Kind: String, Sendable, Codable {
        case storeUUID = "store-uuid"
        case corruptedUUID = "corrupted-uuid"

        /// The file name without the version's `+` signs.
        public var baseName: String { self == .storeUUID ? "StoreUUID" : "CorruptedUUID" }
    }

    /// What is wrong with a marker's content, as the app would read it.
    public enum Defect: String, Sendable, Codable {
        /// The file is empty: the app reads the UUID `""`.
        case empty
        /// A UUID followed by a newline (or other white space): the app reads a different store name.
        case trailingNewline = "trailing-newline"
        /// A UUID in lower case: the app's exact comparison never matches the store's upper-case name.
        case lowercase
        /// Not a UUID at all (or longer than any marker).
        case notAUUID = "not-a-uuid"
        /// Not a regular file (a folder, a link to nothing, a link loop).
        case notAFile = "not-a-file"
    }

    /// File name, e.g. `StoreUUID+`.
    public let name: String
    /// Store-UUID or corruption marker.
    public let kind: Kind
    /// Cloud version the marker belongs to (number of `+`).
    public let cloudVersion: Int
    /// Full path.
    public let path: String
    /// The UUID it names, when it holds exactly one as the app needs it.
    @NullEncoded public var value: String?
    /// The text exactly as the app would read it (ASCII, untrimmed; nil when not text or too long).
    @NullEncoded public var raw: String?
    /// False when the content is anything but a valid UUID marker.
    public let valid: Bool
    /// What is wrong, when it is not valid.
    @NullEncoded public var defect: Defect?

    /// The marker file name for a kind and cloud version.
    public static func fileName(_ kind: Kind, version: Int) -> String {
        kind.baseName + String(repeating: "+", count: version)
    }

    /// Kind and version of a marker file name (`StoreUUID++` → store-uuid, 2); nil for other names.
    public static func parse(fileName: String) -> (kind: Kind, version: Int)? {
        for kind in [Kind.storeUUID, .corruptedUUID] where fileName.hasPrefix(kind.baseName) {
            let rest = fileName.dropFirst(kind.baseName.count)
            guard rest.allSatisfy({ $0 == "+" }), rest.count <= maxVersion else { return nil }
            return (kind, rest.count)
        }
        return nil
    }

    /// The cloud version an iOS 7+ device wants (usm-behaviour.md §1.1, `D`).
    public static let desiredVersion = 1
    /// Marker versions usm-repair looks for (anything above is reported and never read further).
    static let maxVersion = 8

    /// Largest marker read; a UUID is 36 bytes, anything far larger is garbage, not read whole.
    static let maxSize = 4096

    /// True for text the app accepts as a store UUID: 36 upper-case ASCII characters of a UUID.
    public static func isValidUUID(_ text: String) -> Bool {
        text.utf8.count == 36 && UUID(uuidString: text) != nil && text == text.uppercased()
    }

    /// Reads the marker at `url`; nil when nothing is there.
    /// - Throws: `USMError.unreadable` when it exists but cannot be read.
    static func read(_ url: URL, kind: Kind, version: Int) throws -> Marker? {
        guard let link = FileStatus.lookup(url.path) else { return nil }
        func make(value: String?, raw: String?, defect: Defect?) -> Marker {
            Marker(
                name: url.lastPathComponent, kind: kind, cloudVersion: version, path: url.path, value: value, raw: raw,
                valid: defect == nil, defect: defect)
        }
        guard let status = FileStatus.resolve(url.path), status.kind == .file else {
            _ = link
            return make(value: nil, raw: nil, defect: .notAFile)
        }
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw USMError.unreadable(path: url.path, reason: errnoDescription())
        }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.read(upToCount: maxSize + 1) ?? Data() } catch {
            throw USMError.unreadable(path: url.path, reason: USMError.wrap(error).message)
        }
        guard data.count <= maxSize else { return make(value: nil, raw: nil, defect: .notAUUID) }
        let raw = String(data: data, encoding: .ascii)
        if data.isEmpty { return make(value: nil, raw: "", defect: .empty) }
        guard let raw else { return make(value: nil, raw: nil, defect: .notAUUID) }
        if isValidUUID(raw) { return make(value: raw, raw: raw, defect: nil) }
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed != raw, isValidUUID(trimmed) { return make(value: nil, raw: raw, defect: .trailingNewline) }
        if UUID(uuidString: raw) != nil || UUID(uuidString: trimmed) != nil {
            return make(value: nil, raw: raw, defect: .lowercase)
        }
        return make(value: nil, raw: raw, defect: .notAUUID)
    }
}
