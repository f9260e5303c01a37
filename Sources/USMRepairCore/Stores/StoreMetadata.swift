import Foundation
import GRDB

/// What `Z_METADATA` says: the store UUID (`Z_UUID`) and the metadata dictionary in `Z_PLIST`.
public struct StoreMetadata: Sendable, Equatable {
    /// The state of the `Z_PLIST` value.
    public enum PlistState: String, Sendable, Codable {
        /// A binary plist holding a dictionary.
        case ok
        /// The column is NULL or an empty blob.
        case null
        /// Bytes that do not decode as a plist dictionary.
        case malformed
        /// More bytes than any metadata dictionary holds (`plistLimit`): not decoded.
        case tooLarge = "too-large"
    }

    /// The largest `Z_PLIST` decoded. Core Data's metadata (store type, one 32-byte hash per entity,
    /// a few iCloud keys) takes a few kilobytes; 1 MiB leaves room for app-defined keys, and a value
    /// of hundreds of megabytes is not metadata.
    public static let plistLimit = 1 << 20
    /// The longest `Z_UUID` read (a UUID is 36 characters).
    static let uuidLimit = 1024

    /// `Z_UUID`, the store UUID (also the host of object-ID URIs).
    public var storeUUID: String?
    /// The number of rows in `Z_METADATA` (Core Data writes exactly one).
    public var rowCount: Int
    /// `Z_VERSION` of the row read.
    public var version: Int?
    /// The state of `Z_PLIST`.
    public var plistState: PlistState
    /// Every key of the metadata dictionary, sorted.
    public var keys: [String]
    /// `NSStoreType`.
    public var storeType: String?
    /// `NSPersistenceFrameworkVersion`, the Core Data build that last wrote the store.
    public var frameworkVersion: Int?
    /// `NSStoreModelVersionIdentifiers`.
    public var modelVersionIdentifiers: [String]
    /// The entity names listed in `NSStoreModelVersionHashes`, sorted.
    public var modelHashEntities: [String]
    /// The iCloud (ubiquity) keys present, sorted.
    public var ubiquityKeys: [String]
    /// The size of `Z_PLIST` in bytes when it was too large to decode (nil when SQLite cannot tell
    /// without loading it, or when it was decoded).
    public var plistBytes: Int64?

    /// True when the store carries iCloud ubiquity metadata.
    public var hasUbiquityMetadata: Bool { !ubiquityKeys.isEmpty }

    /// True for the metadata keys Core Data writes when it prepares a store for iCloud, the keys
    /// `NSPersistentStoreRemoveUbiquitousMetadataOption` strips.
    public static func isUbiquityKey(_ key: String) -> Bool {
        key.hasPrefix("com.apple.coredata.ubiquity") || key == "PFUbiquitySetupOriginalStoreURLAbsoluteStringKey"
    }

    /// Builds the metadata from the raw column values.
    init(rowCount: Int, version: Int?, uuid: String?, plist: Data?) {
        self.rowCount = rowCount
        self.version = version
        storeUUID = uuid
        keys = []
        modelVersionIdentifiers = []
        modelHashEntities = []
        ubiquityKeys = []
        guard let plist, !plist.isEmpty else {
            plistState = .null
            return
        }
        guard let decoded = try? PropertyListSerialization.propertyList(from: plist, options: [], format: nil),
            let dict = decoded as? [String: Any]
        else {
            plistState = .malformed
            return
        }
        plistState = .ok
        keys = dict.keys.sorted()
        storeType = dict["NSStoreType"] as? String
        frameworkVersion = (dict["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue
        modelVersionIdentifiers = (dict["NSStoreModelVersionIdentifiers"] as? [Any])?.map { "\($0)" } ?? []
        modelHashEntities = ((dict["NSStoreModelVersionHashes"] as? [String: Any])?.keys).map { $0.sorted() } ?? []
        ubiquityKeys = keys.filter(Self.isUbiquityKey)
    }

    /// Reads `Z_METADATA` of an open store: its row count and first row, every value decoded from
    /// its storage class, `Z_PLIST` fetched only when `length()` says it is under `plistLimit`.
    /// Values Core Data would not write are returned as `bookkeeping-value` problems.
    static func read(_ db: Database) throws -> (StoreMetadata, [Problem]) {
        let count = (try DatabaseValue.fetchOne(db, sql: "SELECT COUNT(*) FROM Z_METADATA"))?.storedInt ?? 0
        guard count > 0 else { return (StoreMetadata(rowCount: 0, version: nil, uuid: nil, plist: nil), []) }
        var problems: [Problem] = []
        func bad(_ column: String, _ what: String, _ consequence: String) {
            problems.append(
                Problem(
                    .bookkeepingValue, "Z_METADATA.\(column) holds \(what), not what Core Data writes: \(consequence)",
                    subject: "Z_METADATA.\(column)"))
        }

        var version: Int?
        switch try BoundedRead.first(db, column: "Z_VERSION", table: "Z_METADATA", limit: 64) {
        case let .value(value)?:
            version = value.storedInt
            if version == nil, !value.isNull { bad("Z_VERSION", value.kindDescription, "not read") }
        case let .tooLarge(type, _)?: bad("Z_VERSION", type, "not read")
        case nil: break
        }

        var uuid: String?
        switch try BoundedRead.first(db, column: "Z_UUID", table: "Z_METADATA", limit: uuidLimit) {
        case let .value(value)?:
            switch value.storage {
            case let .string(text): uuid = text
            case let .blob(data):
                // A 16-byte blob is a UUID in binary; show it the way Core Data writes it.
                uuid =
                    data.count == 16
                    ? UUID(uuid: data.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }).uuidString : data.hex
                bad("Z_UUID", value.kindDescription, "read as \(uuid ?? "")")
            case .int64, .double:
                bad("Z_UUID", value.kindDescription, "the store has no readable identity")
            case .null: break
            }
        case let .tooLarge(type, bytes)?:
            bad("Z_UUID", bytes.map { "\(type) of \($0) bytes" } ?? "\(type) over \(uuidLimit) bytes", "not read")
        case nil: break
        }

        switch try BoundedRead.first(db, column: "Z_PLIST", table: "Z_METADATA", limit: plistLimit) {
        case let .tooLarge(_, bytes)?:
            var metadata = StoreMetadata(rowCount: count, version: version, uuid: uuid, plist: nil)
            metadata.plistState = .tooLarge
            metadata.plistBytes = bytes
            return (metadata, problems)
        case let .value(value)?:
            let plist: Data? =
                switch value.storage {
                case let .blob(data): data
                case let .string(text): Data(text.utf8)
                case .int64, .double: Data([0])  // not a plist: reported as malformed
                case .null: nil
                }
            return (StoreMetadata(rowCount: count, version: version, uuid: uuid, plist: plist), problems)
        case nil:
            return (StoreMetadata(rowCount: count, version: version, uuid: uuid, plist: nil), problems)
        }
    }
}
