import Foundation
import USMRepairCore

/// The text form of an operation's plan and result.
struct PlanPrinter {
    let terminal: Terminal
    let verbose: Bool

    /// - Parameter preview: the plan shown before the consent question: headed as a plan, with every
    ///   step's reason, and nothing a run would say (snapshot, next step).
    func print(_ report: MaintenanceChange.Report, preview: Bool = false) {
        if report.noOp {
            terminal.out("\(report.operation): nothing to do, the end state already holds")
            for note in report.notes { terminal.out("  - \(note)") }
            if let next = report.details.nextLaunch.before {
                terminal.out("Next launch:  \(next.summary)\(next.state.map { " (\($0))" } ?? "")")
            }
            terminal.out("Next step:    \(report.nextStep)")
            return
        }
        for recovery in report.recovered {
            terminal.out("Recovered an interrupted \(recovery.operation): \(recovery.outcome)")
        }
        terminal.out(terminal.paint("\(report.dryRun || preview ? "Plan" : "Done"): \(report.operation)", .bold))
        if let ledger = report.details.ledger {
            terminal.out(terminal.paint(ledger.headline(done: report.changed && !preview), .bold))
            Self.printLedger(ledger, to: terminal)
        }
        Self.printSteps(report.steps, reasons: verbose || report.dryRun || preview, to: terminal)
        let next = report.details.nextLaunch
        if let before = next.before {
            terminal.out("Next launch before: \(before.summary)\(before.state.map { " (\($0))" } ?? "")")
        }
        if let predicted = next.predicted {
            terminal.out("Next launch after:  \(predicted.summary)\(predicted.state.map { " (\($0))" } ?? "")")
        }
        if let after = next.after, after.state != next.predicted?.state || after.outcome != next.predicted?.outcome {
            terminal.out(
                terminal.paint("status now says:    \(after.summary)\(after.state.map { " (\($0))" } ?? "")", .yellow))
        }
        if next.predicted?.dependsOnDelegate == true { terminal.out("(the app's delegate can change this outcome)") }
        if !report.notes.isEmpty {
            terminal.out("Notes")
            for note in report.notes { terminal.out("  - \(note)") }
        }
        if verbose {
            for (path, rows) in report.details.rows.sorted(by: { $0.key < $1.key }) {
                terminal.out(
                    "Rows in \(path): "
                        + rows.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
        }
        if preview { return }
        if let snapshot = report.snapshot {
            terminal.out("Snapshot: \(snapshot)")
            terminal.out("  to undo: usm-repair restore \(ShellWords.quote(snapshot)) --yes")
        }
        if report.dryRun { terminal.out("Dry run: nothing was changed.") }
        terminal.out(terminal.paint("Next step:", .bold) + " \(report.nextStep)")
    }

    /// The stores the plan reads or touches: objects now → after, and where their data goes.
    static func printLedger(_ ledger: Ledger, to terminal: Terminal) {
        guard !ledger.stores.isEmpty else { return }
        terminal.out("Data")
        func objects(_ counts: Ledger.Counts?) -> String { counts.map { Ledger.grouped($0.total) } ?? "?" }
        for store in ledger.stores {
            let change: String =
                switch store.fate {
                case .kept, .read, .checkpointed, .abandoned: "\(objects(store.now)) objects"
                case .discarded: "\(objects(store.now)) → gone"
                case .replaced, .merged, .created:
                    "\(store.fate == .created ? "none" : objects(store.now)) → \(objects(store.after)) objects"
                }
            terminal.out("  \(store.label): \(change), \(store.fate.rawValue): \(store.detail)")
            if let salvage = store.salvage {
                terminal.out("    salvage: \(salvage.text)")
                for line in salvage.unreadable.prefix(5) { terminal.out("      not read: \(line)") }
                if salvage.unreadable.count > 5 {
                    terminal.out("      (\(salvage.unreadable.count - 5) more in --json)")
                }
            }
            // Both sides per entity where the store changes (`Book 6 → 8`), its counts otherwise.
            let now = store.now?.entities ?? [:]
            let after = store.after?.entities
            let changes = [.replaced, .merged, .created].contains(store.fate) && after != nil
            let names = Set(now.keys).union(after?.keys ?? [String: Int]().keys).sorted()
            let parts: [String] = names.compactMap { name in
                let before = now[name] ?? 0
                let later = after?[name] ?? 0
                if changes {
                    guard before > 0 || later > 0 else { return nil }
                    return before == later
                        ? "\(name) \(Ledger.grouped(before))"
                        : "\(name) \(Ledger.grouped(before)) → \(Ledger.grouped(later))"
                }
                let shown = store.now == nil ? later : before
                return shown > 0 ? "\(name) \(Ledger.grouped(shown))" : nil
            }
            if !parts.isEmpty { terminal.out("    " + parts.joined(separator: ", ")) }
            if let matched = store.matched?.filter({ $0.value > 0 }), !matched.isEmpty {
                terminal.out(
                    "    matched (already there, not copied again): "
                        + matched.sorted { $0.key < $1.key }.map { "\($0.key) \(Ledger.grouped($0.value))" }.joined(
                            separator: ", "))
            }
        }
    }

    /// One line per step (the path it acts on, its time once run), and its reason when asked.
    static func printSteps(_ steps: [ChangeStep], reasons: Bool, to terminal: Terminal) {
        for step in steps {
            let action = step.action.padding(toLength: 18, withPad: " ", startingAt: 0)
            let where_: String =
                switch Plan.Action.Kind(rawValue: step.action) {
                case .retire, .checkpoint, .build, .writePreferences: " " + (step.paths.first ?? "")
                case .install: " " + (step.paths.last ?? "")
                case .writeMarker: " " + (step.paths.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "")
                case .snapshot, .extract, .commit, .purge: ""
                case nil: step.paths.first.map { " " + $0 } ?? ""
                }
            let time = step.seconds.map { String(format: " (%.2f s)", $0) } ?? ""
            terminal.out(String(format: "%3d. ", step.index) + action + where_ + time)
            if reasons { terminal.out("       \(step.reason)") }
        }
    }
}

/// The text form of `restore SNAPSHOT` (in place).
struct UndoPrinter {
    let terminal: Terminal
    let verbose: Bool

    /// - Parameter preview: the plan shown before the consent question: headed as a plan, with
    ///   every step's reason, and nothing a run would say.
    func print(_ report: ChangeReport<SnapshotRestoreChange.Details>, preview: Bool = false) {
        let details = report.details
        for recovery in report.recovered {
            terminal.out("Recovered an interrupted \(recovery.operation): \(recovery.outcome)")
        }
        if report.noOp {
            terminal.out("restore: nothing to put back or remove")
            return
        }
        let planned = report.dryRun || preview
        terminal.out(
            terminal.paint("\(planned ? "Plan" : "Done"): undo `\(details.undoes)` from \(details.archive)", .bold))
        PlanPrinter.printSteps(report.steps, reasons: verbose || planned, to: terminal)
        for path in details.restored { terminal.out("\(planned ? "Would put back" : "Put back"): \(path)") }
        for path in details.removed { terminal.out("\(planned ? "Would remove" : "Removed"): \(path)") }
        if !report.notes.isEmpty {
            terminal.out("Notes")
            for note in report.notes { terminal.out("  - \(note)") }
        }
        if preview { return }
        if let snapshot = report.snapshot {
            terminal.out("Snapshot of what was there: \(snapshot) (restore it to redo)")
        }
        if report.dryRun { terminal.out("Dry run: nothing was changed.") }
        terminal.out(terminal.paint("Next step:", .bold) + " \(report.nextStep)")
    }
}
