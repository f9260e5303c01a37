import Foundation

/// What to run next, derived from the state found. Each line is a sentence for a person, with the
/// command to type where there is one. Commands of later releases are named as such.
enum Advice {
    static func lines(
        layout: Layout, stores: [StoreReport], active: StatusReport.ActiveStore?, corruption: StatusReport.Corruption?,
        cloudEnabled: Bool?, isCheck: Bool
    ) -> [String] {
        let flags = layout.options.commandLineFlags
        var lines: [String] = []
        let present = stores.filter(\.exists)

        if layout.options.store == nil, present.isEmpty, layout.cloudContent.isEmpty {
            lines.append("No store was found. Check the folders (--app-dir, --cloud-dir, --container) and --store-name (now '\(layout.options.storeName)').")
        }
        if let corruption, corruption.affectsActiveStore {
            let local = stores.first { $0.role == .local && $0.health == .ok }
            let from = local != nil ? "local" : "cloud"
            lines.append("The active cloud store \(corruption.uuid) is marked corrupt (\(corruption.marker)). Take a bundle first, then rebuild the cloud content from a healthy store: usm-repair rebuild --from \(from) \(flags) (rebuild comes in a later release).")
        } else if let corruption {
            lines.append("\(corruption.marker) names \(corruption.uuid), which is not the active store: it is stale; a rebuild or switch clears it.")
        }
        if let active, !active.exists {
            let hasContent = layout.cloudContent.contains { $0.uuid == active.uuid }
            lines.append(hasContent
                ? "The active cloud store \(active.uuid) has no file on this device; the app rebuilds it from CloudLogs/\(active.uuid) on its next launch."
                : "The active cloud store \(active.uuid) has neither a file nor cloud content: the app cannot load it. Forget it so a new one is seeded: usm-repair delete cloud-store --uuid \(active.uuid) \(flags) (coming in a later release).")
        }
        if cloudEnabled == true, active == nil, layout.options.store == nil, layout.cloudDirectory != nil {
            lines.append("iCloud is on but no StoreUUID marker names an active store: on its next launch the app creates a new cloud store seeded from the local store.")
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
            let codes = Set(store.problems.map(\.code))
            if codes.contains(.walMissing) || codes.contains(.walHeaderWithoutWal) {
                lines.append("The \(label) is in WAL mode with no -wal beside it. If it was copied from a device, fetch \(store.fileName)-wal and \(store.fileName)-shm with it, or the newest rows are missing.")
            }
            if codes.contains(.ubiquityMetadataInLocalStore) {
                lines.append("The local store still carries iCloud metadata; migrating it with usm-repair migrate (a later release) strips it.")
            }
        }
        if !layout.leftovers.isEmpty {
            lines.append("Temporary stores from an interrupted migration are present (\(layout.leftovers.map { URL(fileURLWithPath: $0.path).lastPathComponent }.joined(separator: ", "))); they hold no live data but may be the only copy after a failed rebuild: bundle them before removing anything.")
        }
        if !isCheck, !present.isEmpty {
            lines.append("For every Core Data invariant (keys, relationships, external data): usm-repair check \(flags)")
        }
        if isCheck, lines.isEmpty, stores.allSatisfy({ $0.problems.allSatisfy { $0.severity == .info } }), layout.problems.isEmpty {
            lines.append("All invariants hold.")
        }
        return lines
    }
}

extension StoreReport {
    /// The main file's name.
    var fileName: String { URL(fileURLWithPath: path).lastPathComponent }
}
