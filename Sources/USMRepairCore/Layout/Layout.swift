import Foundation

/// An app's UbiquityStoreManager data as found on disk (usm-behaviour.md §1): the local store,
/// every copy of every cloud store where iOS 7+ Core Data really keeps it
/// (`CloudStore/CoreDataUbiquitySupport/<peer>/<content>/<cid>/store/`), iOS 6 stores in
/// `CloudStore.nosync/`, stray files at nominal URLs, the cloud content (`CloudLogs/<UUID>`), the
/// marker files, the preferences (iCloud on/off, the cached StoreUUID, Core Data's account maps),
/// leftover temporary stores, and the stores of the two other layouts of the seeds (Apple's own
/// ubiquity folders, UIManagedDocument packages). Discovery only lists folders and reads small
/// files; stores are read by `StoreInspector`.
public struct Layout: Sendable {
    /// Where a store's file set lies, which says what the app does with it.
    public enum Location: String, Sendable, Codable {
        /// `<app-dir>/<store-name>.sqlite`: the local store.
        case local
        /// Core Data's own copy of a cloud store (iOS 7+): `…/CoreDataUbiquitySupport/<peer>/<content>/<cid>/store/<file>`.
        case coreDataCopy = "core-data-copy"
        /// `<cloud-dir>/CloudStore.nosync/<UUID>.sqlite`: the real cloud store of an iOS 6 device.
        case nosync
        /// `<app-dir>/CloudStore/<UUID>.sqlite`: the URL the app passes to Core Data; on iOS 7+ no store
        /// lives there, and a file there is ignored at load and turns a later rebuild into a no-op.
        case nominal
        /// A store given with `--store`.
        case file
        /// The store of a UIManagedDocument package (`<doc>/StoreContent[.nosync]/persistentStore`).
        case document
        /// A store in Apple's own iOS 7 ubiquity folders of an app that does not use UbiquityStoreManager.
        case ubiquity
    }

    /// One copy of a store under `CoreDataUbiquitySupport`, with the folders that name it.
    public struct UbiquityCopy: Sendable, Encodable, Equatable {
        /// The peer folder: `mobile~<vendor UUID>` on a device, `<user>~sim<UUID>` on a simulator.
        public let peer: String
        /// The content name: the store UUID (cloud version 1), the store name (version 0), or the app's own.
        public let contentName: String
        /// Core Data's per-iCloud-account folder (a UUID), or `local` (no account).
        public let account: String
        /// True when the preferences' account map for the content name lists this folder, false when
        /// it lists others, nil when there is no map to compare with.
        @NullEncoded public var accountListed: Bool?
        /// The `store/` folder holding the file set.
        public let storeFolder: String
        /// Core Data's `container/` folder beside `store/`, when present.
        @NullEncoded public var containerFolder: String?
    }

    /// A store the layout knows of, with the folder it must stay inside.
    public struct StoreEntry: Sendable {
        public let files: StoreFileSet
        public let role: StoreReport.Role
        public let location: Location
        /// The USM store UUID for cloud stores.
        public let uuid: String?
        /// 0 or 1 for cloud stores.
        public let cloudVersion: Int?
        /// The folder the user named that holds this store.
        public let root: URL
        /// For copies under `CoreDataUbiquitySupport`.
        public let copy: UbiquityCopy?
        /// True for the copy the app opens for its store, false for another, nil when it cannot be known.
        public var opens: Bool?
        /// For a document's store: the package folder.
        public let document: String?
    }

    /// One cloud store UUID, with everything that refers to it.
    public struct CloudStore: Sendable, Encodable, Equatable {
        public let uuid: String
        /// 1 for a store named by its UUID (iOS 7), 0 for one of iOS 6 (content name = store name).
        public let cloudVersion: Int
        /// The main files of its copies on this device (Core Data copies, `CloudStore.nosync`).
        public let copies: [String]
        /// True when `CloudLogs/<UUID>` is present (the logs Core Data rebuilds a copy from).
        public let content: Bool
        /// The markers naming it (`StoreUUID+`, `CorruptedUUID+`...).
        public let markers: [String]
        /// True when a cached StoreUUID in the preferences names it.
        public let cached: Bool
    }

    /// The cloud content (transaction logs) of one store UUID: `CloudLogs/<UUID>/<peer>/<content name>/...`.
    public struct CloudContent: Sendable, Encodable, Equatable {
        public let uuid: String
        public let path: String
        /// Peer folder names (one per device that synced).
        public let peers: [String]
        /// Content-name folders found under the peers (the UUID for version 1, the store name for version 0).
        public let contentNames: [String]
        /// Regular files below the folder, and their total size.
        public let files: Int
        public let bytes: Int64
    }

    /// How the ubiquity container was found.
    public enum CloudSource: String, Sendable, Codable {
        /// `--cloud-dir`.
        case given
        /// Inside the folder `--container` names.
        case inside
        /// Beside the download, and it shares a peer folder or a store UUID with it.
        case beside
        /// Beside the download, sharing nothing with it: maybe another customer's; changing
        /// commands refuse it until `--cloud-dir` names it.
        case besideUnconfirmed = "beside-unconfirmed"
        /// Found in place for `--mac-app`, in `~/Library/Mobile Documents`.
        case macApp = "mac-app"
    }

    /// A temporary store UbiquityStoreManager leaves behind after a crash.
    public struct Leftover: Sendable, Encodable, Equatable {
        /// `MigrationSource` or `CopyMigrationStore`.
        public let kind: String
        public let path: String
        /// The members of its file set that exist (`-wal`, `-shm`... left by USM's main-file-only delete).
        public let files: [String]
    }

    /// A UIManagedDocument package.
    public struct Document: Sendable, Encodable, Equatable {
        public let path: String
        /// `StoreContent` or `StoreContent.nosync` (an iOS 5/6 ubiquitous document).
        public let storeContent: String
        /// True when `DocumentMetadata.plist` is present.
        public let metadata: Bool
        /// The ubiquitous content name `DocumentMetadata.plist` records, when it does.
        @NullEncoded public var contentName: String?
        /// True when `AdditionalContent/` is present.
        public let additionalContent: Bool
    }

    /// The names UbiquityStoreManager gives its temporary stores.
    public static let temporaryStoreNames = ["MigrationSource.sqlite", "CopyMigrationStore.sqlite"]
    /// The copy of the local store UbiquityStoreManager seeds a new cloud store from, beside it
    /// (usm-behaviour.md §1.2).
    public static let seedingCopyName = "CopyMigrationStore.sqlite"
    /// The folder Core Data keeps its iOS 7+ ubiquity copies in.
    public static let ubiquitySupportFolder = "CoreDataUbiquitySupport"

    public let options: LayoutOptions
    /// The folders actually used (after searching a container).
    public let appDirectory: URL?
    public let cloudDirectory: URL?
    /// How the ubiquity container was found, and whether it is confirmed to be this download's.
    public let cloudSource: CloudSource?
    public let preferencesPath: URL?
    /// The folder the app's preferences live in, also when no plist was found there (an
    /// interrupted operation may have moved it aside): one of the folders operations work in.
    public let preferencesFolder: URL?
    /// Why the preferences file found is not usable (not a plist dictionary, `USMCloudEnabledKey`
    /// not a boolean...): a changing command refuses it as bad input rather than skip it.
    public let preferencesError: USMError?
    /// Every store file set found: local first, then cloud copies by UUID, then documents and others.
    public let stores: [StoreEntry]
    /// Every cloud store UUID referred to by a copy, a file, logs, a marker or the cache.
    public let cloudStores: [CloudStore]
    public let cloudContent: [CloudContent]
    public let markers: [Marker]
    public let preferences: Preferences?
    public let leftovers: [Leftover]
    public let documents: [Document]
    /// Findings about the layout itself (markers, preferences, symlinks, leftovers, traps).
    public let problems: [Problem]
    /// The worst exit status the layout's own findings call for.
    public let exitStatus: ExitStatus
    /// For `--mac-app`: which folders were found in place, and how.
    public var macApp: MacApp? = nil
    /// This device's Core Data folders of the app's cloud stores, as discovery listed them:
    /// `<app>/CloudStore/CoreDataUbiquitySupport/<peer>/<content>` (planning reads no folder itself).
    public internal(set) var copyFolders: [URL] = []
    /// Every name at the top of the ubiquity container, hidden ones included, as discovery listed them.
    public internal(set) var cloudEntries: [String] = []

    /// The folders an operation on this layout works in, each with its private folder (`.usm-repair`,
    /// `.usm-repair.nosync` in the ubiquity container so that iCloud never uploads it): the app
    /// folder, the ubiquity container, the preferences folder. The one place they are named.
    public var planRoots: [Plan.Root] {
        if let store = options.store { return Self.roots(ofStore: store) }
        var roots: [Plan.Root] = []
        if let app = appDirectory { roots.append(.init(name: "app", path: app.path, privateFolder: ".usm-repair")) }
        if let cloud = cloudDirectory {
            roots.append(.init(name: "cloud", path: cloud.path, privateFolder: ".usm-repair.nosync"))
        }
        if let prefs = preferencesFolder, !roots.contains(where: { $0.path.pathKey == prefs.path.pathKey }) {
            roots.append(.init(name: "preferences", path: prefs.path, privateFolder: ".usm-repair"))
        }
        return roots
    }

    /// The folder `migrate-store` works in for a store (its destination's folder).
    public static func roots(ofStore store: URL) -> [Plan.Root] {
        [.folder(store.standardizedFileURL.deletingLastPathComponent())]
    }

    /// Every folder of the layout: the download searched, the app folder, the ubiquity container,
    /// the preferences folder. Snapshots (personal data) never go inside any of them: the
    /// download goes back onto the device, and the ubiquity container syncs to every device.
    public var folders: [URL] {
        [options.container, appDirectory, cloudDirectory, preferencesFolder].compactMap { $0 }
    }

    /// Whose data this is, in a word, for snapshot names: the Mac app's bundle ID, the download's
    /// folder name, the preferences' domain, else the app folder's or the ubiquity container's name.
    public var label: String? {
        if let macApp = options.macApp { return macApp }
        if let container = options.container { return container.lastPathComponent }
        if let store = options.store { return store.deletingPathExtension().lastPathComponent }
        if let document = options.document { return document.lastPathComponent }
        if let preferencesPath { return preferencesPath.deletingPathExtension().lastPathComponent }
        return (appDirectory ?? cloudDirectory).flatMap(Self.label(ofFolder:))
    }

    /// A folder's name for a label, skipping the names every app has (`…/<App>/Library/Application
    /// Support` is `<App>`).
    public static func label(ofFolder folder: URL) -> String? {
        var dir = folder.standardizedFileURL
        while ["Application Support", "Library", "AppData", "Data", "Preferences"].contains(dir.lastPathComponent),
            dir.path != "/"
        {
            dir = dir.deletingLastPathComponent()
        }
        return dir.path == "/" ? nil : dir.lastPathComponent
    }

    /// True when the layout is a single `--store` or `--document`, not an app's data.
    public var isSingleStore: Bool { options.store != nil || options.document != nil }

    /// The marker version the app picks (usm-behaviour.md §1.5, `ver(nil)`): the highest version
    /// up to `D` whose StoreUUID marker exists, whatever it holds; `D` when none does. Nil without
    /// the ubiquity container.
    public var activeVersion: Int? {
        guard cloudDirectory != nil else { return nil }
        return storeMarkers(upTo: Marker.desiredVersion).first?.cloudVersion ?? Marker.desiredVersion
    }

    /// The StoreUUID marker the app reads (`F(V)`), valid or not.
    public var activeMarker: Marker? {
        guard let version = activeVersion else { return nil }
        return markers.first { $0.kind == .storeUUID && $0.cloudVersion == version }
    }

    /// The corruption marker the app reads (`F'(V)`), valid or not.
    public var corruptionMarker: Marker? {
        guard let version = activeVersion else { return nil }
        return markers.first { $0.kind == .corruptedUUID && $0.cloudVersion == version }
    }

    /// StoreUUID markers of versions up to `version`, highest first.
    func storeMarkers(upTo version: Int) -> [Marker] {
        markers.filter { $0.kind == .storeUUID && $0.cloudVersion <= version }.sorted {
            $0.cloudVersion > $1.cloudVersion
        }
    }

    /// The cached StoreUUIDs under the key of `version` (one per container path found).
    public func cachedStoreUUIDs(version: Int) -> [Preferences.CachedStoreUUID] {
        preferences?.cachedStoreUUIDs.filter { $0.cloudVersion == version } ?? []
    }

    /// The cached StoreUUIDs the app on the device this layout came from reads under the key of
    /// `version`: all of them, or, when they disagree across container paths and the files say
    /// which device this is (`ownContainerPath`), only that device's own (`ownPath` set).
    public func deviceCachedStoreUUIDs(version: Int) -> (cached: [Preferences.CachedStoreUUID], ownPath: String?) {
        let cached = cachedStoreUUIDs(version: version)
        let values = Set(cached.compactMap(\.value).filter { !$0.isEmpty })
        guard values.count > 1, let own = ownContainerPath(among: cached.map(\.containerPath)) else {
            return (cached, nil)
        }
        return (cached.filter { $0.containerPath == own }, own)
    }

    /// The ubiquity container path (as a preferences cache key spells it) of the device this layout
    /// was taken from, among `paths`, when the files say: an iOS download (its Core Data copies
    /// sit in `mobile~…` peer folders, or it is an `.xcappdata`) reads the key of its iOS path
    /// (`/private/var/mobile/…` or `/var/mobile/…`); a Mac's folders the key under `/Users/`.
    public func ownContainerPath(among paths: [String]) -> String? {
        let unique = Array(Set(paths))
        let iOS =
            stores.contains { $0.copy?.peer.hasPrefix("mobile~") == true }
            || options.container.map {
                $0.pathExtension == "xcappdata" || FileStatus.lookup($0.appendingPathComponent("AppData").path) != nil
            } == true
        let matching = unique.filter { path in
            let device = path.hasPrefix("/private/var/mobile/") || path.hasPrefix("/var/mobile/")
            return iOS ? device : path.hasPrefix("/Users/")
        }
        // /var is a link to /private/var on iOS: both spellings are the same container.
        let canonical = Set(matching.map { $0.hasPrefix("/var/") ? "/private" + $0 : $0 })
        guard canonical.count == 1 else { return nil }
        return matching.first { $0.hasPrefix("/private/") } ?? matching.first
    }

    /// The cloud store with `uuid`, if the layout refers to it.
    public func cloudStore(_ uuid: String) -> CloudStore? { cloudStores.first { $0.uuid == uuid } }

    /// The copies of a cloud store on this device (Core Data copies, and `CloudStore.nosync` files).
    public func copies(of uuid: String) -> [StoreEntry] {
        stores.filter { $0.uuid == uuid && ($0.location == .coreDataCopy || $0.location == .nosync) }
    }
}
