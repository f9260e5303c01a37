import Foundation

/// What to run next, derived from the state found. Each line is a sentence for a person, with the
/// exact command to type where there is one; it never names a command that does not exist.
enum Advice {
    static func lines(
        layout: Layout, stores: [StoreReport], active: StatusReport.ActiveStore?, corruption: StatusReport.Corruption?,
        problems: [Problem], cloudEnabled: Bool?, isCheck: Bool
    ) -> [String] {
        let flags = layout.options.commandLineFlags
        var lines: [String] = []
        let present = stores.filter(\.exists)
        let codes = Set(problems.map(\.code) + stores.flatMap { $0.problems.map(\.code) })

        if !layout.isSingleStore, present.isEmpty, layout.cloudContent.isEmpty {
            lines.append("No store was found. Check the folders (--app-dir, --cloud-dir, --container) and --store-name (now '\(layout.options.storeName)').")
        }
        let needsRepair = stores.contains { $0.health == .damaged } || problems.contains { $0.severity == .error }
            || stores.contains { $0.problems.contains { $0.severity == .error } }
        if needsRepair {
            lines.append("Take a bundle of everything before anything changes: usm-repair archive \(flags) -o usm-bundle.tar.zst")
        }
        if codes.contains(.interruptedOperation) {
            lines.append("An operation was interrupted: finish or undo it first: usm-repair recover \(flags)")
        }
        if codes.contains(.cachedUUIDStale) {
            lines.append("The preferences cache a StoreUUID that the marker no longer names: the app loads the old store first. Removing the stale key (every other key kept): usm-repair cloud enable \(flags) --dry-run")
        }
        if let corruption, corruption.affectsActiveStore {
            lines.append("The active cloud store \(corruption.uuid) is marked corrupt (\(corruption.marker)): every healthy device rebuilds it 30 s after launch. If no device can, rebuild the cloud content from the healthy local store: usm-repair rebuild --from local \(flags) --dry-run (or from this device's copy: rebuild --from cloud); if the mark is a false alarm: usm-repair corruption clear \(flags) --dry-run")
        }
        if codes.contains(.markerEmpty) || codes.contains(.markerTrailingNewline) || codes.contains(.markerMalformed) {
            let candidate = layout.cloudStores.first { !$0.copies.isEmpty || $0.content }?.uuid ?? "<UUID>"
            lines.append("A marker holds something other than 36 upper-case characters of a UUID: UbiquityStoreManager reads it byte for byte and opens the wrong store. Write a valid one for a store that exists: usm-repair switch \(candidate) \(flags) --dry-run")
        }
        if codes.contains(.nominalStoreFile) {
            lines.append("A plain store file sits at CloudStore/<UUID>.sqlite, where iOS 7+ keeps no store: Core Data ignores it and a later rebuild does nothing. Bundle it, then move it out of CloudStore/ (rebuild --from cloud --in-app removes it for the active store).")
        }
        if codes.contains(.seedLosesWALFrames) {
            lines.append("The next launch seeds from the local store's main file only, so its -wal must be merged first; this merges it and leaves the same next launch: usm-repair rebuild --from local \(flags) --keep-old --dry-run")
        }
        if codes.contains(.severalCopies) {
            lines.append("Several copies of the active store exist on this device; which one the app opens depends on its peer folder and iCloud account. Compare them with usm-repair stores \(flags); the operations take --peer and --account to name one.")
        }
        if layout.cloudDirectory == nil, !layout.isSingleStore {
            lines.append("The ubiquity container was not given: an .xcappdata download does not hold it. Add --cloud-dir with the container (a Mac's ~/Library/Mobile Documents/<TEAM>~<bundle id>) to read the markers and logs.")
        }
        for store in present {
            let label = store.uuid.map { "cloud store \($0)" } ?? (store.role == .local ? "local store" : store.path)
            switch store.health {
            case .damaged:
                lines.append("The \(label) is damaged (\(store.problems.first?.code.rawValue ?? "integrity")). Do not let the app open it before taking a copy of its whole file set; recover from a healthy store.")
            case .notCoreData:
                lines.append("The \(label) is not a Core Data store: \(store.problems.first?.message ?? "unknown format").")
            case .unreadable:
                lines.append("The \(label) could not be read: \(store.problems.first?.message ?? "unknown reason").")
            case .ok, .missing:
                break
            }
            let storeCodes = Set(store.problems.map(\.code))
            if storeCodes.contains(.walMissing) {
                lines.append("The \(label) is in WAL mode with its -shm but no -wal. If it was copied from a device, fetch \(store.fileName)-wal with it, or the newest rows are missing.")
            }
            if storeCodes.contains(.ubiquityMetadataInLocalStore) {
                lines.append("The local store still carries iCloud metadata; Core Data will treat it as tied to an iCloud account.")
            }
        }
        if !layout.leftovers.isEmpty {
            lines.append("Temporary stores from an interrupted migration are present (\(layout.leftovers.map { URL(fileURLWithPath: $0.path).lastPathComponent }.joined(separator: ", "))); they hold no live data but may be the only copy after a failed rebuild: bundle them before removing anything.")
        }
        if !isCheck, !present.isEmpty {
            lines.append("For every Core Data invariant (keys, relationships, external data): usm-repair check \(flags)")
        }
        if isCheck, !needsRepair, stores.allSatisfy({ $0.problems.allSatisfy { $0.severity == .info } }),
           problems.allSatisfy({ $0.severity == .info }) {
            lines.append("All invariants hold.")
        }
        return lines
    }
}

extension StoreReport {
    /// The main file's name.
    var fileName: String { URL(fileURLWithPath: path).lastPathComponent }
}
