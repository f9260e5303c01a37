import Foundation

/// What to run next, derived from the state found. Each suggestion is a sentence for a person,
/// with the exact command to type where there is one; it never names a command that does not
/// exist. A suggestion that changes files names a `Maintenance` request: `verified` plans each
/// one as its `--dry-run` would, and keeps it only when the plan is accepted, changes something
/// and does not leave the app showing fewer objects than today; a refused one is replaced by the
/// reason, or dropped when it was only one option among others.
public enum Advice {
    /// One piece of advice.
    public struct Suggestion: Sendable {
        /// The sentence, with the command typed out.
        public var text: String
        /// The changing command it proposes, planned by `verified`.
        public var command: Maintenance?
        /// The data flags the command is proposed with.
        public var consent = DataConsent()
        /// What the command is for, for the sentence that replaces a refused one (nil: dropped when refused).
        public var goal: String?
        /// The command as typed in `text`, as an argument list (nil when the sentence names none).
        public var argv: [String]?
        /// For a changing command that is not a `Maintenance` request (`dedupe`): its dry run,
        /// answering whether it would change something (a refusal throws).
        public var dryRun: (@Sendable () throws -> Bool)?

        init(_ text: String) {
            self.text = text
            // A sentence ending in a command: "Why: usm-repair ...".
            if let range = text.range(of: ": usm-repair "),
                let words = ShellWords.split(String(text[range.upperBound...]))
            {
                argv = ["usm-repair"] + words
            }
        }

        init(
            goal: String, command: Maintenance, consent: DataConsent = DataConsent(), flags: String,
            explainRefusal: Bool = true,
            then: String = ""
        ) {
            let typed = ["usm-repair", command.commandLine(consent: consent), flags, "--dry-run"].filter { !$0.isEmpty }
                .joined(separator: " ")
            text = "\(goal): \(typed)\(then)"
            argv = ShellWords.split(typed)
            self.command = command
            self.consent = consent
            self.goal = explainRefusal ? goal : nil
        }
    }

    /// One piece of advice as a script reads it (`actions` in JSON): the sentence, why, the command
    /// as an argument list, and whether the dry run of a changing command was accepted.
    public struct Action: Sendable, Encodable, Equatable {
        public let text: String
        /// What it is for: the sentence before the command.
        @NullEncoded public var why: String?
        /// The command as an argument list (`usm-repair` first), null when the advice names none.
        @NullEncoded public var command: [String]?
        /// `accepted` (a changing command's dry run planned it), `refused` (the text then says why,
        /// and `command` is the refused one), or null (not a changing command, or not planned).
        @NullEncoded public var dryRun: String?

        init(_ suggestion: Suggestion, dryRun: String?, text: String? = nil) {
            self.text = text ?? suggestion.text
            why =
                suggestion.goal
                ?? suggestion.text.range(of: ": usm-repair ").map { String(suggestion.text[..<$0.lowerBound]) }
            command = suggestion.argv
            self.dryRun = dryRun
        }
    }

    /// The advice as plain sentences, unverified (for callers that cannot plan: a bundle's report).
    static func lines(_ suggestions: [Suggestion]) -> [String] { suggestions.map(\.text) }

    /// The advice as actions, unverified.
    static func actions(_ suggestions: [Suggestion]) -> [Action] { suggestions.map { Action($0, dryRun: nil) } }

    /// The suggestions whose commands hold: each changing command planned on this layout and
    /// report as its dry run would be; refused ones replaced by the reason (or dropped), ones that
    /// change nothing or that leave the app showing fewer objects than today dropped. While an
    /// operation is pending every changing command is refused, so only `recover` is advised.
    public static func verified(
        _ suggestions: [Suggestion], layout: Layout, report: StatusReport, strategies: StrategyResolver
    )
        -> [Action]
    {
        let pending = !PlanExecutor.pending(in: layout.planRoots).isEmpty
        var lines: [Action] = []
        for suggestion in suggestions {
            if let dryRun = suggestion.dryRun {
                if pending { continue }
                do {
                    if try dryRun() { lines.append(Action(suggestion, dryRun: "accepted")) }
                } catch {
                    guard let goal = suggestion.goal else { continue }
                    let reason = (error as? USMError)?.message ?? String(describing: error)
                    lines.append(
                        Action(
                            suggestion, dryRun: "refused",
                            text:
                                "\(goal): not as things are, since `\(suggestion.argv?.dropFirst().joined(separator: " ") ?? "")` refuses: \(reason)"
                        ))
                }
                continue
            }
            guard let command = suggestion.command else {
                lines.append(Action(suggestion, dryRun: nil))
                continue
            }
            if pending { continue }
            do {
                try Planner.refuseLayout(layout, operation: command.command)
                let plan = try Planner(
                    layout: layout, report: report, strategies: strategies, consent: suggestion.consent
                ).plan(command)
                if plan.isNoOp || Self.worse(plan) { continue }
                lines.append(Action(suggestion, dryRun: "accepted"))
            } catch {
                guard let goal = suggestion.goal else { continue }
                let reason = (error as? USMError)?.message ?? String(describing: error)
                lines.append(
                    Action(
                        suggestion, dryRun: "refused",
                        text:
                            "\(goal): not as things are, since `\(command.commandLine(consent: suggestion.consent))` refuses: \(reason)"
                    ))
            }
        }
        return lines
    }

    /// True when the plan leaves the app showing fewer objects than it shows now (or a number the
    /// files cannot give, where today's is known).
    static func worse(_ plan: Plan) -> Bool {
        guard let ledger = plan.ledger, let before = ledger.before.objects, before > 0 else { return false }
        guard let after = ledger.after.objects else { return true }
        return after < before
    }

    /// The advice for a layout, before verification.
    static func suggestions(
        layout: Layout, stores: [StoreReport], next: NextLaunch?, corruption: StatusReport.Corruption?,
        problems: [Problem], isCheck: Bool
    ) -> [Suggestion] {
        let flags = layout.options.commandLineFlags
        var advice: [Suggestion] = []
        func say(_ text: String) { advice.append(Suggestion(text)) }
        func propose(
            _ goal: String, _ command: Maintenance, consent: DataConsent = DataConsent(), explain: Bool = true,
            then: String = ""
        ) {
            advice.append(
                Suggestion(
                    goal: goal, command: command, consent: consent, flags: flags, explainRefusal: explain, then: then))
        }
        let present = stores.filter(\.exists)
        let codes = Set(problems.map(\.code) + stores.flatMap { $0.problems.map(\.code) })
        let typed = { (words: String) in ["usm-repair", words, flags].filter { !$0.isEmpty }.joined(separator: " ") }

        if !layout.isSingleStore, present.isEmpty, layout.cloudContent.isEmpty {
            say(
                "No store was found. Check the folders (--app-dir, --cloud-dir, --container) and --store-name (now '\(layout.options.storeName)')."
            )
        }
        let needsRepair =
            stores.contains { $0.health == .damaged } || problems.contains { $0.severity == .error }
            || stores.contains { $0.problems.contains { $0.severity == .error } }
        let dataElsewhere = problems.filter { $0.code == .dataElsewhere }
        if needsRepair || !dataElsewhere.isEmpty {
            say("Take a bundle of everything before anything changes: \(typed("archive")) -o usm-bundle.tar.zst")
        }
        if codes.contains(.interruptedOperation) {
            say("An operation was interrupted: finish or undo it first: \(typed("recover"))")
        }
        if codes.contains(.cloudContainerUnconfirmed), layout.cloudSource == .besideUnconfirmed {
            say(
                "The ubiquity container found beside the download shares nothing with it and may be another customer's: compare it, then name the right one with --cloud-dir (changing commands refuse until then)."
            )
        }
        if codes.contains(.cachedUUIDStale) {
            propose(
                "The preferences cache a StoreUUID that the marker no longer names: the app loads the old store first. Removing the stale key (every other key kept)",
                .setCloud(enabled: true))
        }
        if let corruption, corruption.affectsActiveStore {
            say(
                "The active cloud store \(corruption.uuid) is marked corrupt (\(corruption.marker)): every healthy device rebuilds it 30 s after launch."
            )
            propose(
                "If no device can, rebuild the cloud content from the healthy local store",
                .rebuildFromLocal(keepOld: false, withOlderMarkers: false))
            propose(
                "Or from this device's copy of it",
                .rebuildFromCloud(
                    strategy: StrategyChoice(), copy: CopyChoice(), keepOld: false, withOlderMarkers: false))
            propose("If the mark is a false alarm", .clearCorruption)
        }
        if codes.contains(.markerEmpty) || codes.contains(.markerTrailingNewline) || codes.contains(.markerMalformed) {
            say(
                "A marker holds something other than 36 upper-case characters of a UUID: UbiquityStoreManager reads it byte for byte and opens the wrong store."
            )
            let candidates = layout.cloudStores.filter { !$0.copies.isEmpty || $0.content }.map(\.uuid)
            for uuid in candidates.prefix(3) {
                propose("Write a valid marker for \(uuid), which this device holds", .switchActive(uuid: uuid))
            }
        }
        if codes.contains(.cachedUUIDWithoutMarker),
            let uuid = layout.deviceCachedStoreUUIDs(version: layout.activeVersion ?? Marker.desiredVersion).cached
                .compactMap(\.value).first(where: Marker.isValidUUID)
        {
            propose(
                "The app will drop its cached StoreUUID \(uuid) and seed a new cloud store from the local store; if \(uuid) is the store the customer uses, write its marker instead",
                .switchActive(uuid: uuid), explain: false)
        }
        // "My list is empty": the data is in another store here.
        for problem in dataElsewhere {
            advice += suggestionsForData(problem, layout: layout, next: next, flags: flags)
        }
        if codes.contains(.nominalStoreFile) {
            say(
                "A plain store file sits at CloudStore/<UUID>.sqlite, where iOS 7+ keeps no store: Core Data ignores it and a later rebuild does nothing. Bundle it, then move it out of CloudStore/ (rebuild --from cloud --in-app removes it for the active store)."
            )
        }
        if codes.contains(.seedLosesWALFrames) {
            propose(
                "The next launch seeds from the local store's main file only, so its -wal must be merged first; this merges it and leaves the same next launch",
                .rebuildFromLocal(keepOld: true, withOlderMarkers: false))
        }
        if codes.contains(.seedCopySidecar) {
            propose(
                "The next launch seeds through \(Layout.seedingCopyName), beside which an earlier seeding left its -wal or -journal; this removes UbiquityStoreManager's temporary stores (snapshotted) and leaves the same next launch",
                .rebuildFromLocal(keepOld: true, withOlderMarkers: false))
        }
        if codes.contains(.severalCopies) {
            say(
                "Several copies of the active store exist on this device; which one the app opens depends on its peer folder and iCloud account. Compare them with \(typed("stores")); the operations take --peer and --account to name one."
            )
        }
        if codes.contains(.cachedUUIDAmbiguous) {
            say(
                "The preferences cache StoreUUIDs for several devices' container paths and the files do not say which device this is: the prediction cannot tell which store the app opens. A download with its Core Data copies (mobile~ peer folders) or the device's own preferences says it."
            )
        }
        if layout.cloudDirectory == nil, !layout.isSingleStore {
            say(
                "The ubiquity container was not given: an .xcappdata download does not hold it. Add --cloud-dir with the container (a Mac's ~/Library/Mobile Documents/<TEAM>~<bundle id>) to read the markers and logs."
            )
        }
        let localExists = stores.contains { $0.role == .local && $0.exists }
        for store in present {
            let label = store.uuid.map { "cloud store \($0)" } ?? (store.role == .local ? "local store" : store.path)
            // Salvage reads the damaged file set without changing it and shows, in its dry run,
            // what it would keep and what is lost; the result goes beside it under a new name.
            let main = URL(fileURLWithPath: store.path)
            let salvage = [
                "usm-repair salvage", ShellWords.quote(store.path),
                ShellWords.quote(
                    main.deletingLastPathComponent()
                        .appendingPathComponent(main.deletingPathExtension().lastPathComponent + "-salvaged.sqlite")
                        .path),
                "--dry-run",
            ].joined(separator: " ")
            switch store.health {
            case .damaged:
                say(
                    "The \(label) is damaged (\(store.problems.first?.code.rawValue ?? "integrity")). Do not let the app open it before taking a copy of its whole file set; recover from a healthy store, or salvage every row that can still be read into a new store (its dry run counts what would be kept and what is lost): \(salvage)"
                )
                advice += suggestionsForDamaged(
                    store, layout: layout, next: next, localExists: localExists, flags: flags)
            case .notCoreData:
                say("The \(label) is not a Core Data store: \(store.problems.first?.message ?? "unknown format").")
                // A destroyed header or first page makes a store look like no SQLite file at all;
                // salvage's reader may still find its pages (the operations take it as damaged).
                if case .notSQLite? = store.readFailure {
                    say(
                        "If it was one (a destroyed header or first page looks like this), salvage may still read its rows; with its schema lost it needs --schema-from, a healthy store of the same model: \(salvage)"
                    )
                    advice += suggestionsForDamaged(
                        store, layout: layout, next: next, localExists: localExists, flags: flags)
                }
            case .unreadable:
                say("The \(label) could not be read: \(store.problems.first?.message ?? "unknown reason").")
            case .ok, .missing:
                break
            }
            let storeCodes = Set(store.problems.map(\.code))
            if storeCodes.contains(.walMissing) {
                say(
                    "The \(label) is in WAL mode with its -shm but no -wal. If it was copied from a device, fetch \(store.fileName)-wal with it, or the newest rows are missing."
                )
            }
            if storeCodes.contains(.ubiquityMetadataInLocalStore) {
                say(
                    "The local store still carries iCloud metadata; Core Data will treat it as tied to an iCloud account."
                )
            }
            if let duplicates = Self.duplicates(store) {
                let what = "The \(label) holds \(duplicates) (same entity, attributes and to-one targets)"
                if store.role == .local || layout.isSingleStore {
                    // dedupe removes them from the local store (or the store given) itself.
                    let files = StoreFileSet(main: URL(fileURLWithPath: store.path))
                    let typed = [
                        "usm-repair dedupe",
                        layout.isSingleStore ? "--store \(ShellWords.quote(store.path))" : flags, "--dry-run",
                    ].filter { !$0.isEmpty }.joined(separator: " ")
                    var suggestion = Suggestion(
                        "\(what). Removing them, every relationship of a copy joined to the object kept: \(typed)")
                    suggestion.goal = "\(what). Removing them"
                    suggestion.dryRun = { try !DedupeChange.preview(files).isEmpty }
                    advice.append(suggestion)
                } else if store.active == true {
                    // A cloud store's copy is rebuilt from its logs: the route goes through the local store.
                    propose(
                        "\(what). Core Data rebuilds a cloud store's copy from its logs, so they go through the local store: bring its objects there (iCloud is then off)",
                        .migrateCloudToLocal(
                            uuid: nil, strategy: StrategyChoice(), merge: localExists, copy: CopyChoice()),
                        consent: DataConsent(),
                        then:
                            "; then \(typed("dedupe")) removes them, and \(typed("rebuild --from local")) shares the result"
                    )
                } else {
                    say("\(what); it is not the store the app opens.")
                }
            }
            if storeCodes.contains(.ubiquityTablesInLocalStore) {
                say(
                    "The local store holds Core Data's iCloud bookkeeping tables (Y_UB*), the sync state of the copy it was made from. To write it anew without them, copy its file set aside and run: usm-repair migrate-store COPY \(ShellWords.quote(store.path)) --overwrite --recipe strip-ubiquity"
                )
            }
        }
        if !layout.leftovers.isEmpty {
            say(
                "Temporary stores from an interrupted migration are present (\(layout.leftovers.map { URL(fileURLWithPath: $0.path).lastPathComponent }.joined(separator: ", "))); they hold no live data but may be the only copy after a failed rebuild: bundle them before removing anything."
            )
        }
        if !isCheck, !present.isEmpty {
            say("For every Core Data invariant (keys, relationships, external data): \(typed("check"))")
        }
        if isCheck, !needsRepair, stores.allSatisfy({ $0.problems.allSatisfy { $0.severity == .info } }),
            problems.allSatisfy({ $0.severity == .info })
        {
            say("All invariants hold.")
        }
        return advice
    }

    /// "N objects stored more than once (3 Book, 2 Tag)" from a store's `duplicate-objects` problems, or nil.
    static func duplicates(_ store: StoreReport) -> String? {
        let found = store.problems.filter { $0.code == .duplicateObjects }
        guard !found.isEmpty else { return nil }
        let total = found.reduce(0) { $0 + ($1.count ?? 0) }
        let each = found.map { "\($0.count ?? 0) \($0.subject ?? "?")" }.joined(separator: ", ")
        return "\(total) objects stored more than once (\(each))"
    }

    /// The ways to show the customer the data another store here holds (a `data-elsewhere`
    /// problem), each a command whose plan is then verified.
    static func suggestionsForData(
        _ problem: Problem, layout: Layout, next: NextLaunch?, flags: String
    ) -> [Suggestion] {
        guard let path = problem.subject, let entry = layout.stores.first(where: { $0.files.main.path == path }) else {
            return []
        }
        var advice: [Suggestion] = []
        func propose(
            _ goal: String, _ command: Maintenance, consent: DataConsent = DataConsent(), explain: Bool = true,
            then: String = ""
        ) {
            advice.append(
                Suggestion(
                    goal: goal, command: command, consent: consent, flags: flags, explainRefusal: explain, then: then))
        }
        let objects = problem.count.map { "its \($0) objects" } ?? "its objects"
        if entry.role == .local {
            // The app shows a cloud store (or seeds an empty one) while the local store holds the data.
            propose(
                "To share the local store's data through iCloud again (the app seeds a new cloud store from it at its next launch)",
                .rebuildFromLocal(keepOld: false, withOlderMarkers: false))
            if (next?.objects ?? 0) > 0 {
                propose(
                    "To keep what the cloud store holds as well, merge it into the local store first (iCloud is then off)",
                    .migrateCloudToLocal(uuid: nil, strategy: StrategyChoice(), merge: true, copy: CopyChoice()),
                    explain: false,
                    then: "; then rebuild --from local shares the result")
            }
            propose("To show the local store's data now, without iCloud", .setCloud(enabled: false), explain: false)
        } else if let uuid = entry.uuid {
            let copy = CopyChoice(peer: entry.copy?.peer, account: entry.copy?.account)
            let which =
                entry.copy.map { "the copy of \(uuid) under peer \($0.peer), account \($0.account)" }
                ?? "cloud store \(uuid)'s file"
            propose(
                "To bring \(objects) into the local store, merged with what it holds (iCloud is then off)",
                .migrateCloudToLocal(uuid: uuid, strategy: StrategyChoice(), merge: true, copy: copy),
                then: "; then rebuild --from local shares the result through iCloud")
            if uuid != next?.store, entry.location == .coreDataCopy, entry.opens != false {
                propose(
                    "Or make \(uuid) the active store again, so that every device opens \(which)",
                    .switchActive(uuid: uuid), explain: false)
            }
        }
        return advice
    }
}

extension Advice {
    /// The repair operation that takes the customer where they were going when the store the app
    /// opens (or seeds from) at its next launch is damaged, each a `--salvage` command whose plan
    /// is then verified. The local store the app opens with iCloud off has no such operation (every
    /// one that replaces it from its salvaged rows also turns iCloud on): the salvage command stands,
    /// with the active cloud store's healthy copy as the other source. A damaged store the next
    /// launch does not use gets the salvage command alone.
    static func suggestionsForDamaged(
        _ store: StoreReport, layout: Layout, next: NextLaunch?, localExists: Bool, flags: String
    ) -> [Suggestion] {
        guard let next, let entry = layout.stores.first(where: { $0.files.main.path == store.path }) else {
            return []
        }
        var advice: [Suggestion] = []
        func propose(
            _ goal: String, _ command: Maintenance, consent: DataConsent = DataConsent(), explain: Bool = true,
            then: String = ""
        ) {
            advice.append(
                Suggestion(
                    goal: goal, command: command, consent: consent, flags: flags, explainRefusal: explain, then: then))
        }
        // `--peer`/`--account` only where this device holds several copies of the store.
        func which(_ copy: Layout.StoreEntry) -> CopyChoice {
            guard let uuid = copy.uuid, layout.copies(of: uuid).count > 1 else { return CopyChoice() }
            return CopyChoice(peer: copy.copy?.peer, account: copy.copy?.account)
        }
        if entry.role == .local {
            switch next.outcome {
            case .seedNewCloudStore where next.seedFrom == store.path:
                // E2: the app seeds the new cloud store from this store; the same seeding, from
                // what can still be read of it.
                propose(
                    "The next launch seeds a new cloud store from the damaged local store; this replaces it by a store of every row that can still be read (the damaged file set goes into the snapshot) and leaves the same next launch",
                    .rebuildFromLocal(keepOld: true, withOlderMarkers: false, salvage: SalvageChoice()))
            case .openLocalStore:
                // E1: iCloud stays off. The active cloud store's healthy copy, where there is
                // one, is the other place the customer's data may be.
                guard let marker = layout.activeMarker, marker.valid, let uuid = marker.value,
                    let copy = layout.copies(of: uuid).first(where: { $0.opens != false })
                else { break }
                propose(
                    "Or, if cloud store \(uuid) holds the customer's data, replace the damaged local store with it (iCloud stays off; the damaged file set goes into the snapshot)",
                    .migrateCloudToLocal(
                        uuid: uuid, strategy: StrategyChoice(), merge: false, copy: which(copy)),
                    consent: DataConsent(replace: true), explain: false)
            default:
                break
            }
        } else if let uuid = entry.uuid, uuid == next.store, entry.opens != false,
            [.openCloudStore, .rebuildFromLogs, .failAndWait].contains(next.outcome)
        {
            // The active store's copy: the app's load fails and Core Data rebuilds the copy from
            // the logs (destroying it), or the app waits. Its readable rows go into the local
            // store, from which `rebuild --from local` shares them again.
            let copy = which(entry)
            propose(
                "To bring every row that can still be read from the damaged copy of cloud store \(uuid) into the local store (iCloud is then off)",
                .migrateCloudToLocal(
                    uuid: uuid, strategy: StrategyChoice(), merge: false, copy: copy, salvage: SalvageChoice()),
                then: "; then rebuild --from local shares the result through iCloud")
            guard localExists else { return advice }
            propose(
                "Or merged with the objects the local store holds",
                .migrateCloudToLocal(
                    uuid: uuid, strategy: StrategyChoice(), merge: true, copy: copy, salvage: SalvageChoice()),
                explain: false, then: "; then rebuild --from local shares the result through iCloud")
        }
        return advice
    }
}

extension StoreReport {
    /// The main file's name.
    var fileName: String { URL(fileURLWithPath: path).lastPathComponent }
}
