import Foundation

/// Writes a whole UbiquityStoreManager situation as an app container download would hold it:
///
/// ```
/// <root>/AppData/Library/Application Support/UbiquityStore.sqlite        local store (+ -wal)
/// <root>/AppData/Library/Application Support/CloudStore/<UUID>.sqlite    cloud store, version 1
/// <root>/AppData/Library/Preferences/com.example.notes.plist             USMCloudEnabledKey
/// <root>/iCloud/CloudLogs/StoreUUID+                                     the active store UUID
/// <root>/iCloud/CloudLogs/<UUID>/mobile.<peer>/<UUID>/...                 transaction logs (opaque)
/// ```
public struct FixtureContainer {
    /// What the container holds.
    public struct Options: Sendable {
        public var cloudEnabled: Bool? = true
        /// XML instead of binary preferences.
        public var xmlPreferences = false
        public var activeUUID = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"
        /// Another cloud store, inactive (an older one).
        public var oldUUID: String? = "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF"
        /// Writes `CorruptedUUID+` naming this UUID.
        public var corruptedUUID: String?
        /// Writes the local store.
        public var localStore = true
        /// Writes the active cloud store's file set (its cloud content is always written).
        public var activeStoreFile = true
        public var local = FixtureStore.Options()
        public var cloud: FixtureStore.Options = {
            var o = FixtureStore.Options()
            o.ubiquityMetadata = true
            o.walOnlyBooks = 2
            o.history = true
            o.storeUUID = "3C2B1A09-8765-4321-ABCD-0123456789AB"
            o.seed = 2
            return o
        }()

        public init() {}
    }

    /// Paths inside a fixture container.
    public struct Paths {
        public let root: URL
        public var appDir: URL { root.appendingPathComponent("AppData/Library/Application Support", isDirectory: true) }
        public var cloudDir: URL { root.appendingPathComponent("iCloud", isDirectory: true) }
        public var logs: URL { cloudDir.appendingPathComponent("CloudLogs", isDirectory: true) }
        public var prefs: URL { root.appendingPathComponent("AppData/Library/Preferences/com.example.notes.plist") }
        public var localStore: URL { appDir.appendingPathComponent("UbiquityStore.sqlite") }
        public func cloudStore(_ uuid: String) -> URL { appDir.appendingPathComponent("CloudStore/\(uuid).sqlite") }
        public init(root: URL) { self.root = root }
    }

    /// Writes the container at `root` (created if needed) and returns its paths.
    @discardableResult
    public static func write(to root: URL, _ o: Options = Options()) throws -> Paths {
        let paths = Paths(root: root)
        let fm = FileManager.default
        try fm.createDirectory(at: paths.appDir.appendingPathComponent("CloudStore"), withIntermediateDirectories: true)
        try fm.createDirectory(at: paths.prefs.deletingLastPathComponent(), withIntermediateDirectories: true)
        try fm.createDirectory(at: paths.logs, withIntermediateDirectories: true)
        try fm.createDirectory(at: root.appendingPathComponent("AppData/Documents"), withIntermediateDirectories: true)

        if o.localStore { try FixtureStore.write(to: paths.localStore, o.local) }
        if o.activeStoreFile { try FixtureStore.write(to: paths.cloudStore(o.activeUUID), o.cloud) }
        if let old = o.oldUUID {
            var cloud = o.cloud
            cloud.walOnlyBooks = 0
            cloud.storeUUID = "99999999-8888-4777-A666-555555555555"
            try FixtureStore.write(to: paths.cloudStore(old), cloud)
        }
        for uuid in [o.activeUUID] + (o.oldUUID.map { [$0] } ?? []) {
            let peer = paths.logs.appendingPathComponent("\(uuid)/mobile.8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A/\(uuid)", isDirectory: true)
            try fm.createDirectory(at: peer.appendingPathComponent("receipts"), withIntermediateDirectories: true)
            try Data("opaque transaction log 1".utf8).write(to: peer.appendingPathComponent("0001.cdt"))
            try Data("opaque transaction log 2".utf8).write(to: peer.appendingPathComponent("0002.cdt"))
            try Data("receipt".utf8).write(to: peer.appendingPathComponent("receipts/0001.receipt"))
        }
        try Data(o.activeUUID.utf8).write(to: paths.logs.appendingPathComponent("StoreUUID+"))
        if let corrupted = o.corruptedUUID {
            try Data(corrupted.utf8).write(to: paths.logs.appendingPathComponent("CorruptedUUID+"))
        }
        var prefs: [String: Any] = ["NSLanguages": ["en"], "LastLaunchVersion": "2.4"]
        if let enabled = o.cloudEnabled { prefs["USMCloudEnabledKey"] = enabled }
        let data = try PropertyListSerialization.data(
            fromPropertyList: prefs, format: o.xmlPreferences ? .xml : .binary, options: 0)
        try data.write(to: paths.prefs)
        return paths
    }
}
