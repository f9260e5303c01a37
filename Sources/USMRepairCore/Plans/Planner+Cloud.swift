import Foundation

extension Planner {
    /// `migrate cloud-to-local`: the local store replaced by (or merged with) the active cloud
    /// store's data from this device's copy, iCloud metadata stripped, WAL merged; iCloud off.
    /// The cloud side is untouched. Next launch: the local store (E1).
    ///
    /// The data first: a local store holding objects the cloud store lacks is not replaced without
    /// `--replace` (the merge route is offered); a merge of objects the local store already holds
    /// is nothing to do, and one that would duplicate some of them needs `--allow-duplicates`; a
    /// local store that already holds this cloud store's data (its provenance says so) is left as it is.
    ///
    /// A damaged copy is refused, naming `--salvage`; with it (`salvage`), the copy is read by
    /// salvage's own reader and the strategy builds from what it could read (the copy is not
    /// changed), counted in the ledger before anything is written.
    func migrateCloudToLocal(
        _ b: inout PlanBuilder, uuid: String?, strategy choice: StrategyChoice, merge: Bool, copy: CopyChoice,
        salvage: SalvageChoice? = nil
    ) throws {
        guard let local else { throw USMError.preconditionFailed("no app folder was given (--app-dir or --container)") }
        let source = try activeCopy(uuid, copy)
        let salvaged = try salvageIfDamaged(
            source, label: "copy of cloud store \(source.uuid ?? "?") on this device", choice: salvage,
            retry: .migrateCloudToLocal(
                uuid: uuid, strategy: choice, merge: merge, copy: copy, salvage: SalvageChoice()),
            why: "it cannot be read as a healthy store", b: &b)
        defer { salvaged?.remove() }
        if salvaged == nil { try requireHealthy(source) }
        var strategy = try strategies.resolve(
            choice, defaultID: StrategyChoice.appDefault(for: source, merge: merge), merge: merge)
        if merge, consent.allowDuplicates { strategy.allowDuplicates = true }
        let label = "cloud store \(source.uuid ?? "?")"
        // A merge moves the cloud objects' keys: the mirroring rows naming them cannot follow.
        let mirrored = (salvaged?.inspected.entities ?? reports[source.files.main.path]?.entities ?? [])
            .filter { $0.system && ($0.table ?? "").uppercased().hasPrefix("ANSCK") && $0.rows > 0 }
            .map { (table: $0.table ?? $0.name, rows: $0.rows) }
        if merge, localExists, strategy.dropCloudKit != true, !mirrored.isEmpty {
            throw EntityCopy.cloudKitRefusal(
                mirrored, why: "in a merge the objects' keys move, so these rows cannot come along")
        }
        // A refusal's merge route reads the same damaged copy, so it names the copy and --salvage too
        // (not the strategy: a merge takes its own default).
        let route =
            salvaged == nil
            ? "migrate cloud-to-local"
            : Maintenance.migrateCloudToLocal(
                uuid: uuid, strategy: StrategyChoice(), merge: false, copy: copy, salvage: salvage
            ).commandLine()
        if let expected = try incoming(
            from: source, label: label, strategy: strategy, merge: merge,
            command: route, salvaged: salvaged, b: &b)
        {
            try b.buildLocal(
                from: source.files, local: local.files, strategy: strategy, merge: merge && localExists,
                expected: expected, sourceLabel: label,
                salvage: salvaged.map {
                    (
                        Plan.SalvageSource(schemaFrom: salvage?.schemaFrom, keepIdentity: false),
                        $0.ledger(counted: counts(source)?.total)
                    )
                },
                "the cloud store's data\(salvaged == nil ? "" : " (every row of its damaged copy salvage's reader can read)") into a new local store (\(strategy.id ?? "")\(merge && localExists ? ", merged with the old local store" : "")), its iCloud metadata stripped"
            )
        }
        try b.editPreferences(PreferencesEdit(cloudEnabled: false), "iCloud off: the app opens the local store (E1)")
        if !b.isEmpty {
            b.notes.append("the cloud store, its logs and markers stay as they are; other devices are not affected")
        }
    }

    /// Decides whether the data of `source` must move into the local store, and what the local
    /// store holds after: nil when it already holds that data (nothing to build). Refuses the
    /// loss or the duplication the user did not allow (exit 8, naming the flag). `salvaged`: the
    /// damaged source's salvaged copy (`--salvage`), whose objects are the ones that move.
    func incoming(
        from source: Layout.StoreEntry, label: String, strategy: StrategyChoice, merge: Bool, command: String,
        salvaged: SalvageSeed? = nil, b: inout PlanBuilder
    ) throws -> Ledger.Counts?? {
        let sourceCounts = salvaged.map(\.counts) ?? counts(source)
        let description = try strategies.registry.description(of: strategy.resolvedID())
        let keepsNothing = description.rows == .none
        func expectedAfterReplace() -> Ledger.Counts? {
            keepsNothing
                ? Ledger.Counts([:])
                : description.rows == .reported
                    ? nil
                    : sourceCounts
        }
        guard let local, localExists else { return .some(expectedAfterReplace()) }
        let localCounts = counts(local)
        guard reports[local.files.main.path]?.health == .ok else {
            // A damaged local store cannot be compared: replacing it is the user's call.
            if !consent.replace || merge {
                throw USMError.preconditionFailed(
                    "the local store \(local.files.main.path) is \(reports[local.files.main.path]?.health.rawValue ?? "unreadable"): its objects cannot be compared with the \(label)'s\(merge ? ", so nothing can be merged into it" : "")\(merge ? "" : "; --replace replaces it (it stays in the snapshot; usm-repair salvage can take its readable rows out)")"
                )
            }
            return .some(expectedAfterReplace())
        }
        // Objects are matched by identity only for a merge (the only reader of `matchedInA`).
        let comparison = try StoreComparison.compare(local.files, salvaged?.files ?? source.files, matching: merge)
        // The local store already holds this very data: a second run has nothing to do.
        if let done = comparison.provenanceA.last(where: {
            $0.sourceDigest == comparison.digestB
                && ($0.sourceStoreUUID == nil || $0.sourceStoreUUID == comparison.storeUUIDB)
        }) {
            b.notes.append(
                "the local store already holds the data of \(label) as it is now (\(done.operation) on \(done.date), recorded in its \(Provenance.metadataKey)): it is left as it is"
            )
            return nil
        }
        if merge {
            // Models that differ where an entity-by-entity merge cannot follow: refused now, dry
            // run and run alike, before any snapshot.
            if let problem = comparison.mergeProblem, strategy.resolvedID() == "copy-entities" {
                throw USMError.schemaMismatch(
                    path: local.files.main.path,
                    detail: "the models of the local store and \(label) differ: \(problem); nothing can be merged")
            }
            let total = comparison.totalB
            if total == 0 {
                b.notes.append("\(label) holds no objects: nothing to merge")
                return nil
            }
            if (consent.allowDuplicates ? comparison.duplicateCount : comparison.matchedCount) >= total {
                b.notes.append("every object of \(label) is already in the local store: nothing to merge")
                return nil
            }
            // Objects already in the local store (same identity) are matched, not copied twice.
            if comparison.matchedCount > 0, !consent.allowDuplicates {
                b.notes.append(
                    "\(comparison.matchedCount) of the \(total) objects of \(label) are already in the local store (\(Self.list(comparison.matchedInA))): they are not copied again, their relationships are joined to the local objects (--allow-duplicates copies them anyway)"
                )
            }
            if !consent.allowDuplicates { b.matched[local.files.main.path] = comparison.matchedInA }
            var after = localCounts?.entities ?? [:]
            for (name, n) in sourceCounts?.entities ?? [:] {
                after[name, default: 0] += n - (consent.allowDuplicates ? 0 : (comparison.matchedInA[name] ?? 0))
            }
            return .some(description.rows == .reported ? nil : Ledger.Counts(after))
        }
        let localTotal = localCounts?.total ?? 0
        if keepsNothing, localTotal > 0, !consent.replace {
            throw USMError.preconditionFailed(
                "--strategy \(strategy.id ?? "none") moves no objects: it would replace the local store's \(localTotal) objects with none; --replace does it anyway (the old store stays in the snapshot)"
            )
        }
        if comparison.lostCount > 0, !consent.replace {
            throw USMError.preconditionFailed(
                "the local store holds \(comparison.lostCount) objects \(label) lacks (\(Self.list(comparison.missingFromB))): replacing it would lose them (they would be only in the snapshot). Keep them with usm-repair \(command) --merge \(layout.options.commandLineFlags), or replace the local store anyway with --replace"
            )
        }
        if comparison.lostCount > 0 || (keepsNothing && localTotal > 0) {
            b.notes.append(
                "the local store's \(comparison.lostCount) objects that \(label) lacks are replaced (--replace): they are only in the snapshot"
            )
        }
        return .some(expectedAfterReplace())
    }

    /// `migrate local-to-cloud`, `rebuild --from local`: the local store checkpointed; every
    /// StoreUUID and CorruptedUUID marker and every cached StoreUUID removed; iCloud on; the old
    /// store's copies and logs removed unless `keepOld`. Next launch: a new cloud store seeded from
    /// the local store (E2). A cloud store cannot be built offline: the app builds it.
    ///
    /// The data first: an active cloud store holding objects the local store lacks is not
    /// abandoned without `--discard-cloud` (the app would stop showing them); the refusal names the
    /// route that keeps them (`migrate cloud-to-local --merge`, then `rebuild --from local`).
    ///
    /// A damaged local store is refused, naming `--salvage`; with it (`salvage`), the local store
    /// is replaced by a store built from every row salvage's reader can read of it (the damaged
    /// file set goes into the snapshot), counted in the ledger before anything is written.
    func rebuildFromLocal(
        _ b: inout PlanBuilder, keepOld: Bool, withOlderMarkers: Bool, asMigrate: Bool = false,
        salvage: SalvageChoice? = nil
    ) throws {
        let cloud = try requireCloud("rebuild --from local", "its markers decide what the app does")
        // A malformed active marker names no store: which store the local store would abandon
        // cannot be known, so the data-first check cannot run (bad input, exit 2; nothing changed).
        _ = try targetUUID(named: nil)
        guard let local, localExists else {
            throw USMError.preconditionFailed("there is no healthy local store to seed the new cloud store from")
        }
        let salvaged = try salvageIfDamaged(
            local, label: "local store", choice: salvage,
            retry: .rebuildFromLocal(
                keepOld: keepOld, withOlderMarkers: withOlderMarkers, asMigrate: asMigrate,
                salvage: SalvageChoice()),
            why: "the app would seed the new cloud store from it as it is, or fail to open it", b: &b)
        defer { salvaged?.remove() }
        guard salvaged != nil || reports[local.files.main.path]?.health == .ok else {
            throw USMError.preconditionFailed("there is no healthy local store to seed the new cloud store from")
        }
        try refuseAbandoning(local: local, files: salvaged?.files ?? local.files)
        try clearCloudSide(&b, cloud: cloud, keepOld: keepOld, withOlderMarkers: withOlderMarkers)
        if let salvaged {
            try b.buildLocal(
                from: local.files, local: local.files, strategy: StrategyChoice(id: "ios"), merge: false,
                expected: salvaged.counts, sourceLabel: "the damaged local store",
                salvage: (
                    Plan.SalvageSource(schemaFrom: salvage?.schemaFrom, keepIdentity: true),
                    salvaged.ledger(counted: counts(local)?.total)
                ),
                "every row of the damaged local store that can be read, salvaged into a private store and made consistent, then staged and verified as a whole store (ios): the seed of the new cloud store, with no -wal"
            )
        } else {
            try b.checkpointLocal(
                local.files,
                "the app seeds the new cloud store from the local store's main file only: its WAL is merged into it first"
            )
        }
        try b.editPreferences(
            PreferencesEdit(cloudEnabled: true, removeCachedStoreUUIDs: true),
            "iCloud on, and no cached StoreUUID: the app makes a new store and seeds it from the local store (E2)")
        guard !b.isEmpty else { return }
        b.notes.append(
            "the app seeds the new store only if its delegate does not veto it (shouldMigrate); with a veto the new store starts empty (E3)"
        )
        b.notes.append(Self.otherDevicesOnMarkerRemoval)
    }

    /// Refuses to leave behind an active cloud store whose objects the local store lacks (the app
    /// would seed a new store from the local store and never show them again), unless `--discard-cloud`.
    /// `files`: the local store's data to compare (its salvaged copy with `--salvage`).
    func refuseAbandoning(local: Layout.StoreEntry, files: StoreFileSet) throws {
        guard let active = activeUUID, !consent.discardCloud else { return }
        let copies = layout.copies(of: active).filter { $0.opens != false }
        guard let copy = copies.first else {
            if layout.cloudContent.contains(where: { $0.uuid == active }) {
                throw USMError.preconditionFailed(
                    "the active cloud store \(active) has no copy on this device, only its logs: its objects cannot be compared with the local store's, and the app would stop showing them; --discard-cloud proceeds anyway"
                )
            }
            return
        }
        guard reports[copy.files.main.path]?.health == .ok else {
            throw USMError.preconditionFailed(
                "this device's copy of the active cloud store \(active) is \(reports[copy.files.main.path]?.health.rawValue ?? "unreadable"): its objects cannot be compared with the local store's; --discard-cloud proceeds anyway"
            )
        }
        let comparison = try StoreComparison.compare(copy.files, files, matching: false)
        guard comparison.lostCount > 0 else { return }
        let flags = layout.options.commandLineFlags
        if files.main.path != local.files.main.path {
            // The local store is damaged: nothing can be merged into it before it is salvaged, so
            // the route that keeps the cloud's objects salvages it first, keeping the old store.
            throw USMError.preconditionFailed(
                "the active cloud store \(active) holds \(comparison.lostCount) objects the salvaged local store lacks (\(Self.list(comparison.missingFromB))): the app would seed a new cloud store from the salvaged local store and stop showing them. To keep them, salvage with the old store kept (usm-repair rebuild --from local --salvage --discard-cloud --keep-old \(flags)), bring them in (usm-repair migrate cloud-to-local --uuid \(active) --merge \(flags)), then usm-repair rebuild --from local \(flags); or abandon them with --discard-cloud"
            )
        }
        throw USMError.preconditionFailed(
            "the active cloud store \(active) holds \(comparison.lostCount) objects the local store lacks (\(Self.list(comparison.missingFromB))): the app would seed a new cloud store from the local store and stop showing them. Bring them into the local store first (usm-repair migrate cloud-to-local --merge \(flags), then usm-repair rebuild --from local \(flags)), or abandon them with --discard-cloud"
        )
    }

    /// `rebuild --from cloud`: the active store's data migrated into the local store (the old one is
    /// in the snapshot), then as `--from local`. Next launch: a new cloud store holding the cloud data.
    /// With `merge` (`--merge`), the cloud store's objects are merged into the local store as
    /// `migrate cloud-to-local --merge` does (objects already there matched, not copied twice), and
    /// the new cloud store is seeded from the result: the local store's own objects stay too.
    func rebuildFromCloud(
        _ b: inout PlanBuilder, strategy: StrategyChoice, copy: CopyChoice, keepOld: Bool, withOlderMarkers: Bool,
        merge: Bool = false
    ) throws {
        let cloud = try requireCloud("rebuild --from cloud", "its markers decide what the app does")
        guard let local else { throw USMError.preconditionFailed("no app folder was given (--app-dir or --container)") }
        if activeUUID == nil, storeMarkers.isEmpty, layout.preferences?.cloudEnabled == true, localExists {
            // The end state of a rebuild: no active store, iCloud on: the app seeds a new cloud
            // store from the local store (a second run has nothing to do).
            b.notes.append(
                "no active cloud store is known and iCloud is on: the app already seeds a new cloud store from the local store at its next launch (E2)"
            )
            return
        }
        let source = try healthyActiveCopy(nil, copy)
        var strategy = try strategies.resolve(
            strategy, defaultID: StrategyChoice.appDefault(for: source, merge: merge), merge: merge)
        if merge, consent.allowDuplicates { strategy.allowDuplicates = true }
        let label = "cloud store \(source.uuid ?? "?")"
        if merge, localExists, strategy.dropCloudKit != true {
            let mirrored = (reports[source.files.main.path]?.entities ?? [])
                .filter { $0.system && ($0.table ?? "").uppercased().hasPrefix("ANSCK") && $0.rows > 0 }
                .map { (table: $0.table ?? $0.name, rows: $0.rows) }
            if !mirrored.isEmpty {
                throw EntityCopy.cloudKitRefusal(
                    mirrored, why: "in a merge the objects' keys move, so these rows cannot come along")
            }
        }
        if let expected = try incoming(
            from: source, label: label, strategy: strategy, merge: merge, command: "rebuild --from cloud", b: &b)
        {
            let merging = merge && localExists
            try b.buildLocal(
                from: source.files, local: local.files, strategy: strategy, merge: merging, expected: expected,
                sourceLabel: label,
                merging
                    ? "the active cloud store's data merged into the local store (\(strategy.id ?? ""), objects already there matched, not copied twice), its iCloud metadata stripped: the seed of the new cloud store"
                    : "the active cloud store's data into a new local store (\(strategy.id ?? "")), its iCloud metadata stripped: the seed of the new cloud store"
            )
        } else {
            try b.checkpointLocal(
                local.files,
                "the app seeds the new cloud store from the local store's main file only: its WAL is merged into it first"
            )
        }
        try clearCloudSide(&b, cloud: cloud, keepOld: keepOld, withOlderMarkers: withOlderMarkers)
        try b.editPreferences(
            PreferencesEdit(cloudEnabled: true, removeCachedStoreUUIDs: true),
            "iCloud on, and no cached StoreUUID: the app makes a new store and seeds it from the local store (E2)")
        guard !b.isEmpty else { return }
        b.notes.append(
            "the app seeds the new store only if its delegate does not veto it (shouldMigrate); with a veto the new store starts empty (E3)"
        )
        b.notes.append(Self.otherDevicesOnMarkerRemoval)
    }

    /// The markers, and the old store's logs and copies unless kept.
    private func clearCloudSide(_ b: inout PlanBuilder, cloud: URL, keepOld: Bool, withOlderMarkers: Bool) throws {
        let version = layout.activeVersion ?? Marker.desiredVersion
        for marker in storeMarkers where marker.cloudVersion >= version || withOlderMarkers {
            try b.retire(marker.path, "without a StoreUUID the app makes a new store at its next launch")
        }
        if !withOlderMarkers, storeMarkers.contains(where: { $0.cloudVersion < version }) {
            b.notes.append(
                "an older StoreUUID marker remains: the app would load that iOS 6 store instead of seeding a new one (E8); --with-older-markers removes it too, which stops iOS 6 devices from syncing"
            )
        }
        for marker in corruptionMarkers {
            try b.retire(marker.path, "a corruption marker would make healthy devices rebuild the old store")
        }
        if !keepOld, let old = activeUUID {
            try b.retire(
                cloud.appendingPathComponent("CloudLogs/\(old)").path, "the old store's logs (--keep-old keeps them)")
            for folder in copyFolders(contentNames: [old]) {
                try b.retire(folder.path, "this device's copies of the old store (--keep-old keeps them)")
            }
            for store in layout.stores where store.uuid == old && store.location == .nominal {
                try b.retireFileSet(store.files, "a stray file at the old store's nominal URL")
            }
        }
    }

    /// `rebuild --from cloud --in-app`: the active store marked corrupt, so that a healthy device
    /// rebuilds it from its own copy 30 s after its next load (E9). The local store is untouched.
    func rebuildInApp(_ b: inout PlanBuilder, copy: CopyChoice) throws {
        let cloud = try requireCloud("rebuild --in-app", "the corruption marker is written there")
        let source = try healthyActiveCopy(nil, copy)
        guard let uuid = source.uuid else { throw USMError.preconditionFailed("the active store is unknown") }
        guard layout.cloudContent.contains(where: { $0.uuid == uuid }) else {
            throw USMError.preconditionFailed(
                "CloudLogs/\(uuid) is not present: the app's rebuild gives up without it (docs/usm-behaviour.md, launch step 7.1); use rebuild --from cloud"
            )
        }
        _ = cloud
        let version = layout.activeVersion ?? Marker.desiredVersion
        if layout.corruptionMarker?.raw != uuid {
            try b.writeMarker(
                .corruptedUUID, version: version, uuid: uuid,
                "a healthy device rebuilds the store this marker names 30 s after loading it (E9)")
        }
        for store in layout.stores where store.uuid == uuid && store.location == .nominal {
            try b.retireFileSet(store.files, "a plain file at the nominal URL would make the rebuild do nothing (E13)")
        }
        let staleCache = layout.cachedStoreUUIDs(version: version).contains { $0.value != nil && $0.value != uuid }
        try b.editPreferences(
            PreferencesEdit(cloudEnabled: true, removeCachedStoreUUIDs: staleCache),
            "iCloud on; no cached StoreUUID other than the active one")
        guard !b.isEmpty else { return }
        b.notes.append(
            "the rebuild happens in the app, 30 s after it loads the store, and only if its delegate does not answer the corruption itself (UbiquityStoreManager's example app does); if it does not happen, use rebuild --from cloud"
        )
        b.notes.append(
            "every healthy device rebuilds when the marker reaches it; several devices may each seed a new store, and the last StoreUUID+ written wins"
        )
    }

    /// `switch <UUID>`: `StoreUUID` of the store's version written; higher versions' markers and that
    /// version's corruption marker removed; the cache removed. Next launch: the store (E4/E6; E8 for version 0).
    func switchActive(_ b: inout PlanBuilder, uuid: String) throws {
        _ = try requireCloud("switch", "the StoreUUID marker is written there")
        let uuid = uuid.uppercased()
        guard Marker.isValidUUID(uuid) else { throw USMError.usage("'\(uuid)' is not a store UUID") }
        guard let store = layout.cloudStore(uuid), store.content || !store.copies.isEmpty else {
            throw USMError.preconditionFailed(
                "\(uuid) has neither logs in CloudLogs nor a copy on this device: the app would open it empty")
        }
        let version = store.cloudVersion
        if layout.markers.first(where: { $0.kind == .storeUUID && $0.cloudVersion == version })?.raw != uuid {
            try b.writeMarker(.storeUUID, version: version, uuid: uuid, "the app loads the store this marker names")
        }
        for marker in storeMarkers where marker.cloudVersion > version {
            try b.retire(marker.path, "\(marker.name) would win over the new marker")
        }
        for marker in corruptionMarkers where marker.cloudVersion == version {
            try b.retire(
                marker.path,
                "the old corruption marker of this version goes, as UbiquityStoreManager's setStoreUUID removes it")
        }
        try b.editPreferences(
            PreferencesEdit(removeCachedStoreUUIDs: true),
            "a cached StoreUUID would make the app load the old store first (E5)")
        guard !b.isEmpty else { return }
        b.notes.append("on the customer's other devices, a running app sees the new StoreUUID and reloads into \(uuid)")
        if version < Marker.desiredVersion {
            b.notes.append("\(uuid) is an iOS 6 store: the app upgrades it into a new store 30 s after loading it (E8)")
        }
    }

    /// `cloud enable|disable`: `USMCloudEnabledKey`; enabling also removes cached StoreUUIDs that
    /// differ from the marker (a stale cache opens the wrong store, E5). Every other key is kept.
    func setCloud(_ b: inout PlanBuilder, enabled: Bool) throws {
        guard layout.preferences != nil else {
            throw USMError.preconditionFailed(
                "no preferences plist was found or given (--prefs): USMCloudEnabledKey lives there")
        }
        var removeCache = false
        if enabled, let marker = layout.activeMarker?.raw {
            removeCache =
                layout.preferences?.cachedStoreUUIDs.contains { $0.value != nil && $0.value != marker } ?? false
        }
        try b.editPreferences(
            PreferencesEdit(cloudEnabled: enabled, removeCachedStoreUUIDs: removeCache),
            enabled ? "iCloud on" : "iCloud off: the app opens the local store (E1)")
        if enabled, !b.isEmpty {
            b.notes.append(
                "USMCloudEnabledKey = YES does not stick on a device without an iCloud account: the app writes NO back at its next launch (E11)"
            )
        }
    }

    /// `corruption mark [U]`: `CorruptedUUID` of the active version names U (default: the active store).
    func markCorruption(_ b: inout PlanBuilder, uuid: String?) throws {
        _ = try requireCloud("corruption mark", "the marker is written there")
        guard let uuid = try targetUUID(named: uuid) else {
            throw USMError.preconditionFailed("no active cloud store is known; name the store to mark")
        }
        guard Marker.isValidUUID(uuid) else { throw USMError.usage("'\(uuid)' is not a store UUID") }
        let version = layout.activeVersion ?? Marker.desiredVersion
        guard layout.corruptionMarker?.raw != uuid else { return }
        try b.writeMarker(
            .corruptedUUID, version: version, uuid: uuid,
            "every healthy device rebuilds the store it names 30 s after its next load (E9)")
        b.notes.append(
            uuid == activeUUID
                ? "every healthy device rebuilds the store 30 s after its next load, unless its delegate answers the corruption itself; several may each seed a new store, and the last StoreUUID+ written wins"
                : "\(uuid) is not the active store: devices ignore the marker (E10)")
    }

    /// `corruption clear`: every `CorruptedUUID` marker removed.
    func clearCorruption(_ b: inout PlanBuilder) throws {
        _ = try requireCloud("corruption clear", "the markers live there")
        for marker in layout.markers where marker.kind == .corruptedUUID {
            try b.retire(marker.path, "no device rebuilds or waits because of it any more")
        }
        if !b.isEmpty {
            b.notes.append("a device that is waiting because of the marker reloads when the removal reaches it")
        }
    }
}
