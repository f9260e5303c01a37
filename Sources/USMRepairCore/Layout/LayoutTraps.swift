import Foundation

/// The traps of usm-behaviour.md §5's checklist, found in a layout after its stores were read:
/// each a problem with a code, and the sentence says what the app will do because of it.
enum LayoutTraps {
    static func problems(_ layout: Layout, reports: [String: StoreReport], next: NextLaunch) -> [Problem] {
        func report(_ entry: Layout.StoreEntry) -> StoreReport? { reports[entry.files.main.path] }
        var problems: [Problem] = []
        let version = layout.activeVersion

        // Markers as the app reads them.
        for marker in layout.markers {
            if marker.cloudVersion > Marker.desiredVersion {
                problems.append(
                    Problem(
                        .markerVersionIgnored,
                        "\(marker.name) is of cloud version \(marker.cloudVersion), above what any device reads (\(Marker.desiredVersion)): it is ignored, and UbiquityStoreManager never removes it",
                        subject: marker.path))
                continue
            }
            switch marker.defect {
            case .empty?:
                problems.append(
                    Problem(
                        .markerEmpty,
                        "\(marker.name) is empty: the app reads the store name \"\" (loading fails, then it waits; E12)",
                        subject: marker.path))
            case .trailingNewline?:
                problems.append(
                    Problem(
                        .markerTrailingNewline,
                        "\(marker.name) holds a UUID followed by white space or a newline: the app reads it as it is and names a different, empty store (E12)",
                        subject: marker.path))
            case .notAFile?:
                let dangling = FileStatus.lookup(marker.path)?.kind == .symlink
                problems.append(
                    Problem(
                        .markerMalformed,
                        dangling
                            ? "\(marker.name) is a symlink that resolves to nothing (it points to itself, loops, or its target is missing): the app cannot read a store UUID from it"
                            : "\(marker.name) is not a regular file (\(marker.defect?.rawValue ?? "")): the app cannot read a store UUID from it",
                        subject: marker.path))
            case .lowercase?, .notAUUID?:
                problems.append(
                    Problem(
                        .markerMalformed,
                        "\(marker.name) does not hold 36 upper-case characters of a UUID (\(marker.defect?.rawValue ?? "")): the app's exact comparison never names an existing store",
                        subject: marker.path))
            case nil:
                break
            }
        }
        if let version {
            let lower = layout.markers.filter { $0.kind == .storeUUID && $0.cloudVersion < version }
            if let active = layout.activeMarker, !lower.isEmpty {
                problems.append(
                    Problem(
                        .staleMarker,
                        "\(lower.map(\.name).joined(separator: ", ")) remain beside \(active.name): the app falls back to the lower version (an iOS 6 store, upgraded again 30 s after loading, E8) as soon as \(active.name) is removed",
                        subject: lower.first?.path))
            }
            if let corrupt = layout.corruptionMarker, let active = layout.activeMarker, corrupt.raw == active.raw,
                corrupt.raw?.isEmpty == false
            {
                problems.append(
                    Problem(
                        .activeStoreMarkedCorrupt,
                        "\(corrupt.name) names the active store \(active.raw ?? ""): every healthy device rebuilds it 30 s after its next launch (E9)",
                        subject: corrupt.path))
            }
            for corrupt in layout.markers
            where corrupt.kind == .corruptedUUID && corrupt.cloudVersion <= Marker.desiredVersion {
                let matchesActive = corrupt.cloudVersion == version && corrupt.raw == layout.activeMarker?.raw
                if !matchesActive {
                    problems.append(
                        Problem(
                            .corruptionMarkerIgnored,
                            "\(corrupt.name) names \((corrupt.raw ?? "").debugDescription), which is not the active store of cloud version \(version): it is ignored and stays (E10)",
                            subject: corrupt.path))
                }
            }
        }

        // The cache the app reads before the marker.
        let cacheVersion = version ?? Marker.desiredVersion
        let device = layout.deviceCachedStoreUUIDs(version: cacheVersion)
        // When the download says which device it came from, keys of other container paths are
        // never read there: they are reported once below (cached-uuid-several-keys), not as stale.
        for cached in layout.preferences?.cachedStoreUUIDs ?? []
        where device.ownPath.map({ $0 == cached.containerPath }) ?? true {
            if cached.cloudVersion != cacheVersion {
                problems.append(
                    Problem(
                        .cachedUUIDOtherVersion,
                        "the preferences cache \((cached.value ?? "a non-string").debugDescription) under the key of StoreUUID\(String(repeating: "+", count: cached.cloudVersion)), not the one the app reads now (\(Marker.fileName(.storeUUID, version: cacheVersion))): it is read again, stale, as soon as the markers change",
                        subject: cached.key))
            } else if let value = cached.value, !value.isEmpty, let marker = layout.activeMarker, let raw = marker.raw,
                value != raw
            {
                problems.append(
                    Problem(
                        .cachedUUIDStale,
                        "the preferences cache StoreUUID \(value) but \(marker.name) names \(raw.debugDescription): the app loads the cached store first (E5)",
                        subject: cached.key))
            } else if let value = cached.value, !value.isEmpty, !cached.valid {
                problems.append(
                    Problem(
                        .cachedUUIDMalformed,
                        "the cached StoreUUID \(value.debugDescription) is not 36 upper-case characters of a UUID (E12)",
                        subject: cached.key))
            }
        }
        let all = layout.cachedStoreUUIDs(version: cacheVersion)
        let values = Set(all.compactMap(\.value))
        if values.count > 1 {
            let listed = all.map { "\($0.containerPath): \($0.value ?? "a non-string")" }.joined(separator: "; ")
            if let own = device.ownPath {
                let read = Set(device.cached.compactMap(\.value)).sorted().joined(separator: ", ")
                problems.append(
                    Problem(
                        .cachedUUIDSeveralKeys,
                        "the preferences cache \(values.count) different StoreUUIDs under keys of different container paths (\(listed)); this download comes from the device whose container is \(own), and the app there reads only its own key: \(read)",
                        subject: device.cached.first?.key))
            } else {
                problems.append(
                    Problem(
                        .cachedUUIDAmbiguous,
                        "the preferences cache \(values.count) different StoreUUIDs under keys of different container paths (\(listed)); the app reads only the key of its own container path, and the files do not say which device they came from",
                        subject: layout.preferencesPath?.path))
            }
        }
        // 4.7c: a cache without a marker is loaded, then dropped.
        let deviceValues = Set(device.cached.compactMap(\.value).filter { !$0.isEmpty })
        if layout.cloudDirectory != nil, layout.activeMarker?.raw == nil, deviceValues.count == 1,
            let cachedUUID = deviceValues.first
        {
            problems.append(
                Problem(
                    .cachedUUIDWithoutMarker,
                    "the preferences cache StoreUUID \(cachedUUID) but no StoreUUID marker exists: the app loads \(cachedUUID) first, then finds no marker, removes the cache and reloads, seeding a new cloud store from the local store (docs/usm-behaviour.md, launch step 4.7c)",
                    subject: device.cached.first { $0.value == cachedUUID }?.key))
        }

        // Store files where the app does not look for them.
        for store in layout.stores where store.location == .nominal && (report(store)?.exists ?? false) {
            problems.append(
                Problem(
                    .nominalStoreFile,
                    "\(store.files.main.path) is a plain file at the store URL the app passes to Core Data: on iOS 7+ it is ignored at load, and it makes a later rebuild do nothing (E13)",
                    subject: store.files.main.path))
        }
        if let active = next.store, Marker.isValidUUID(active) {
            let candidates = layout.copies(of: active).filter { $0.location == .coreDataCopy && $0.opens == nil }
            if candidates.count > 1 {
                problems.append(
                    Problem(
                        .severalCopies,
                        "\(candidates.count) copies of the active store \(active) could be the one this device opens (peers and accounts \(candidates.compactMap { $0.copy.map { "\($0.peer)/\($0.account)" } }.joined(separator: ", "))); name one with --peer/--account where a command asks",
                        subject: active))
            }
        }

        // A seeding copies the local store's main file only.
        if next.outcome == .seedNewCloudStore, let local = layout.stores.first(where: { $0.role == .local }),
            let pending = unmergedFrames(local.files)
        {
            problems.append(
                Problem(
                    .seedLosesWALFrames,
                    "the next launch seeds a new cloud store from the local store, copying its main file only, and its -wal holds \(pending) committed frame(s) not merged into the main file: those changes would be lost",
                    subject: local.files.wal.path, count: pending))
        }
        // A seeding copies the local store's main file over CopyMigrationStore.sqlite's main file
        // only (.m:1101-1117): SQLite takes a -wal or -journal left there by an earlier seeding
        // for the new copy's own, and applies it.
        if next.outcome == .seedNewCloudStore, let local = layout.stores.first(where: { $0.role == .local }) {
            let copy = StoreFileSet(main: local.files.directory.appendingPathComponent(Layout.seedingCopyName))
            let sidecars = [copy.wal, copy.shm, copy.journal].filter { FileStatus.lookup($0.path) != nil }
            if let first = sidecars.first {
                problems.append(
                    Problem(
                        .seedCopySidecar,
                        "the next launch seeds a new cloud store from the local store by copying its main file to \(Layout.seedingCopyName) and opening the copy, but \(sidecars.map(\.lastPathComponent).joined(separator: ", ")) of an earlier seeding remain there: SQLite would apply them to the copy and the seed would be damaged",
                        subject: first.path, count: sidecars.count))
            }
        }
        problems += dataElsewhere(layout, reports: reports, next: next)
        if layout.cloudDirectory == nil, !layout.isSingleStore {
            problems.append(
                Problem(
                    .cloudContainerMissing,
                    "the ubiquity container was not given or found (--cloud-dir): markers and transaction logs cannot be read, and the prediction takes the cached StoreUUID as the best evidence",
                    subject: nil))
        }
        return problems
    }

    /// The customer's "my data is gone": the store the app will show at its next launch holds no
    /// objects, or fewer than a tenth of another store's here (the local store, another account's
    /// or peer's copy of the same store, another store's copy), whose data it will not show.
    static func dataElsewhere(_ layout: Layout, reports: [String: StoreReport], next: NextLaunch) -> [Problem] {
        guard let shown = next.objects else { return [] }
        let local = layout.stores.first { $0.role == .local }
        // The store whose objects the app shows, when it is one of these files.
        let shownPath: String? =
            switch next.outcome {
            case .openLocalStore, .seedNewCloudStore: local?.files.main.path
            case .openCloudStore:
                next.store.flatMap { layout.copies(of: $0).first { $0.opens != false }?.files.main.path }
            default: nil
            }
        var problems: [Problem] = []
        for entry in layout.stores
        where entry.role == .local || entry.location == .coreDataCopy || entry.location == .nosync {
            let path = entry.files.main.path
            guard path != shownPath, let report = reports[path], report.exists, report.health == .ok,
                let counts = Ledger.counts(report), counts.total > 0, shown * 10 < counts.total
            else { continue }
            let what: String
            if entry.role == .local {
                what = "the local store \(path)"
            } else if let uuid = entry.uuid, uuid == next.store {
                what =
                    "another copy of cloud store \(uuid)\(entry.copy.map { " (peer \($0.peer), account \($0.account))" } ?? "") \(path)"
            } else {
                what =
                    "cloud store \(entry.uuid ?? "?")'s copy\(entry.copy.map { " (peer \($0.peer), account \($0.account))" } ?? "") \(path)"
            }
            let shows = Ledger.Shows(next).text
            let entities = counts.entities.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map {
                "\($0.key) \($0.value)"
            }.joined(separator: ", ")
            problems.append(
                Problem(
                    .dataElsewhere,
                    "the app will show \(shows) at its next launch, while \(what) holds \(counts.total) (\(entities)): the customer will not see them",
                    subject: path, count: counts.total))
        }
        return problems
    }

    /// Committed WAL frames not yet copied into the main file (nil when there are none): all of
    /// them unless the -shm's index records that a checkpoint already copied them.
    static func unmergedFrames(_ files: StoreFileSet) -> Int? {
        guard FileStatus.lookup(files.wal.path)?.kind == .file,
            let wal = try? WALFile.read(path: files.wal.path), wal.headerValid, wal.committedFrames > 0
        else { return nil }
        if FileStatus.lookup(files.shm.path)?.kind == .file, let index = WALIndexHeader.read(path: files.shm.path),
            index.salts == wal.salts, index.backfilledFrames >= wal.committedFrames
        {
            return nil
        }
        return wal.committedFrames
    }
}
