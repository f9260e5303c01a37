import Foundation

extension Planner {
    /// True when SQLite found `entry`'s store damaged in a way salvage's own reader may read
    /// past: `damaged`, or a regular file that is "not SQLite" (a destroyed header or first page
    /// looks like another format).
    func isSalvageable(_ entry: Layout.StoreEntry) -> Bool {
        guard let report = reports[entry.files.main.path], report.exists else { return false }
        switch report.health {
        case .damaged: return true
        case .notCoreData:
            if case .notSQLite? = report.readFailure { return true }
            return false
        case .ok, .missing, .unreadable: return false
        }
    }

    /// The store of `entry` read for an operation that needs it healthy. Healthy: nil (with
    /// `--salvage`, a note that it had nothing to salvage). Damaged with `--salvage` (`choice`):
    /// salvaged at planning into a private copy (SQLite never opens the damaged files), which the
    /// caller removes. Damaged without it: refused (exit 8), naming `--salvage` (`retry`, the
    /// command with it) and `salvage`.
    /// - Throws: `preconditionFailed`; what salvage throws (`sourceDamaged` when no schema can be
    ///   read, naming `--schema-from` and this layout's healthy stores).
    func salvageIfDamaged(
        _ entry: Layout.StoreEntry, label: String, choice: SalvageChoice?, retry: Maintenance, why: String,
        b: inout PlanBuilder
    ) throws -> SalvageSeed? {
        let path = entry.files.main.path
        // A schema refused as hostile is bad input (exit 2), with or without --salvage: neither
        // SQLite nor salvage builds anything from it (issue 28).
        if case let .hostileSchema(hostilePath, reason)? = reports[path]?.readFailure {
            throw USMError.hostileSchema(path: hostilePath, reason: reason)
        }
        if let problem = reports[path]?.problems.first(where: { $0.code == .hostileSchema }) {
            throw USMError.hostileSchema(path: path, reason: problem.message)
        }
        guard isSalvageable(entry) else {
            if choice != nil, reports[path]?.health == .ok {
                b.notes.append("the \(label) is healthy: --salvage has nothing to salvage, it is read as it is")
            }
            return nil
        }
        let problem = reports[path]?.problems.first.map { "\($0.code.rawValue): \($0.message)" } ?? "damaged"
        guard let choice else {
            let main = URL(fileURLWithPath: path)
            let salvaged = main.deletingLastPathComponent()
                .appendingPathComponent(main.deletingPathExtension().lastPathComponent + "-salvaged.sqlite").path
            let flags = layout.options.commandLineFlags
            throw USMError.preconditionFailed(
                "the \(label) \(path) is damaged (\(problem)): \(why). --salvage builds from every row that can still be read instead (salvage's own reader, SQLite never opens the damaged files; the dry run counts what is kept and what is lost): usm-repair \(retry.commandLine(consent: consent)) \(flags) --dry-run. To look at what can be read first: usm-repair salvage \(ShellWords.quote(path)) \(ShellWords.quote(salvaged)) --dry-run"
            )
        }
        let schemaFrom = choice.schemaFrom.map { StoreFileSet(main: URL(fileURLWithPath: $0)) }
        do {
            return try SalvageSeed.preview(source: entry.files, schemaFrom: schemaFrom, model: model)
        } catch let USMError.sourceDamaged(path, detail) where schemaFrom == nil {
            // The schema was lost: a healthy store of the same app here may give it.
            let healthy = layout.stores.filter { $0.files.main.path != entry.files.main.path }.map(\.files.main.path)
                .filter { reports[$0]?.health == .ok && reports[$0]?.exists == true }
            throw USMError.sourceDamaged(
                path: path,
                detail: detail
                    + (healthy.isEmpty
                        ? ""
                        : " (this layout's healthy stores, which may be of the same model: \(healthy.map(ShellWords.quote).joined(separator: ", ")))")
            )
        }
    }
}
