import Foundation

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
    }

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
}
