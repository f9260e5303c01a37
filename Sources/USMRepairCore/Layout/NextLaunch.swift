import Foundation

/// What the app's UbiquityStoreManager will do at its next launch, derived from the files and the
/// preferences alone by following usm-behaviour.md §2 as a decision procedure (an iOS 7+ device,
/// `D` = 1). `state` names the row of that document's table E1–E13 the layout is in.
public struct NextLaunch: Sendable, Codable, Equatable {
    /// What the launch ends with.
    public enum Outcome: String, Sendable, Codable {
        /// The local store is opened (created empty when missing). E1, E11.
        case openLocalStore = "open-local-store"
        /// An existing cloud store is opened from this device's copy. E4, E8.
        case openCloudStore = "open-cloud-store"
        /// A new cloud store is created and seeded from the local store, and made active. E2.
        case seedNewCloudStore = "seed-new-cloud-store"
        /// A new, empty cloud store is created and made active for every device. E3.
        case createEmptyCloudStore = "create-empty-cloud-store"
        /// The active store has no copy here: Core Data rebuilds it from its logs (empty until imported). E6.
        case rebuildFromLogs = "rebuild-from-logs"
        /// The active store has neither a copy nor logs: it opens empty and starts new logs. E7, E12.
        case openEmptyCloudStore = "open-empty-cloud-store"
        /// Loading fails; the app marks the store corrupt and waits for another device. E12.
        case failAndWait = "fail-and-wait"
        /// The files do not say (a folder or the preferences missing, ambiguous keys).
        case unknown
    }

    /// The row of usm-behaviour.md §2's table the launch starts in, when one fits.
    @NullEncoded public var state: String?
    /// Every row of that table that applies, in the order they act (e.g. `E4`, `E9`, `E13`).
    public let rows: [String]
    public let outcome: Outcome
    /// The store opened: `local`, a cloud store UUID (as the app reads it), or null.
    @NullEncoded public var store: String?
    /// The store seeded from (the local store's path) when the launch seeds a new cloud store.
    @NullEncoded public var seedFrom: String?
    /// The marker version the app reads (`V`); null without the ubiquity container.
    @NullEncoded public var cloudVersion: Int?
    /// What follows the load: a reload into another store, the 30-second rebuild or upgrade.
    public let then: [String]
    /// One sentence for people.
    public let summary: String
    /// The steps of the decision, in order, each with what the files said.
    public let reasoning: [String]
    /// What the prediction takes for granted.
    public let assumptions: [String]
    /// True when the app's delegate can change the outcome (veto seeding, answer a corruption itself).
    public let dependsOnDelegate: Bool
    /// Facts the files cannot give, and what they would change.
    public let unknowns: [String]
    /// What happens instead when the device has no iCloud account (E11), when iCloud is on.
    @NullEncoded public var withoutAccount: String?
    /// What the customer sees once the launch has settled: the objects in the store the app ends
    /// up showing (the local store's for a seeded store; 0 for an empty one). Null when the files
    /// cannot say (a copy rebuilt from its logs, a store not read, an unknown launch).
    @NullEncoded public var objects: Int?

    static let baseAssumptions = [
        "an iOS 7 or later device (cloud version 1)",
        "an iCloud account is signed in on the device",
        "the app's delegate keeps UbiquityStoreManager's defaults (no veto of seeding, no own corruption handling)",
        "the app stays open at least 30 s after its store loads (the corruption and version checks run then)",
    ]

    /// Predicts the next launch. `reports` holds what inspection found, by main file path.
    public static func predict(_ layout: Layout, reports: [String: StoreReport]) -> NextLaunch {
        var p = Prediction(layout: layout, reports: reports)
        return p.run()
    }
}

/// The decision procedure, one step per method, as usm-behaviour.md §2 numbers them.
private struct Prediction {
    let layout: Layout
    let reports: [String: StoreReport]
    var reasoning: [String] = []
    var unknowns: [String] = []
    var then: [String] = []
    var rows: [String] = []
    var dependsOnDelegate = false
    var extraAssumptions: [String] = []

    init(layout: Layout, reports: [String: StoreReport]) {
        self.layout = layout
        self.reports = reports
    }

    func report(_ entry: Layout.StoreEntry) -> StoreReport? { reports[entry.files.main.path] }

    var local: Layout.StoreEntry? { layout.stores.first { $0.role == .local } }
    var localReport: StoreReport? { local.flatMap(report) }
    var localExists: Bool { localReport?.exists ?? false }

    mutating func result(
        _ state: String?, _ outcome: NextLaunch.Outcome, store: String?, summary: String, seedFrom: String? = nil,
        withoutAccount: String? = nil
    ) -> NextLaunch {
        var all = rows
        if let state, !all.contains(state) { all.insert(state, at: 0) }
        return NextLaunch(
            state: state, rows: all, outcome: outcome, store: store, seedFrom: seedFrom,
            cloudVersion: layout.activeVersion, then: then,
            summary: summary, reasoning: reasoning, assumptions: NextLaunch.baseAssumptions + extraAssumptions,
            dependsOnDelegate: dependsOnDelegate,
            unknowns: unknowns, withoutAccount: withoutAccount, objects: objectsShown(outcome, store: store))
    }

    /// The objects the customer sees after a launch ending in `outcome` on `store`.
    func objectsShown(_ outcome: NextLaunch.Outcome, store: String?) -> Int? {
        func counted(_ report: StoreReport?) -> Int? {
            guard let report else { return nil }
            if !report.exists { return 0 }
            return report.health == .ok ? Ledger.counts(report)?.total : nil
        }
        switch outcome {
        case .openLocalStore:
            guard local != nil else { return nil }
            return localExists ? counted(localReport) : 0
        case .seedNewCloudStore:
            return counted(localReport)
        case .createEmptyCloudStore, .openEmptyCloudStore, .failAndWait:
            return 0
        case .openCloudStore:
            guard let store, let copy = layout.copies(of: store).first(where: { $0.opens != false }) else { return nil }
            return counted(report(copy))
        case .rebuildFromLogs, .unknown:
            return nil
        }
    }

    mutating func run() -> NextLaunch {
        // What lies below a name that is not valid UTF-8 was not read: a copy there is not seen.
        for problem in layout.problems where problem.code == .undecodableName {
            unknowns.append(
                "\(problem.subject ?? "a folder") was not read (its name is not valid UTF-8): a store or copy below it is not counted here"
            )
        }
        if layout.cloudDirectory == nil {
            unknowns.append(
                "the ubiquity container was not given (--cloud-dir, or found beside --container): the StoreUUID and CorruptedUUID markers and the transaction logs cannot be read"
            )
        }
        // Step 1: USMCloudEnabledKey.
        guard let preferences = layout.preferences else {
            // No preferences file at all (a download without one, found nowhere): the app reads a
            // missing USMCloudEnabledKey as NO, so it opens the local store. A file that could not
            // be read (malformed, unreadable) leaves it unknown.
            // Searched for (a download, a Mac app) and not there: not a flag left out.
            let searched = layout.options.container != nil || layout.options.macApp != nil
            if layout.preferencesError == nil, searched, layout.options.preferences == nil {
                extraAssumptions.append(
                    "no preferences plist: UbiquityStoreManager reads a missing USMCloudEnabledKey as NO (iCloud off); a device whose preferences were not in the download may differ"
                )
                reasoning.append("1. USMCloudEnabledKey: no preferences file, read as NO")
                return openLocal()
            }
            unknowns.append("no preferences plist was read: whether iCloud is on (USMCloudEnabledKey) cannot be known")
            reasoning.append("1. USMCloudEnabledKey: unknown (no preferences)")
            return result(
                nil, .unknown, store: nil,
                summary: "unknown: without the app's preferences it cannot be said whether iCloud is on")
        }
        let enabled = preferences.cloudEnabled ?? false
        reasoning.append(
            "1. USMCloudEnabledKey is \(preferences.cloudEnabled.map { $0 ? "YES" : "NO" } ?? "absent (NO)")")
        guard enabled else { return openLocal() }
        return openCloud()
    }

    /// Step 3: iCloud off.
    mutating func openLocal() -> NextLaunch {
        reasoning.append("3. iCloud off: the local store is opened; nothing is seeded or migrated")
        guard let local else {
            return result(
                "E1", .openLocalStore, store: "local", summary: "opens the local store (the app folder was not given)")
        }
        if !localExists {
            return result(
                "E1", .openLocalStore, store: "local",
                summary: "opens a new, empty local store at \(local.files.main.path)")
        }
        if let health = localReport?.health, health != .ok {
            dependsOnDelegate = true
            return result(
                "E1", .openLocalStore, store: "local",
                summary:
                    "tries to open the local store, which is \(health.rawValue): loading fails and the app's delegate decides what follows"
            )
        }
        return result("E1", .openLocalStore, store: "local", summary: "opens the local store \(local.files.main.path)")
    }

    /// Step 4: iCloud on.
    mutating func openCloud() -> NextLaunch {
        let withoutAccount =
            "without an iCloud account the app opens the local store instead and writes USMCloudEnabledKey = NO (E11)"
        let version = layout.activeVersion ?? Marker.desiredVersion
        // 4.1: the cache first, then the marker.
        let (cached, own) = layout.deviceCachedStoreUUIDs(version: version)
        let cachedValues = Set(cached.compactMap { $0.value }.filter { !$0.isEmpty })
        if let own {
            // The download says which device it came from: that device reads the key of its own path.
            reasoning.append(
                "4.1 cached StoreUUIDs under several container paths; this download is from the device whose container is \(own)"
            )
        }
        if cachedValues.count > 1 {
            unknowns.append(
                "the preferences cache different StoreUUIDs under the keys of several container paths (\(cached.map(\.containerPath).joined(separator: ", "))); the app reads the key of its own path"
            )
            reasoning.append("4.1 cached StoreUUID: ambiguous")
            return result(
                nil, .unknown, store: nil, summary: "unknown: several cached StoreUUIDs disagree",
                withoutAccount: withoutAccount)
        }
        let cachedUUID = cachedValues.first
        let marker = layout.activeMarker
        let markerUUID = marker?.raw
        if let cachedUUID {
            reasoning.append(
                "4.1 the preferences cache StoreUUID \(cachedUUID.debugDescription) under …/CloudLogs/\(Marker.fileName(.storeUUID, version: version)): read before the marker"
            )
        } else {
            reasoning.append("4.1 no cached StoreUUID for \(Marker.fileName(.storeUUID, version: version))")
        }
        if layout.cloudDirectory != nil {
            reasoning.append(
                marker.map { "4.1 \($0.name) holds \(($0.raw ?? "unreadable bytes").debugDescription)" }
                    ?? "4.1 no StoreUUID marker up to version \(Marker.desiredVersion)")
        }
        guard let uuid = cachedUUID ?? markerUUID else {
            if layout.cloudDirectory == nil {
                return result(
                    nil, .unknown, store: nil,
                    summary:
                        "unknown: no cached StoreUUID, and without the ubiquity container it cannot be said whether a StoreUUID marker exists (if none does, the app seeds a new cloud store from the local store, E2)",
                    withoutAccount: withoutAccount)
            }
            return tentative(withoutAccount: withoutAccount)
        }
        if let cachedUUID, let markerUUID, cachedUUID != markerUUID {
            // E5: one full load of the cached store, then a reload into the marker's.
            reasoning.append(
                "4.1 the cache (\(cachedUUID)) differs from the marker (\(markerUUID.debugDescription)): the cached store is loaded first"
            )
            let first = describeLoad(of: cachedUUID, version: version)
            then.append(
                "after that load succeeds, the app re-reads \(marker?.name ?? "the marker"), sees \(markerUUID.debugDescription) and reloads into it; if \(cachedUUID) fails to load twice, the app writes it into \(Marker.fileName(.corruptedUUID, version: version)) and waits"
            )
            var second = self
            second.reasoning = []
            second.then = []
            let final = second.describeLoad(of: markerUUID, version: version)
            second.healthCheck(uuid: markerUUID, version: version, loaded: final.outcome)
            then += second.reasoning.map { "then: " + $0 } + second.then
            unknowns += second.unknowns
            rows += second.rows.filter { !rows.contains($0) }
            dependsOnDelegate = dependsOnDelegate || second.dependsOnDelegate
            if case .failAndWait = first.outcome {
                return result(
                    "E5", .failAndWait, store: cachedUUID,
                    summary: "loads the stale cached store \(cachedUUID) first: \(first.summary)",
                    withoutAccount: withoutAccount)
            }
            return result(
                "E5", final.outcome, store: markerUUID,
                summary:
                    "loads the stale cached store \(cachedUUID) first (\(first.summary)), then reloads into \(markerUUID): \(final.summary)",
                withoutAccount: withoutAccount)
        }
        if cachedUUID != nil, layout.cloudDirectory == nil {
            unknowns.append(
                "the cached StoreUUID is taken as the active store; the marker file, which the app re-reads after the load, was not available"
            )
        }
        if let cachedUUID, markerUUID == nil, layout.cloudDirectory != nil {
            // 4.7c: after a successful load the app re-reads the marker in the background: there
            // is none, so the cache is removed, and the reload finds no StoreUUID at all.
            reasoning.append(
                "4.1 the cache names \(cachedUUID) but no StoreUUID marker exists: the cached store is loaded first")
            let first = describeLoad(of: cachedUUID, version: version)
            if case .failAndWait = first.outcome {
                return result(
                    first.state, .failAndWait, store: cachedUUID, summary: first.summary, withoutAccount: withoutAccount
                )
            }
            then.append(
                "after that load (\(first.summary)), the app re-reads the StoreUUID marker in the background: there is none, so it removes the cached StoreUUID and reloads (docs/usm-behaviour.md, launch step 4.7c)"
            )
            var second = self
            second.reasoning = []
            second.then = []
            let final = second.tentative(withoutAccount: withoutAccount)
            then += second.reasoning.map { "then: " + $0 } + second.then
            rows += [final.state].compactMap { $0 }.filter { !rows.contains($0) }
            dependsOnDelegate = true
            return result(
                final.state, final.outcome, store: final.store,
                summary:
                    "loads the cached store \(cachedUUID) first (\(first.summary)); with no StoreUUID marker the app then drops the cache and reloads: \(final.summary)",
                seedFrom: final.seedFrom, withoutAccount: withoutAccount)
        }
        let load = describeLoad(of: uuid, version: version)
        healthCheck(uuid: uuid, version: version, loaded: load.outcome)
        return result(load.state, load.outcome, store: uuid, summary: load.summary, withoutAccount: withoutAccount)
    }

    /// 4.2–4.6 with a tentative UUID: seed from the local store, or an empty store.
    mutating func tentative(withoutAccount: String) -> NextLaunch {
        reasoning.append("4.2 no StoreUUID: the app makes a new store UUID (tentative)")
        dependsOnDelegate = true
        guard localExists, let local else {
            reasoning.append("4.5 no local store to seed from")
            return result(
                "E3", .createEmptyCloudStore, store: nil,
                summary:
                    "creates a new, EMPTY cloud store and makes it active for every device (StoreUUID+ written): there is no local store to seed from",
                withoutAccount: withoutAccount)
        }
        reasoning.append(
            "4.5 the local store exists: the new cloud store is seeded from it (the delegate can veto with shouldMigrate, giving an empty store, E3)"
        )
        then.append(
            "StoreUUID+ is written with the new UUID; Core Data creates its copy under CloudStore/CoreDataUbiquitySupport/"
        )
        return result(
            "E2", .seedNewCloudStore, store: nil,
            summary:
                "creates a new cloud store seeded from the local store \(local.files.main.path) and makes it active for every device",
            seedFrom: local.files.main.path, withoutAccount: withoutAccount)
    }

    /// What loading store `uuid` does (4.3–4.8), without the 30-second checks.
    mutating func describeLoad(of uuid: String, version: Int) -> (
        state: String?, outcome: NextLaunch.Outcome, summary: String
    ) {
        if uuid.isEmpty {
            reasoning.append("4.3 the StoreUUID is empty: the content name is empty")
            return (
                "E12", .failAndWait,
                "the store name is empty: loading fails twice, the app writes the same empty name into the corruption marker and waits"
            )
        }
        if !Marker.isValidUUID(uuid) {
            reasoning.append(
                "4.3 the StoreUUID \(uuid.debugDescription) is not 36 upper-case characters: it names no existing store"
            )
            return (
                "E12", .openEmptyCloudStore,
                "opens a new EMPTY store named \(uuid.debugDescription), with logs under CloudLogs/\(uuid.debugDescription), unrelated to the existing stores"
            )
        }
        let storeVersion = storeVersion(of: uuid, activeVersion: version)
        let copies = layout.copies(of: uuid).filter { $0.cloudVersion == storeVersion || $0.location == .coreDataCopy }
        let hasLogs = layout.cloudContent.contains { $0.uuid == uuid }
        let label =
            storeVersion == 0 ? "iOS 6 store \(uuid) (content name \(layout.options.storeName))" : "cloud store \(uuid)"
        if layout.stores.contains(where: { $0.location == .nominal && $0.uuid == uuid && (report($0)?.exists ?? false) }
        ) {
            reasoning.append(
                "4.6 a plain file sits at the nominal URL CloudStore/\(uuid).sqlite: Core Data ignores it (E13)")
            if !rows.contains("E13") { rows.append("E13") }
        }
        let opened = copies.filter { $0.opens != false }
        if opened.count > 1 {
            unknowns.append(
                "\(opened.count) copies of \(uuid) could be the one the app opens (\(opened.compactMap { $0.copy.map { "\($0.peer)/\($0.account)" } }.joined(separator: ", "))): it depends on this device's peer folder and iCloud account"
            )
        }
        if let copy = opened.first, let copyReport = report(copy), copyReport.exists {
            reasoning.append("4.6 this device's copy of the \(label) is present: \(copy.files.main.path)")
            if copyReport.health != .ok {
                reasoning.append(
                    "4.8 the copy is \(copyReport.health.rawValue): the load fails, Core Data rebuilds the copy from the logs and retries"
                )
                if hasLogs {
                    return (
                        storeVersion == 0 ? "E8" : "E6", .rebuildFromLogs,
                        "the copy of the \(label) fails to load (\(copyReport.health.rawValue)); Core Data rebuilds it from CloudLogs/\(uuid) (empty until the import finishes)"
                    )
                }
                return (
                    nil, .failAndWait,
                    "the copy of the \(label) fails to load (\(copyReport.health.rawValue)) and there are no logs to rebuild it from: the app marks it corrupt and waits"
                )
            }
            let which = copy.copy.map { " (peer \($0.peer), account \($0.account))" } ?? ""
            return (
                storeVersion == 0 ? "E8" : "E4", .openCloudStore, "opens the \(label) from this device's copy\(which)"
            )
        }
        if hasLogs {
            reasoning.append("4.6 no copy of \(uuid) on this device; CloudLogs/\(uuid) is present")
            return (
                storeVersion == 0 ? "E8" : "E6", .rebuildFromLogs,
                "opens the \(label); Core Data rebuilds its copy from CloudLogs/\(uuid) in the background (empty until the import finishes)"
            )
        }
        if layout.cloudDirectory == nil {
            unknowns.append("whether CloudLogs/\(uuid) exists cannot be known without the ubiquity container")
            reasoning.append("4.6 no copy of \(uuid) on this device; its logs could not be looked for")
            return (
                nil, .rebuildFromLogs,
                "opens the \(label) with no copy on this device: rebuilt from CloudLogs/\(uuid) if the logs exist, else an empty store (E6 or E7)"
            )
        }
        reasoning.append("4.6 neither a copy nor CloudLogs/\(uuid): Core Data creates the store empty")
        return (
            "E7", .openEmptyCloudStore,
            "opens the \(label) EMPTY: there is neither a copy on this device nor CloudLogs/\(uuid); no seeding happens"
        )
    }

    /// The cloud version of the store a UUID names: the version of the marker holding it, else the
    /// active version (usm-behaviour.md §1.5 `ver(u)`).
    func storeVersion(of uuid: String, activeVersion: Int) -> Int {
        layout.storeMarkers(upTo: Marker.desiredVersion).first { $0.raw == uuid }?.cloudVersion ?? activeVersion
    }

    /// Step 6, 30 s after a successful cloud load: the version upgrade and the corruption check.
    mutating func healthCheck(uuid: String, version: Int, loaded: NextLaunch.Outcome) {
        guard loaded == .openCloudStore || loaded == .rebuildFromLogs || loaded == .openEmptyCloudStore else { return }
        guard layout.cloudDirectory != nil else { return }
        let hasLogs = layout.cloudContent.contains { $0.uuid == uuid }
        let nominal = layout.stores.contains {
            $0.location == .nominal && $0.uuid == uuid && (report($0)?.exists ?? false)
        }
        func rebuild(_ why: String, state: String) {
            rows.append(state)
            if nominal {
                rows.append("E13")
                then.append(
                    "30 s after the load: \(why); a plain file at CloudStore/\(uuid).sqlite makes the rebuild copy it to MigrationSource.sqlite and reload \(uuid): nothing is rebuilt (E13)"
                )
            } else if !hasLogs, layout.copies(of: uuid).isEmpty {
                then.append(
                    "30 s after the load: \(why); without CloudLogs/\(uuid) the rebuild gives up and reloads, and the check repeats after every load"
                )
            } else {
                then.append(
                    "30 s after the load: \(why): a new cloud store is seeded from \(uuid), StoreUUID+ names it, the corruption marker is removed (\(state))"
                )
            }
        }
        if version != Marker.desiredVersion {
            rebuild("the store is of cloud version \(version), so the app upgrades it", state: "E8")
        } else if let corrupt = layout.corruptionMarker {
            if corrupt.raw == uuid {
                dependsOnDelegate = true
                rebuild(
                    "\(corrupt.name) names the active store, so a healthy device rebuilds it (unless the delegate handles it, as UbiquityStoreManager's example app does)",
                    state: "E9")
            } else {
                rows.append("E10")
                then.append(
                    "\(corrupt.name) names \((corrupt.raw ?? "").debugDescription), not the active store: it is ignored and stays (E10)"
                )
            }
        }
        if let lower = layout.markers.first(where: { $0.kind == .corruptedUUID && $0.cloudVersion < version }) {
            if !rows.contains("E10") { rows.append("E10") }
            then.append("\(lower.name) is of an older cloud version: an iOS 7 device never reads it (E10)")
        }
    }
}
