import Foundation

/// Turns a `Maintenance` request into a `Plan` whose end state is the one usm-behaviour.md §5
/// fixes, from a discovered layout and the `status` report on it. It lists no folder (discovery
/// did: `Layout.copyFolders`, `Layout.cloudEntries`); it reads only `lstat` for fingerprints, and
/// changes nothing.
public struct Planner {
    public let layout: Layout
    public let report: StatusReport
    /// Decides and checks the strategy of a build step.
    public let strategies: StrategyResolver
    /// The losses and duplications the user allowed (`--replace`, `--discard-cloud`, `--allow-duplicates`).
    public let consent: DataConsent
    /// The app's model (`--model`), for a store salvaged at planning (`--salvage`).
    public let model: ManagedObjectModel?
    /// The reports by main file path, indexed once.
    let reports: [String: StoreReport]

    public init(
        layout: Layout, report: StatusReport, strategies: StrategyResolver, consent: DataConsent = DataConsent(),
        model: ManagedObjectModel? = nil
    ) {
        self.layout = layout
        self.report = report
        self.strategies = strategies
        self.consent = consent
        self.model = model
        reports = Dictionary(report.stores.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Discovers the layout, inspects it and plans `maintenance`.
    public static func prepare(
        _ options: LayoutOptions, _ maintenance: Maintenance, strategies: StrategyResolver,
        consent: DataConsent = DataConsent(), records: OperationRecords = OperationRecords(),
        model: ManagedObjectModel? = nil
    ) throws
        -> (plan: Plan, report: StatusReport, layout: Layout)
    {
        try prepare(
            try Layout.discover(options, records: records), maintenance, strategies: strategies, consent: consent,
            records: records, model: model)
    }

    /// Inspects the discovered `layout` (the stores the plan needs in depth, the others as far as
    /// their files and headers) and plans `maintenance` on it: the layout is not read again.
    public static func prepare(
        _ layout: Layout, _ maintenance: Maintenance, strategies: StrategyResolver,
        consent: DataConsent = DataConsent(), records: OperationRecords = OperationRecords(),
        model: ManagedObjectModel? = nil
    ) throws
        -> (plan: Plan, report: StatusReport, layout: Layout)
    {
        let options = layout.options
        guard !layout.isSingleStore else {
            throw USMError.usage(
                "\(maintenance.command) works on an app's layout (--container, --app-dir, --cloud-dir), not on --store or --document"
            )
        }
        try refuseLayout(layout, operation: maintenance.command)
        // Planning reads the stores it needs; the others only as far as their files and headers,
        // so that an operation's time stays in the size of what it changes.
        var inspection = Inspection(options: options, depth: .light)
        inspection.records = records
        inspection.deeper = Set(readStores(maintenance, layout: layout).map(\.path))
        let report = try inspection.run(layout: layout)
        // A store the plan depends on that could not be read for want of room or through an I/O
        // error is that error, not a damaged store (which would refuse with a wrong reason).
        for store in report.stores where inspection.deeper.contains(store.path) {
            if let failure = store.readFailure, [.outOfSpace, .ioError].contains(failure.exitStatus) { throw failure }
        }
        // A member of any store's file set that is a link leading out of the layout (its
        // `.<Name>_SUPPORT` folder, a -wal...): `status` refuses to follow it, and no plan may
        // retire, replace or snapshot the file set it belongs to (README: refused, exit 3).
        for store in report.stores where store.problems.contains(where: { $0.code == .symlinkEscapes }) {
            if let failure = store.readFailure { throw failure }
        }
        // A member of any store's file set that is not of its kind (a FIFO as a -wal...) is bad
        // input: no plan moves, replaces or snapshots it (README: wrong-kind, exit 2).
        for store in report.stores where store.problems.contains(where: { $0.code == .wrongKind }) {
            if let failure = store.readFailure { throw failure }
        }
        return (
            try Planner(layout: layout, report: report, strategies: strategies, consent: consent, model: model).plan(
                maintenance),
            report, layout
        )
    }

    /// What refuses every changing command on this layout before planning: preferences that
    /// cannot be read as the app reads them, a link leading out of it, a name that is not valid
    /// UTF-8, a ubiquity container found beside the download that does not corroborate it.
    public static func refuseLayout(_ layout: Layout, operation: String) throws {
        // Preferences that cannot be read as the app reads them are bad input, never skipped: the
        // next launch cannot be predicted, and an edit would leave the keys it must remove.
        if let error = layout.preferencesError { throw error }
        // A link leading out of the layout where discovery looked: what lies behind it cannot be
        // judged, and no plan may walk it (README: refused, exit 3).
        if let escape = layout.problems.first(where: { $0.code == .symlinkEscapes }), let path = escape.subject {
            let root =
                layout.planRoots.first { FileSystemPath.isInside(path, $0.path) }?.path ?? layout.macApp?.home
                ?? "the layout"
            throw USMError.symlinkEscapes(
                path: path, target: URL(fileURLWithPath: path).resolvingSymlinksInPath().path, root: root)
        }
        // A folder of the layout that is not a folder (a file where CloudStore/ belongs...):
        // what the app would do cannot be judged, and no plan may walk it (bad input, exit 2).
        if let wrong = layout.problems.first(where: { $0.code == .wrongKind }), let path = wrong.subject {
            let prefix = "\(path) is not "
            throw USMError.wrongKind(
                path: path,
                expected: (wrong.message.hasPrefix(prefix)
                    ? String(wrong.message.dropFirst(prefix.count)) : "of its kind")
                    + "; nothing was changed")
        }
        // A name that is not valid UTF-8 (a damaged copy's): what lies below it was not read,
        // and no path through it can be addressed exactly (bad input, exit 2).
        if let name = layout.problems.first(where: { $0.code == .undecodableName }), let path = name.subject {
            throw USMError.undecodableName(path: path)
        }
        // A marker or folder of the layout that could not be read: what it holds cannot be
        // judged (a marker missed would be left in place, logs missed would be left behind), so
        // no change is planned on a partial reading (exit 74, naming it).
        if layout.exitStatus == .ioError, let unreadable = layout.problems.first(where: { $0.code == .unreadable }) {
            let path = unreadable.subject ?? "the layout"
            let reason = unreadable.message.replacingOccurrences(of: "cannot read \(path): ", with: "")
            throw USMError.unreadable(
                path: path, reason: "\(reason); no change is planned on a layout read in part, nothing was changed")
        }
        // A ubiquity container found beside the download that shares nothing with it may be
        // another customer's: it is used only once --cloud-dir names it.
        if layout.cloudSource == .besideUnconfirmed, let cloud = layout.cloudDirectory {
            throw USMError.cloudContainerRequired(
                operation: operation,
                why:
                    "the ubiquity container found beside the download, \(cloud.path), shares no peer folder or store UUID with it and may be another customer's; if it is this one, name it with --cloud-dir"
            )
        }
    }

    /// The stores read (health and objects per entity) at planning: the local store and this
    /// device's copies of the cloud stores, whose objects the ledger counts and whose health the
    /// plan depends on. (Stray nominal files and the other layouts' stores are read as far as
    /// their files and headers.)
    static func readStores(_ maintenance: Maintenance, layout: Layout) -> [URL] {
        layout.stores.filter { $0.role == .local || $0.location == .coreDataCopy || $0.location == .nosync }.map(
            \.files.main)
    }
    var local: Layout.StoreEntry? { layout.stores.first { $0.role == .local } }
    var localExists: Bool { local.map { reports[$0.files.main.path]?.exists ?? false } ?? false }

    /// Plans `maintenance`.
    public func plan(_ maintenance: Maintenance) throws -> Plan {
        var b = PlanBuilder(layout: layout, operation: maintenance.command)
        switch maintenance {
        case let .deleteContainer(localOnly):
            try deleteContainer(&b, localOnly: localOnly)
        case let .deleteCloudStore(uuid, localOnly, copy, older):
            try deleteCloudStore(&b, uuid: uuid, localOnly: localOnly, copy: copy, withOlderMarkers: older)
        case .deleteLocalStore:
            try deleteLocalStore(&b)
        case let .migrateCloudToLocal(uuid, strategy, merge, copy, salvage):
            try migrateCloudToLocal(&b, uuid: uuid, strategy: strategy, merge: merge, copy: copy, salvage: salvage)
        case let .rebuildFromLocal(keepOld, older, asMigrate, salvage):
            try rebuildFromLocal(&b, keepOld: keepOld, withOlderMarkers: older, asMigrate: asMigrate, salvage: salvage)
        case let .rebuildFromCloud(strategy, copy, keepOld, older, merge):
            try rebuildFromCloud(
                &b, strategy: strategy, copy: copy, keepOld: keepOld, withOlderMarkers: older, merge: merge)
        case let .rebuildInApp(copy):
            try rebuildInApp(&b, copy: copy)
        case let .switchActive(uuid):
            try switchActive(&b, uuid: uuid)
        case let .setCloud(enabled):
            try setCloud(&b, enabled: enabled)
        case let .markCorruption(uuid):
            try markCorruption(&b, uuid: uuid)
        case .clearCorruption:
            try clearCorruption(&b)
        }
        if !b.isEmpty, layout.cloudSource == .given,
            let problem = layout.problems.first(where: { $0.code == .cloudContainerUnconfirmed })
        {
            b.notes.append(problem.message)
        }
        var (afterLayout, afterReports) = b.after.apply(to: layout, reports: reports)
        var after = b.isEmpty ? report.nextLaunch : NextLaunch.predict(afterLayout, reports: afterReports)
        // A plan that ends in a seeding from the local store leaves no temporary store of an
        // earlier seeding or rebuild behind: the seeding's copy would be opened with its -wal.
        if after?.outcome == .seedNewCloudStore, !b.isEmpty || maintenance.preparesSeeding {
            try retireSeedingLeftovers(&b)
            (afterLayout, afterReports) = b.after.apply(to: layout, reports: reports)
            after = b.isEmpty ? report.nextLaunch : NextLaunch.predict(afterLayout, reports: afterReports)
        }
        return b.plan(
            operation: maintenance.command, before: report.nextLaunch, after: after, ledger: ledger(b, after: after))
    }

    /// UbiquityStoreManager's temporary stores beside the local store (`CopyMigrationStore.sqlite`)
    /// and in `CloudStore/` (`MigrationSource.sqlite`), retired as whole file sets. The seeding
    /// removes the copy's main file only, copies the local store's main file there and opens it
    /// (usm-behaviour.md §1.2, §5 "Traps"): a -wal or -journal of an earlier seeding would be applied
    /// to the new copy.
    func retireSeedingLeftovers(_ b: inout PlanBuilder) throws {
        guard let local else { return }
        let folders = Set(
            [local.files.directory, local.files.directory.appendingPathComponent("CloudStore", isDirectory: true)]
                .map { $0.standardizedFileURL.path })
        let found = layout.leftovers.filter {
            folders.contains(URL(fileURLWithPath: $0.path).deletingLastPathComponent().standardizedFileURL.path)
        }
        guard !found.isEmpty else { return }
        for leftover in found {
            try b.retireFileSet(
                StoreFileSet(main: URL(fileURLWithPath: leftover.path)),
                "a temporary store of an earlier seeding or rebuild (\(leftover.files.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", "))): the next seeding must not find it"
            )
        }
        b.notes.append(
            "UbiquityStoreManager's temporary stores are removed as whole file sets (\(found.flatMap(\.files).map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", "))): the app seeds by copying the local store's main file over \(Layout.seedingCopyName)'s main file only and opening the copy, and SQLite would apply a -wal or -journal left there to it"
        )
    }

    // MARK: - The ledger

    /// Every store the plan reads or touches, and the stores the app shows before and after, with
    /// their objects now and after and where their data goes.
    func ledger(_ b: PlanBuilder, after: NextLaunch?) -> Ledger {
        let before = Ledger.Shows(report.nextLaunch)
        let shown = Ledger.Shows(after)
        var stores: [Ledger.Store] = []
        for entry in layout.stores
        where entry.role == .local || entry.location == .coreDataCopy || entry.location == .nosync {
            let path = entry.files.main.path
            let now = Ledger.counts(reports[path])
            let label =
                entry.role == .local
                ? "local store"
                : "cloud store \(entry.uuid ?? "?") (\(entry.location == .nosync ? "iOS 6 file" : "this device's copy"))"
            if let fate = b.fates[path] {
                let afterCounts: Ledger.Counts? =
                    switch fate.fate {
                    case .kept, .read, .checkpointed, .abandoned: now
                    case .discarded: nil
                    case .replaced, .merged, .created: fate.after
                    }
                var store = Ledger.Store(
                    path: path, label: b.salvaged[path] == nil ? label : "\(label) (damaged)", fate: fate.fate,
                    now: now,
                    after: afterCounts, detail: fate.detail)
                store.salvage = b.salvaged[path]
                if fate.fate == .merged { store.matched = b.matched[path] ?? [:] }
                stores.append(store)
            } else if entry.role == .local
                ? [before.store, shown.store].contains("local") || before.store == "new" || shown.store == "new"
                : entry.uuid != nil && [before.store, shown.store].contains(entry.uuid) && entry.opens != false
            {
                stores.append(
                    .init(path: path, label: label, fate: .kept, now: now, after: now, detail: "left as it is"))
            }
        }
        return Ledger(stores: stores, before: before, after: shown)
    }

    /// Objects per entity of a store as read at planning.
    func counts(_ entry: Layout.StoreEntry?) -> Ledger.Counts? {
        entry.flatMap { Ledger.counts(reports[$0.files.main.path]) }
    }

    /// A list of entities and counts for a message: `Book 3, Author 1`.
    static func list(_ counts: [String: Int]) -> String {
        counts.filter { $0.value > 0 }.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(8).map {
            "\($0.key) \($0.value)"
        }
        .joined(separator: ", ") + (counts.filter { $0.value > 0 }.count > 8 ? ", ..." : "")
    }

    // MARK: - Facts

    func requireCloud(_ operation: String, _ why: String) throws -> URL {
        guard let cloud = layout.cloudDirectory else {
            throw USMError.cloudContainerRequired(operation: operation, why: why)
        }
        return cloud
    }

    /// The active store's UUID as the app settles on it (cache, then marker), when it is a valid UUID.
    var activeUUID: String? {
        if let store = report.nextLaunch?.store, Marker.isValidUUID(store) { return store }
        return report.activeStore.flatMap { Marker.isValidUUID($0.uuid) ? $0.uuid : nil }
    }

    /// The store a command acts on: the one the user named (`uuid`, upper-cased), else the active
    /// one (nil when none is known). A StoreUUID marker the app reads that is malformed (empty, a
    /// UUID with a newline, lower case, garbage, not a file) names no store that exists: which store
    /// is meant cannot be known, so it is bad input (exit 2, naming the file and the defect), not
    /// "no active store" (README: malformed markers). Every command acting on "the active store"
    /// decides it here.
    func targetUUID(named uuid: String?) throws -> String? {
        if let uuid { return uuid.uppercased() }
        if let marker = layout.activeMarker, let defect = marker.defect {
            throw Self.malformedMarker(marker, defect)
        }
        return activeUUID
    }

    /// The refusal of a malformed active marker, in words.
    static func malformedMarker(_ marker: Marker, _ defect: Marker.Defect) -> USMError {
        let what =
            switch defect {
            case .empty: "it is empty: the app reads the store name \"\" (E12)"
            case .trailingNewline:
                "it holds a UUID followed by white space or a newline: the app reads that as the name of another, empty store (E12)"
            case .lowercase: "it holds a UUID in lower case: the app's exact comparison names no existing store"
            case .notAUUID: "it does not hold 36 upper-case characters of a UUID"
            case .notAFile: "it is not a regular file"
            }
        return .wrongKind(
            path: marker.path,
            expected:
                "a valid store marker (\(defect.rawValue)): \(what); which store is active cannot be known from it, so nothing was changed: name the store (--uuid U, corruption mark U) or write a valid marker with usm-repair switch U"
        )
    }

    /// The copy of `uuid` to read: the one the app opens, or the one `choice` names.
    func chooseCopy(of uuid: String, _ choice: CopyChoice) throws -> Layout.StoreEntry {
        var copies = layout.copies(of: uuid)
        if let peer = choice.peer { copies = copies.filter { $0.copy?.peer == peer } }
        if let account = choice.account { copies = copies.filter { $0.copy?.account == account } }
        if choice.peer == nil, choice.account == nil, copies.count > 1 {
            let opened = copies.filter { $0.opens == true }
            if opened.count == 1 { copies = opened }
        }
        guard !copies.isEmpty else {
            throw USMError.preconditionFailed(
                "this device holds no copy of the cloud store \(uuid)\(choice == CopyChoice() ? "" : " matching --peer/--account")"
            )
        }
        guard copies.count == 1 else {
            let list = copies.map { $0.copy.map { "--peer \($0.peer) --account \($0.account)" } ?? $0.files.main.path }
            throw USMError.preconditionFailed(
                "this device holds \(copies.count) copies of \(uuid); name one: \(list.joined(separator: "; "))")
        }
        return copies[0]
    }

    /// The copy of the active store to read, which must be a healthy Core Data store.
    func healthyActiveCopy(_ uuid: String?, _ choice: CopyChoice) throws -> Layout.StoreEntry {
        let copy = try activeCopy(uuid, choice)
        try requireHealthy(copy)
        return copy
    }

    /// The copy of the active store (or of `uuid`) to read, healthy or not.
    func activeCopy(_ uuid: String?, _ choice: CopyChoice) throws -> Layout.StoreEntry {
        guard let uuid = try targetUUID(named: uuid) else {
            throw USMError.preconditionFailed(
                "no active cloud store is known (no StoreUUID marker, no cached StoreUUID); name one with --uuid")
        }
        return try chooseCopy(of: uuid, choice)
    }

    /// Refuses a copy that is not a healthy Core Data store.
    func requireHealthy(_ copy: Layout.StoreEntry) throws {
        guard let health = reports[copy.files.main.path]?.health, health == .ok else {
            throw USMError.preconditionFailed(
                "the copy \(copy.files.main.path) of \(copy.uuid ?? "?") is \(reports[copy.files.main.path]?.health.rawValue ?? "unreadable"): it cannot be read as a healthy store"
            )
        }
    }

    /// Every StoreUUID marker up to version `D`, and every CorruptedUUID marker.
    var storeMarkers: [Marker] {
        layout.markers.filter { $0.kind == .storeUUID && $0.cloudVersion <= Marker.desiredVersion }
    }
    var corruptionMarkers: [Marker] {
        layout.markers.filter { $0.kind == .corruptedUUID && $0.cloudVersion <= Marker.desiredVersion }
    }

    /// Core Data's folders of UbiquityStoreManager stores on this device:
    /// `A/CloudStore/CoreDataUbiquitySupport/<peer>/<content>` for the content names given, as
    /// discovery listed them (a folder it could not list refuses planning: `refuseLayout`).
    func copyFolders(contentNames: Set<String>) -> [URL] {
        layout.copyFolders.filter { contentNames.contains($0.lastPathComponent) }
    }

    /// What other devices do when a change to the ubiquity container reaches them (usm-behaviour.md §3).
    static let otherDevicesOnMarkerRemoval =
        "on the customer's other devices, a running app sees StoreUUID+ disappear: it unloads its cloud store and falls back to its local store, turning iCloud off (unless its delegate handles the deletion); at a later launch with iCloud on, each device with no StoreUUID seeds its own new cloud store, and the last one written wins"

    /// The local store seeded at the next launch must hold everything in its main file.
    func checkpointLocalForSeeding(_ b: inout PlanBuilder) throws {
        guard let local, localExists else { return }
        try b.checkpointLocal(
            local.files,
            "the app seeds the new cloud store from the local store's main file only: its WAL is merged into it first")
    }
}
