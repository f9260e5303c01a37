import Foundation

/// Writes a whole UbiquityStoreManager situation as a support engineer receives it from an iOS 7+
/// device (usm-behaviour.md §1, §4): an Xcode `.xcappdata` download of the app's sandbox, and beside
/// it the ubiquity container as a Mac holds it (a download never holds the container):
///
/// ```
/// <root>/AppData/Library/Application Support/UbiquityStore.sqlite                 local store (+ -wal, -shm)
/// <root>/AppData/Library/Application Support/CloudStore/CoreDataUbiquitySupport/
///        mobile~<vendor UUID>/<UUID>/<account UUID>/store/<UUID>.sqlite           Core Data's copy of a cloud store
///        mobile~<vendor UUID>/<UUID>/<account UUID>/container/                    Core Data's bookkeeping
/// <root>/AppData/Library/Preferences/com.example.notes.plist                      USMCloudEnabledKey, the cached
///                                                                                  StoreUUID, Core Data's account map
/// <root>/../Mobile Documents/ABCDE12345~com~example~notes/CloudLogs/StoreUUID+    the active store UUID
/// <root>/../Mobile Documents/ABCDE12345~com~example~notes/CloudLogs/<UUID>/<peer>/<UUID>/...   transaction logs
/// ```
public struct FixtureContainer {
    /// Where the ubiquity container goes.
    public enum CloudLocation: Sendable {
        /// Beside the download, as a Mac keeps it: `<root>/../Mobile Documents/<TEAM>~<bundle~id>/`.
        case beside
        /// Inside the download (`<root>/iCloud`), for tests of a hand-assembled folder.
        case inside
        /// Not written: a download alone.
        case none
    }

    /// How the preferences cache the active StoreUUID.
    public enum Cache: Sendable, Equatable {
        /// No cached key.
        case none
        /// The key of `StoreUUID+` holding the active UUID (what a device that loaded it has).
        case matching
        /// The key of `StoreUUID+` holding another UUID (E5).
        case stale(String)
        /// The key of version 0 (`…/StoreUUID`) holding the active UUID.
        case otherVersion
    }

    /// What the container holds.
    public struct Options: Sendable {
        public var cloudEnabled: Bool? = true
        /// XML instead of binary preferences.
        public var xmlPreferences = false
        public var activeUUID = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"
        /// Another cloud store, inactive (an older one): logs and a copy on this device.
        public var oldUUID: String? = "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF"
        /// Writes `CorruptedUUID+` naming this UUID.
        public var corruptedUUID: String?
        /// Marker files to write, by file name (content written as is); nil: `StoreUUID+` naming the active UUID.
        public var markers: [String: String]?
        /// Writes the local store.
        public var localStore = true
        /// Writes this device's Core Data copy of the active store.
        public var activeStoreCopy = true
        /// Writes the active store's transaction logs.
        public var activeLogs = true
        /// More copies of the active store: (peer, account) pairs, as several builds or accounts leave them.
        public var extraCopies: [(peer: String, account: String)] = []
        /// A stray plain file at the nominal `CloudStore/<active UUID>.sqlite`.
        public var nominalFile = false
        /// An iOS 6 store file in `CloudStore.nosync/` with this UUID (and its logs under the store name).
        public var ios6UUID: String?
        /// An iOS 6 store opened on iOS 7: its Core Data copy under the content name `UbiquityStore`.
        public var ios6CopyUUID: String?
        public var cache: Cache = .matching
        /// Writes Core Data's account map for the active store, listing `account`.
        public var accountMap = true
        public var cloudLocation: CloudLocation = .beside
        public var peer = "mobile~8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A"
        public var account = "7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E"
        public var team = "ABCDE12345"
        public var bundleID = "com.example.notes"
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

        /// The old store's copy (nil: as `cloud`, without WAL-only rows).
        public var old: FixtureStore.Options?
        /// The extra copies of the active store (nil: as `cloud`, without WAL-only rows).
        public var extra: FixtureStore.Options?

        public init() {}
    }

    /// Paths of a fixture.
    public struct Paths: Sendable {
        /// The download (`.xcappdata`).
        public let root: URL
        /// The ubiquity container (may not exist, see `CloudLocation`).
        public let cloudDir: URL
        public let peer: String
        public let account: String
        public var appDir: URL { root.appendingPathComponent("AppData/Library/Application Support", isDirectory: true) }
        public var logs: URL { cloudDir.appendingPathComponent("CloudLogs", isDirectory: true) }
        public var prefs: URL { root.appendingPathComponent("AppData/Library/Preferences/com.example.notes.plist") }
        public var localStore: URL { appDir.appendingPathComponent("UbiquityStore.sqlite") }
        /// The folders a test must see unchanged: the download and the ubiquity container.
        public var folders: [URL] { [root, cloudDir].filter { FileManager.default.fileExists(atPath: $0.path) } }
        /// The nominal URL the app passes for a cloud store (no store lives there on iOS 7+).
        public func nominalStore(_ uuid: String) -> URL { appDir.appendingPathComponent("CloudStore/\(uuid).sqlite") }
        /// Core Data's copy of a version-1 cloud store for a peer and account.
        public func cloudStore(_ uuid: String, peer: String? = nil, account: String? = nil) -> URL {
            appDir.appendingPathComponent(
                "CloudStore/CoreDataUbiquitySupport/\(peer ?? self.peer)/\(uuid)/\(account ?? self.account)/store/\(uuid).sqlite"
            )
        }
        /// The cache key a device writes for `StoreUUID` + `+`×version.
        public func cacheKey(version: Int, team: String = "ABCDE12345") -> String {
            "/private/var/mobile/Library/Mobile Documents/\(team)~com~example~notes/CloudLogs/StoreUUID"
                + String(repeating: "+", count: version)
        }
        public init(root: URL, cloudDir: URL, peer: String, account: String) {
            self.root = root
            self.cloudDir = cloudDir
            self.peer = peer
            self.account = account
        }
    }

    /// The paths `write(to:)` uses for `root` and `o`.
    public static func paths(_ root: URL, _ o: Options = Options()) -> Paths {
        let cloud: URL =
            switch o.cloudLocation {
            case .inside: root.appendingPathComponent("iCloud", isDirectory: true)
            case .beside, .none:
                root.deletingLastPathComponent().appendingPathComponent(
                    "Mobile Documents/\(o.team)~\(o.bundleID.replacingOccurrences(of: ".", with: "~"))",
                    isDirectory: true)
            }
        return Paths(root: root, cloudDir: cloud, peer: o.peer, account: o.account)
    }

    /// Writes the container at `root` (created if needed) and returns its paths.
    @discardableResult
    public static func write(to root: URL, _ o: Options = Options()) throws -> Paths {
        let paths = paths(root, o)
        let fm = FileManager.default
        try fm.createDirectory(at: paths.appDir.appendingPathComponent("CloudStore"), withIntermediateDirectories: true)
        try fm.createDirectory(at: paths.prefs.deletingLastPathComponent(), withIntermediateDirectories: true)
        try fm.createDirectory(at: root.appendingPathComponent("AppData/Documents"), withIntermediateDirectories: true)

        if o.localStore { try FixtureStore.write(to: paths.localStore, o.local) }
        func copy(_ uuid: String, peer: String, account: String, options: FixtureStore.Options) throws {
            let store = paths.cloudStore(uuid, peer: peer, account: account)
            try FixtureStore.write(to: store, options)
            let container = store.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "container")
            try fm.createDirectory(at: container, withIntermediateDirectories: true)
            try Data("bookkeeping".utf8).write(to: container.appendingPathComponent("ubiquity.plist"))
        }
        if o.activeStoreCopy { try copy(o.activeUUID, peer: o.peer, account: o.account, options: o.cloud) }
        for (index, extra) in o.extraCopies.enumerated() {
            var cloud = o.extra ?? o.cloud
            cloud.seed = UInt64(10 + index)
            cloud.walOnlyBooks = 0
            try copy(o.activeUUID, peer: extra.peer, account: extra.account, options: cloud)
        }
        if let old = o.oldUUID {
            var cloud = o.old ?? o.cloud
            cloud.walOnlyBooks = 0
            cloud.storeUUID = "99999999-8888-4777-A666-555555555555"
            try copy(old, peer: o.peer, account: o.account, options: cloud)
        }
        if o.nominalFile {
            var stray = o.local
            stray.storeUUID = "11111111-2222-4333-8444-555555555555"
            try FixtureStore.write(to: paths.nominalStore(o.activeUUID), stray)
        }
        if let v0 = o.ios6CopyUUID {
            let store = paths.appDir.appendingPathComponent(
                "CloudStore/CoreDataUbiquitySupport/\(o.peer)/UbiquityStore/\(o.account)/store/\(v0).sqlite")
            var cloud = o.cloud
            cloud.walOnlyBooks = 0
            try FixtureStore.write(to: store, cloud)
        }

        if o.cloudLocation != .none {
            try fm.createDirectory(at: paths.logs, withIntermediateDirectories: true)
            var logged: [(String, String)] = []
            if o.activeLogs { logged.append((o.activeUUID, o.activeUUID)) }
            if let old = o.oldUUID { logged.append((old, old)) }
            if let v0 = o.ios6UUID ?? o.ios6CopyUUID { logged.append((v0, "UbiquityStore")) }
            for (uuid, content) in logged {
                let peer = paths.logs.appendingPathComponent(
                    "\(uuid)/mobile.8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A/\(content)", isDirectory: true)
                try fm.createDirectory(at: peer.appendingPathComponent("receipts"), withIntermediateDirectories: true)
                try Data("opaque transaction log 1".utf8).write(to: peer.appendingPathComponent("0001.cdt"))
                try Data("opaque transaction log 2".utf8).write(to: peer.appendingPathComponent("0002.cdt"))
                try Data("receipt".utf8).write(to: peer.appendingPathComponent("receipts/0001.receipt"))
            }
            if let v0 = o.ios6UUID {
                let nosync = paths.cloudDir.appendingPathComponent("CloudStore.nosync/\(v0).sqlite")
                var cloud = o.cloud
                cloud.walOnlyBooks = 0
                try FixtureStore.write(to: nosync, cloud)
            }
            var markers = o.markers ?? ["StoreUUID+": o.activeUUID]
            if let corrupted = o.corruptedUUID { markers["CorruptedUUID+"] = corrupted }
            for (name, content) in markers {
                try Data(content.utf8).write(to: paths.logs.appendingPathComponent(name))
            }
        }

        var prefs: [String: Any] = ["NSLanguages": ["en"], "LastLaunchVersion": "2.4"]
        if let enabled = o.cloudEnabled { prefs["USMCloudEnabledKey"] = enabled }
        switch o.cache {
        case .none: break
        case .matching: prefs[paths.cacheKey(version: 1, team: o.team)] = o.activeUUID
        case let .stale(uuid): prefs[paths.cacheKey(version: 1, team: o.team)] = uuid
        case .otherVersion: prefs[paths.cacheKey(version: 0, team: o.team)] = o.activeUUID
        }
        if o.accountMap {
            prefs[o.activeUUID] = ["PFUbiquitySetupTokenAndIDArray": [[Data("identity-token".utf8), o.account]]]
        }
        let data = try PropertyListSerialization.data(
            fromPropertyList: prefs, format: o.xmlPreferences ? .xml : .binary, options: 0)
        try data.write(to: paths.prefs)
        return paths
    }
}

extension FixtureContainer {
    /// Writes a UIManagedDocument package (seed 004, coredata-format.md §4.1): `DocumentMetadata.plist`,
    /// `StoreContent/persistentStore` with its `-wal`/`-shm` (`StoreContent.nosync` for an iOS 5/6
    /// ubiquitous document), `AdditionalContent/`; with `ubiquityCopy`, the iOS 7 copy under
    /// `StoreContent/CoreDataUbiquitySupport/<peer>/<content>/<account>/store/persistentStore` instead.
    @discardableResult
    public static func writeDocument(
        at package: URL, nosync: Bool = false, ubiquityCopy: Bool = false,
        options: FixtureStore.Options = FixtureStore.Options()
    ) throws -> URL {
        let content = package.appendingPathComponent(nosync ? "StoreContent.nosync" : "StoreContent", isDirectory: true)
        let store =
            ubiquityCopy
            ? content.appendingPathComponent(
                "CoreDataUbiquitySupport/mobile~8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A/NotesDoc/7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E/store/persistentStore"
            )
            : content.appendingPathComponent("persistentStore")
        try FileManager.default.createDirectory(
            at: store.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FixtureStore.write(to: store, options)
        var metadata: [String: Any] = ["NSFileType": "com.example.notes.document"]
        if ubiquityCopy || nosync {
            metadata["NSPersistentStoreUbiquitousContentNameKey"] = "NotesDoc"
            metadata["NSPersistentStoreUbiquitousContentURLKey"] = "TransactionLogs"
        }
        try PropertyListSerialization.data(fromPropertyList: metadata, format: .xml, options: 0)
            .write(to: package.appendingPathComponent("DocumentMetadata.plist"))
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("AdditionalContent"), withIntermediateDirectories: true)
        try Data("thumbnail".utf8).write(to: package.appendingPathComponent("AdditionalContent/thumbnail.png"))
        return store
    }

    /// Writes Apple's own iOS 7 ubiquity folders for an app that uses Core Data's iCloud options
    /// without UbiquityStoreManager (seeds 001/002): `<dir>/CoreDataUbiquitySupport/<peer>/<content>/<account>/store/<file>`
    /// and `container/` beside `store/`, one per account (`local` for the local account).
    @discardableResult
    public static func writeAppleUbiquity(
        in dir: URL, contentName: String = "persistentStore_ICLOUD",
        accounts: [String] = ["80693193-0A2B-4C3D-8E4F-5A6B7C8D9E0F", "local"],
        peer: String = "mobile~8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A"
    ) throws -> [URL] {
        var stores: [URL] = []
        for (index, account) in accounts.enumerated() {
            let base = dir.appendingPathComponent(
                "CoreDataUbiquitySupport/\(peer)/\(contentName)/\(account)", isDirectory: true)
            let store = base.appendingPathComponent("store/\(contentName)")
            try FileManager.default.createDirectory(
                at: store.deletingLastPathComponent(), withIntermediateDirectories: true)
            var options = FixtureStore.Options()
            options.ubiquityMetadata = account != "local"
            options.seed = UInt64(20 + index)
            try FixtureStore.write(to: store, options)
            try FileManager.default.createDirectory(
                at: base.appendingPathComponent("container"), withIntermediateDirectories: true)
            try Data("bookkeeping".utf8).write(to: base.appendingPathComponent("container/ubiquity.plist"))
            stores.append(store)
        }
        return stores
    }
}
