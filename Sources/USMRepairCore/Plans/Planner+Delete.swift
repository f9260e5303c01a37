import Foundation

extension Planner {
    /// `delete container`: usm-behaviour.md §5. Everything in the ubiquity container goes (markers,
    /// logs, other files), this device's copies of UbiquityStoreManager's stores, stray nominal
    /// files and leftovers, the cached StoreUUIDs and Core Data's account maps of those stores.
    /// Next launch: a new cloud store seeded from the local store (E2; E3 without one).
    /// `localOnly`: the container stays (it cannot be evicted offline); this device's copies and
    /// the cache go, so Core Data rebuilds the active store from its logs (E6).
    func deleteContainer(_ b: inout PlanBuilder, localOnly: Bool) throws {
        let uuids = Set(layout.cloudStores.map(\.uuid))
        let contentNames = uuids.union([layout.options.storeName])
        if !localOnly {
            let cloud = try requireCloud("delete container", "its contents are what it removes")
            for name in layout.cloudEntries where name != ".usm-repair.nosync" {
                try b.retire(
                    cloud.appendingPathComponent(name).path,
                    "everything in the ubiquity container goes, markers and logs included")
            }
        }
        for folder in copyFolders(contentNames: contentNames) {
            try b.retire(folder.path, "this device's copy of a store of the container (Core Data would reopen it)")
        }
        if !localOnly {
            for store in layout.stores where store.location == .nominal || store.location == .nosync {
                try b.retireFileSet(
                    store.files, "a stray store file of the container's stores (\(store.location.rawValue))")
            }
            for leftover in layout.leftovers {
                try b.retireFileSet(
                    StoreFileSet(main: URL(fileURLWithPath: leftover.path)), "a leftover temporary store")
            }
        }
        try b.editPreferences(
            PreferencesEdit(
                removeCachedStoreUUIDs: true, removeAccountMaps: localOnly ? [] : Array(contentNames).sorted()),
            "a cached StoreUUID would make the app load a store that is gone (E5)")
        guard !b.isEmpty else { return }
        if !localOnly {
            try checkpointLocalForSeeding(&b)
            b.notes.append(Self.otherDevicesOnMarkerRemoval)
            b.notes.append(
                "the deletion reaches every device through iCloud: their copies of the removed stores stay on them until their apps reload"
            )
            b.notes.append(
                "the new cloud store is seeded from the local store only if the app's delegate does not veto it (shouldMigrate); with a veto or without a local store it starts empty (E3)"
            )
        } else {
            b.notes.append(
                "the container is left as it is (an offline tool cannot evict it); Core Data rebuilds this device's copy of the active store from its logs at the next launch (E6)"
            )
        }
    }

    /// `delete cloud-store [--uuid U] [--local-only]`.
    /// `localOnly`: this device's copy of U (its `store/` file set; Core Data's `container/` stays, as
    /// its own rebuild keeps it), or the iOS 6 file; markers and logs stay: the next launch rebuilds
    /// it from `CloudLogs/U` (E6; empty without logs, E7).
    /// Otherwise: `CloudLogs/U`, every marker naming U, every copy of U, the nominal file, the cache
    /// and U's account map. When U was active, the next launch seeds a new store from the local store.
    func deleteCloudStore(
        _ b: inout PlanBuilder, uuid: String?, localOnly: Bool, copy: CopyChoice, withOlderMarkers: Bool
    ) throws {
        guard let uuid = try targetUUID(named: uuid) else {
            // With the container at hand, no marker and no cache means no active store: the end
            // state of deleting it (a second run). Without the container, the marker cannot be read.
            guard layout.cloudDirectory != nil else {
                throw USMError.preconditionFailed(
                    "no active cloud store is known (no cached StoreUUID, and no ubiquity container to read the marker from); name the store with --uuid or give --cloud-dir"
                )
            }
            b.notes.append(
                "no active cloud store is known (no StoreUUID marker, no cached StoreUUID): nothing to delete; name another store with --uuid"
            )
            return
        }
        guard Marker.isValidUUID(uuid) else { throw USMError.usage("--uuid '\(uuid)' is not a store UUID") }
        let active = uuid == activeUUID
        if localOnly {
            // Nothing of it on this device (a second run, or a store this device never opened):
            // nothing to delete, as long as the store is known at all.
            if layout.copies(of: uuid).isEmpty {
                b.notes.append(
                    layout.cloudStore(uuid) == nil
                        ? "no cloud store \(uuid) is known here (no copy, logs, marker or cache names it): nothing to delete"
                        : "this device holds no copy of \(uuid): nothing to delete")
                return
            }
            let entry = try chooseCopy(of: uuid, copy)
            if entry.location == .nosync {
                _ = try requireCloud(
                    "delete cloud-store --local-only", "the iOS 6 store lives in CloudStore.nosync there")
            }
            try b.retireFileSet(entry.files, "this device's copy of \(uuid): Core Data rebuilds it from the logs")
            let hasLogs = layout.cloudContent.contains { $0.uuid == uuid }
            b.notes.append(
                hasLogs
                    ? "Core Data rebuilds the copy from CloudLogs/\(uuid) when the app next opens the store; it is empty until the import finishes"
                    : "there are no logs for \(uuid) here: the store will open EMPTY (E7) unless its logs arrive from iCloud first"
            )
            return
        }
        let cloud = try requireCloud("delete cloud-store", "its logs and markers live there")
        guard
            layout.cloudStore(uuid) != nil
                || layout.cachedStoreUUIDs(version: Marker.desiredVersion).contains(where: { $0.value == uuid })
                || layout.preferences?.accountMaps.contains(where: { $0.contentName == uuid }) == true
        else {
            // Nothing names it any more (a second run): the end state holds.
            b.notes.append(
                "no cloud store \(uuid) is known here (no copy, logs, marker or cache names it): nothing to delete")
            return
        }
        try b.retire(
            cloud.appendingPathComponent("CloudLogs/\(uuid)").path, "the store's transaction logs, for every device")
        for marker in storeMarkers + corruptionMarkers where marker.raw == uuid {
            try b.retire(marker.path, "\(marker.name) names the removed store")
        }
        if active, withOlderMarkers {
            for marker in storeMarkers where marker.cloudVersion < (layout.activeVersion ?? Marker.desiredVersion) {
                try b.retire(
                    marker.path, "\(marker.name), of an older cloud version, would otherwise be loaded instead (E8)")
            }
        }
        for folder in copyFolders(contentNames: [uuid]) {
            try b.retire(folder.path, "this device's copies of the removed store")
        }
        for store in layout.stores
        where store.uuid == uuid
            && (store.location == .nominal || store.location == .nosync
                || (store.location == .coreDataCopy && store.cloudVersion == 0))
        {
            try b.retireFileSet(store.files, "a file of the removed store (\(store.location.rawValue))")
        }
        // The active store's cache goes with it; for another store, only cache keys naming it (the
        // active store's cache stays: the app keeps loading it).
        try b.editPreferences(
            PreferencesEdit(
                removeCachedStoreUUIDs: active, removeAccountMaps: [uuid], removeCachedValues: active ? [] : [uuid]),
            "a cached StoreUUID naming the removed store would make the app load it (E5)")
        if active {
            try checkpointLocalForSeeding(&b)
            b.notes.append(Self.otherDevicesOnMarkerRemoval)
            if !withOlderMarkers,
                storeMarkers.contains(where: { $0.cloudVersion < (layout.activeVersion ?? 1) && $0.raw != uuid })
            {
                b.notes.append(
                    "an older StoreUUID marker remains: the app loads that iOS 6 store instead of seeding a new one (E8); --with-older-markers removes it too, which stops iOS 6 devices from syncing"
                )
            }
        }
    }

    /// `delete local-store`: the whole file set of the local store. With iCloud on the next launch is
    /// unaffected, but a later seeding starts empty (E3); with iCloud off the app creates an empty store.
    func deleteLocalStore(_ b: inout PlanBuilder) throws {
        guard let local else { throw USMError.preconditionFailed("no app folder was given (--app-dir or --container)") }
        try b.retireFileSet(local.files, "the local store, its sidecars and external data")
        guard !b.isEmpty else { return }
        b.notes.append(
            report.cloudEnabled == true
                ? "iCloud is on: the next launch does not use the local store, but any later seeding of a new cloud store starts empty (E3)"
                : "iCloud is off: the app creates a new, empty local store at its next launch")
    }
}
