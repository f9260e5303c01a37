import Foundation
import USMRepairCore

/// The text form of a migration report.
struct MigrationPrinter {
    let terminal: Terminal
    let verbose: Bool

    /// - Parameter preview: the plan shown before the consent question (headed as a plan).
    func print(_ envelope: ChangeReport<MigrationReport>, preview: Bool = false) {
        let report = envelope.details
        if envelope.dryRun || preview {
            terminal.out(
                "Plan (\(report.strategy), \(report.mode))\(envelope.dryRun ? "; nothing was changed" : ""):")
            // The strategy's own steps, then what the plan does around them (snapshot, install).
            var shown: [(String, String, [String])] = report.steps.map { ($0.action, $0.why, $0.sql) }
            for step in envelope.steps where step.action == "snapshot" || step.action == "install" {
                let path = step.action == "snapshot" ? report.destination.path : (step.paths.last ?? "")
                shown.append(("\(step.action) \(path)", step.reason, []))
            }
            for (i, step) in shown.enumerated() {
                terminal.out("  \(i + 1). \(step.0)")
                terminal.out(terminal.paint("     why: \(step.1)", .dim))
                for sql in step.2 { terminal.out("     SQL: \(sql)") }
            }
        } else {
            terminal.out(
                "Migrated \(report.source.path) -> \(report.destination.path) with \(report.strategy) (\(report.mode))")
            let identity =
                [
                    "replaced-store": " (kept from the replaced store)", "source": " (kept from the source)",
                    "destination": " (the destination's)",
                ][report.identity] ?? ""
            terminal.out(
                "Store UUID \(report.destination.storeUUID ?? "none")\(identity); verified: integrity \(report.verification.integrity), rows \(report.verification.rows), \(report.verification.digestsCompared) content digests equal, \(report.verification.externalDataFiles) external-data files"
            )
            for raise in report.countersRaised {
                terminal.out(
                    "Z_MAX of \(raise.entity) raised from \(raise.from) to \(raise.to): it was behind the keys in use")
            }
            if let recipe = report.recipe { terminal.out("Recipe \(recipe) (sha256 \(report.recipeSHA256 ?? "?"))") }
            if let plugin = report.plugin { terminal.out("Plugin \(plugin)") }
            if verbose {
                for step in report.steps {
                    terminal.out("  step: \(step.action)")
                    for sql in step.sql { terminal.out("     SQL: \(sql)") }
                }
            }
        }
        let shown =
            verbose
            ? report.entities
            : report.entities.filter { $0.source > 0 || $0.destinationBefore > 0 || ($0.after ?? 0) > 0 }
        if !shown.isEmpty {
            terminal.out("  entity: source, destination before -> after")
            for e in shown {
                terminal.out(
                    "  \(e.name): \(e.source), \(e.destinationBefore) -> \(e.after.map(String.init) ?? "-")"
                        + (e.digest == "equal" ? "" : " (digest \(e.digest))"))
            }
        }
        for (name, n) in report.matched.sorted(by: { $0.key < $1.key }) where n > 0 {
            terminal.out("  \(name): \(n) already in the destination (matched, not copied twice)")
        }
        for (name, n) in report.deduplicated.sorted(by: { $0.key < $1.key }) where n > 0 {
            terminal.out("  \(name): \(n) rows not duplicated (uniqueness constraint)")
        }
        for line in report.leftOut { terminal.out("Left out: \(line)") }
        // Notes say what a person must know (values not copied, keys moved, files left behind):
        // never only with --verbose.
        for line in envelope.notes { terminal.out("Note: \(line)") }
        for problem in report.verification.inherited {
            terminal.out("Inherited from the source: \(problem.code.rawValue): \(problem.message)")
        }
        if let snapshot = envelope.snapshot {
            terminal.out(
                "The old destination is in \(snapshot); usm-repair restore \(snapshot) --to DIR puts its file set back under DIR/\(URL(fileURLWithPath: report.destination.path).deletingLastPathComponent().lastPathComponent)/"
            )
        }
    }
}
