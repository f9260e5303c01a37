import Foundation

/// Collects a plan's steps by phase while the planner decides them, with the fingerprints, the
/// snapshot's items and the changes the "after" prediction applies. Nothing here touches the disk
/// but `lstat`.
struct PlanBuilder {
    let layout: Layout
    /// The command, recorded in the provenance of the stores it builds.
    let operation: String
    let id = UUID().uuidString.lowercased()
    private(set) var roots: [Plan.Root] = []
    private var staging: [Plan.Step] = []
    private var retires: [Plan.Step] = []
    private var installs: [Plan.Step] = []
    /// The paths whose fingerprints the plan records (taken in one pass when the plan is made).
    private var watched: [String] = []
    private(set) var stores: [String] = []
    private(set) var snapshotItems: [String] = []
    var notes: [String] = []
    /// What the layout will look like, for the prediction of the next launch after the plan.
    var after = AfterState()
    /// Where each store's data goes (by main file path), for the ledger.
    var fates: [String: (fate: Ledger.Fate, detail: String, after: Ledger.Counts?)] = [:]
    /// What salvage keeps of each damaged store the plan reads with `--salvage` (by main file path).
    var salvaged: [String: Ledger.Salvage] = [:]
    /// A merge's destination (by main file path): incoming objects it already holds, per entity.
    var matched: [String: [String: Int]] = [:]
    private var counter = 0

    init(layout: Layout, operation: String) {
        self.layout = layout
        self.operation = operation
    }

    /// True when nothing would change.
    var isEmpty: Bool { staging.isEmpty && retires.isEmpty && installs.isEmpty }

    // MARK: - Roots

    /// The folder (app, cloud or preferences) whose private folder holds the staging and trash for `path`.
    mutating func root(for path: String) throws -> Plan.Root {
        guard let root = Plan.Root.deepest(holding: path, in: layout.planRoots) else {
            throw USMError.unexpected("\(path) lies in none of the layout's folders")
        }
        // Every folder on the way to what the plan changes is a real folder: a link there would
        // lead the change out of the layout (README: refused, exit 3).
        try PlanCheck.linkFree(path, under: root.path)
        if !roots.contains(root) {
            let rank = ["app": 0, "cloud": 1, "preferences": 2]
            roots = (roots + [root]).sorted { (rank[$0.name] ?? 3) < (rank[$1.name] ?? 3) }
        }
        return root
    }

    /// A fresh path in the operation's staging or trash folder of `path`'s root, named after it.
    private mutating func privatePath(_ kind: String, for path: String) throws -> String {
        let root = try root(for: path)
        counter += 1
        return root.privatePath(id, kind, counter, URL(fileURLWithPath: path).lastPathComponent)
    }

    // MARK: - Steps

    /// Moves `path` (a file, link or whole folder) aside; nothing when it does not exist.
    mutating func retire(_ path: String, _ reason: String) throws {
        guard FileStatus.lookup(path) != nil, !snapshotItems.contains(path) else { return }
        let trash = try privatePath("trash", for: path)
        // Every store it takes along must not be in use (a copy in a folder, a file set member).
        for store in StoreLocks.stores(at: path) where !stores.contains(store) {
            stores.append(store)
        }
        watch(path)
        snapshotItems.append(path)
        retires.append(.init(.retire(path: path, trash: trash), reason))
        after.removed.insert(path)
        for store in layout.stores
        where Confinement.isInside(store.files.main.path, path) && fates[store.files.main.path] == nil {
            fates[store.files.main.path] = (
                .discarded, "removed (\(reason)); its objects are only in the snapshot", nil
            )
        }
    }

    /// Moves a store's whole file set aside (main, -wal, -shm, -journal, .<Name>_SUPPORT).
    mutating func retireFileSet(_ files: StoreFileSet, _ reason: String) throws {
        if FileStatus.lookup(files.main.path) != nil, !stores.contains(files.main.path) {
            stores.append(files.main.path)
        }
        for member in files.allMembers { try retire(member.path, reason) }
        if fates[files.main.path] == nil, FileStatus.lookup(files.main.path) != nil {
            fates[files.main.path] = (.discarded, "removed (\(reason)); its objects are only in the snapshot", nil)
        }
    }

    /// Writes a marker (replacing the one there).
    mutating func writeMarker(_ kind: Marker.Kind, version: Int, uuid: String, _ reason: String) throws {
        guard let cloud = layout.cloudDirectory else {
            throw USMError.unexpected("no ubiquity container for \(kind.baseName)")
        }
        let path = cloud.appendingPathComponent("CloudLogs/\(Marker.fileName(kind, version: version))").path
        try retire(path, "the old \(Marker.fileName(kind, version: version)) makes way for the new one")
        try install(created: path, reason) { staged in .writeMarker(uuid: uuid, staged: staged) }
        after.removed.remove(path)
        after.markers[path] = uuid
    }

    /// Rewrites the preferences with `edit` (format and other keys kept).
    mutating func editPreferences(_ edit: PreferencesEdit, _ reason: String) throws {
        // Turning iCloud on needs the file that holds the switch: without it the app reads
        // USMCloudEnabledKey as NO and opens the local store, so the change would be for nothing.
        if edit.cloudEnabled == true, layout.preferences == nil {
            throw USMError.preconditionFailed(
                "no preferences plist was found or given (--prefs): the app reads a missing USMCloudEnabledKey as NO and would open the local store, not the cloud store this plan prepares; give the app's preferences with --prefs"
            )
        }
        guard let prefs = layout.preferencesPath, let current = layout.preferences, !edit.isNoOp(on: current) else {
            return
        }
        try retire(prefs.path, "the old preferences make way for the edited copy")
        try install(created: prefs.path, reason) { staged in
            .writePreferences(source: prefs.path, edit: edit, staged: staged)
        }
        after.removed.remove(prefs.path)
        after.preferences = edit
    }

    /// Replaces the local store by a copy of itself with its WAL merged into the main file.
    mutating func checkpointLocal(_ local: StoreFileSet, _ reason: String) throws {
        let walSize = FileStatus.lookup(local.wal.path)?.size ?? 0
        guard walSize > 0 || FileStatus.lookup(local.shm.path) != nil || FileStatus.lookup(local.journal.path) != nil
        else { return }
        let staged = try privatePath("staging", for: local.main.path)
        staging.append(.init(.checkpoint(source: local.main.path, staged: staged), reason))
        for member in [local.main, local.wal, local.shm, local.journal] {
            try retire(member.path, "the local store's file set makes way for its merged copy")
        }
        if !stores.contains(local.main.path) { stores.append(local.main.path) }
        installs.append(
            .init(
                .install(staged: staged, path: local.main.path, optional: false),
                "the merged local store goes into place"))
        after.removed.remove(local.main.path)
        after.localRebuilt = true
        fates[local.main.path] = (.checkpointed, "its -wal is merged into its main file: the same objects", nil)
    }

    /// Builds a new local store from `source` with a strategy, replacing the old file set.
    /// `expected`: the local store's objects after, as far as planning can tell. `salvage`: the
    /// source is damaged and read by salvage's own reader (`--salvage`; it may be the local store
    /// itself, replaced by its salvaged copy), `salvaged` what planning counted of it.
    mutating func buildLocal(
        from source: StoreFileSet, local: StoreFileSet, strategy: StrategyChoice, merge: Bool,
        expected counts: Ledger.Counts?,
        sourceLabel: String, salvage: (source: Plan.SalvageSource, counted: Ledger.Salvage)? = nil, _ reason: String
    ) throws {
        let staged = try privatePath("staging", for: local.main.path)
        let stagedFiles = StoreFileSet(main: URL(fileURLWithPath: staged))
        let merging = merge && FileStatus.lookup(local.main.path) != nil
        staging.append(
            .init(
                .build(
                    Plan.StoreBuild(
                        source: source.main.path, staged: staged, strategy: strategy,
                        mergeInto: merging ? local.main.path : nil, keepUbiquityMetadata: false, operation: operation,
                        salvage: salvage?.source)),
                reason))
        if !stores.contains(source.main.path) { stores.append(source.main.path) }
        watch(source.main.path)
        watch(source.wal.path)
        try retireFileSet(local, "the old local store makes way for the new one (it is in the snapshot)")
        watch(local.main.path)
        snapshotItems += [local.main.path, local.supportDirectory.path].filter { !snapshotItems.contains($0) }
        installs.append(
            .init(
                .install(staged: staged, path: local.main.path, optional: false), "the new local store goes into place")
        )
        installs.append(
            .init(
                .install(staged: stagedFiles.supportDirectory.path, path: local.supportDirectory.path, optional: true),
                "its external-data folder goes with it"))
        after.removed.remove(local.main.path)
        after.localRebuilt = true
        after.localReplaced = true
        after.localCounts = counts
        let existed = FileStatus.lookup(local.main.path) != nil
        fates[local.main.path] =
            merging
            ? (.merged, "receives the objects of \(sourceLabel); its own objects stay", counts)
            : existed
                ? (
                    .replaced, "replaced by the data of \(sourceLabel); its old objects are only in the snapshot",
                    counts
                )
                : (.created, "made from the data of \(sourceLabel)", counts)
        if let salvage { salvaged[source.main.path] = salvage.counted }
        if source.main.path == local.main.path {
            fates[local.main.path] = (
                .replaced,
                "replaced by its salvaged copy, every object that could be read; the damaged file set is only in the snapshot",
                counts
            )
        } else {
            fates[source.main.path] = (
                .read,
                salvage == nil
                    ? "its data is read (through a private copy); it is not changed"
                    : "damaged: its data is read by salvage's own reader, every row that can be (SQLite never opens it); it is not changed",
                nil
            )
        }
    }

    /// An install of a new item at `path`, made in staging by `make`.
    private mutating func install(created path: String, _ reason: String, make: (String) -> Plan.Action) throws {
        let staged = try privatePath("staging", for: path)
        staging.append(.init(make(staged), reason))
        watch(path)
        if !snapshotItems.contains(path) { snapshotItems.append(path) }
        installs.append(
            .init(
                .install(staged: staged, path: path, optional: false),
                "into place: \(URL(fileURLWithPath: path).lastPathComponent)"))
    }

    /// Records that the plan depends on `path` as it is now.
    private mutating func watch(_ path: String) {
        if !watched.contains(path) { watched.append(path) }
    }

    /// The plan: snapshot first, staging, retire, install, commit, purge; the fingerprint of every
    /// path it depends on, taken here in one pass.
    func plan(operation: String, before: NextLaunch?, after: NextLaunch?, ledger: Ledger) -> Plan {
        let expected = Plan.Fingerprint.all(watched)
        var steps: [Plan.Step] = []
        if !isEmpty {
            steps.append(
                .init(
                    .snapshot,
                    "everything this changes or removes is archived first, outside the layout; `restore` puts it back"))
            steps += staging + retires + installs
            steps += Plan.Step.finish("from here the change is complete and is never undone")
        }
        var plan = Plan(
            id: id, operation: operation, roots: isEmpty ? [] : roots, expected: expected, stores: stores,
            snapshotItems: snapshotItems, steps: steps, notes: notes, nextLaunchBefore: before, nextLaunchAfter: after,
            ledger: ledger)
        plan.label = layout.label
        return plan
    }
}

/// The changes a plan makes, applied to the discovered layout to predict the next launch after it.
struct AfterState {
    /// Paths retired and not replaced (files, folders, whole file-set members).
    var removed: Set<String> = []
    /// Marker paths written, with the UUID.
    var markers: [String: String] = [:]
    var preferences: PreferencesEdit?
    /// The local store replaced by a fresh, merged one.
    var localRebuilt = false
    /// Its data replaced or merged (not only its -wal merged in).
    var localReplaced = false
    /// Its objects, when planning can tell.
    var localCounts: Ledger.Counts?

    private func isRemoved(_ path: String) -> Bool {
        removed.contains { Confinement.isInside(path, $0) }
    }

    /// The layout and store reports as they will be.
    func apply(to layout: Layout, reports: [String: StoreReport]) -> (Layout, [String: StoreReport]) {
        var reports = reports
        let stores = layout.stores.filter { entry in
            entry.role == .local || !isRemoved(entry.files.main.path)
        }
        for entry in layout.stores where entry.role == .local {
            if localRebuilt {
                var report =
                    reports[entry.files.main.path]
                    ?? StoreReport(role: .local, path: entry.files.main.path, location: .local)
                report.exists = true
                report.health = .ok
                report.walPresent = false
                if let localCounts {
                    report.entities = localCounts.entities.sorted { $0.key < $1.key }.map {
                        StoreReport.EntityCount(
                            name: $0.key, parent: nil, rows: $0.value, number: 0, table: nil, system: false)
                    }
                    report.objects = localCounts.total
                    report.counted = true
                } else if localReplaced {
                    report.counted = false
                }
                reports[entry.files.main.path] = report
            } else if isRemoved(entry.files.main.path) {
                reports[entry.files.main.path] = StoreReport(
                    role: .local, path: entry.files.main.path, location: .local)
            }
        }
        let written = self.markers
        var markers = layout.markers.filter { !isRemoved($0.path) && written[$0.path] == nil }
        for (path, uuid) in written {
            let name = URL(fileURLWithPath: path).lastPathComponent
            guard let (kind, version) = Marker.parse(fileName: name) else { continue }
            markers.append(
                Marker(
                    name: name, kind: kind, cloudVersion: version, path: path, value: uuid, raw: uuid, valid: true,
                    defect: nil))
        }
        var preferences = layout.preferences
        if let edit = self.preferences, let old = preferences {
            preferences = Preferences(
                path: old.path, cloudEnabled: edit.cloudEnabled ?? old.cloudEnabled,
                hasKey: old.hasKey || edit.cloudEnabled != nil,
                isXML: old.isXML, cachedStoreUUIDs: old.cachedStoreUUIDs.filter { !edit.removes($0) },
                accountMaps: old.accountMaps.filter { !edit.removeAccountMaps.contains($0.contentName) })
        }
        let next = Layout(
            options: layout.options, appDirectory: layout.appDirectory, cloudDirectory: layout.cloudDirectory,
            cloudSource: layout.cloudSource,
            preferencesPath: layout.preferencesPath, preferencesFolder: layout.preferencesFolder,
            preferencesError: layout.preferencesError,
            stores: stores, cloudStores: layout.cloudStores,
            cloudContent: layout.cloudContent.filter { !isRemoved($0.path) }, markers: markers,
            preferences: preferences,
            leftovers: layout.leftovers.filter { !isRemoved($0.path) }, documents: layout.documents, problems: [],
            exitStatus: .ok,
            macApp: layout.macApp)
        return (next, reports)
    }
}
