import Foundation

/// An app's UbiquityStoreManager data as found on disk: the local store, the cloud stores of cloud
/// versions 0 and 1, the cloud content (`CloudLogs/<UUID>`), the marker files, the preferences and
/// any leftover temporary stores. Discovery only lists and reads small files; stores are read by
/// `StoreInspector`.
public struct Layout: Sendable {
    /// A store the layout knows of, with the folder it must stay inside.
    public struct StoreEntry: Sendable {
        public let files: StoreFileSet
        public let role: StoreReport.Role
        /// The USM store UUID for cloud stores (file name without `.sqlite`).
        public let uuid: String?
        /// 0 or 1 for cloud stores.
        public let cloudVersion: Int?
        /// The folder the user named that holds this store.
        public let root: URL
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

    /// A temporary store UbiquityStoreManager leaves behind after a crash.
    public struct Leftover: Sendable, Encodable, Equatable {
        /// `MigrationSource` or `CopyMigrationStore`.
        public let kind: String
        public let path: String
    }

    /// The names UbiquityStoreManager gives its temporary stores.
    public static let temporaryStoreNames = ["MigrationSource.sqlite", "CopyMigrationStore.sqlite"]

    public let options: LayoutOptions
    /// The folders actually used (after searching a container).
    public let appDirectory: URL?
    public let cloudDirectory: URL?
    public let preferencesPath: URL?
    /// Every store found or expected, local first, then cloud stores by version and UUID.
    public let stores: [StoreEntry]
    public let cloudContent: [CloudContent]
    public let markers: [Marker]
    public let preferences: Preferences?
    public let leftovers: [Leftover]
    /// Findings about the layout itself (markers, preferences, symlinks, leftovers).
    public let problems: [Problem]
    /// The worst exit status the layout's own findings call for.
    public let exitStatus: ExitStatus

    /// The active store: the UUID named by the highest-version valid `StoreUUID` marker.
    public var activeMarker: Marker? { Layout.activeMarker(in: markers) }

    /// The highest-version `StoreUUID` marker, when it is valid (USM counts versions down).
    static func activeMarker(in markers: [Marker]) -> Marker? {
        for version in Marker.versions {
            if let m = markers.first(where: { $0.kind == .storeUUID && $0.cloudVersion == version }) { return m.valid ? m : nil }
        }
        return nil
    }

    /// The corruption marker that matters: the active version's, else any valid one.
    public var corruptionMarker: Marker? {
        let corrupted = markers.filter { $0.kind == .corruptedUUID && $0.valid }
        if let active = activeMarker, let same = corrupted.first(where: { $0.cloudVersion == active.cloudVersion }) { return same }
        return corrupted.first
    }
}
