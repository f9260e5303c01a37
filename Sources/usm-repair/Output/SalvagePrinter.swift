import Foundation
import USMRepairCore

/// The text form of a salvage report.
struct SalvagePrinter {
    let terminal: Terminal
    let verbose: Bool
    let quiet: Bool

    /// - Parameter preview: the plan shown before the consent question (headed as a plan, with
    ///   every step's reason, then what the salvage would keep and lose).
    func print(_ envelope: ChangeReport<SalvageReport>, preview: Bool = false) {
        let report = envelope.details
        let source = report.source
        if preview {
            terminal.out(terminal.paint("Plan: \(envelope.operation)", .bold))
            PlanPrinter.printSteps(envelope.steps, reasons: true, to: terminal)
        }
        if !quiet {
            terminal.out(
                envelope.dryRun || preview
                    ? "\(preview ? "Would salvage" : "Dry run"): \(source.path) read; nothing was written at \(report.destination.path)"
                    : "Salvaged \(source.path) -> \(report.destination.path)")
            terminal.out(
                "Source: \(source.pages) pages of \(source.pageSize) bytes, \(source.pagesRead) read; header \(source.header); \(source.walFrames) -wal pages applied; \(source.freePages) free pages\(source.freelistComplete ? "" : " (freelist incomplete)")\(source.pointerMap ? "; pointer map used" : "")"
            )
            terminal.out(
                "Schema from \(report.schema); relationships from \(report.relationships); metadata \(report.metadata)")
            if !envelope.dryRun && !preview {
                let v = report.verification
                terminal.out(
                    "Store UUID \(report.destination.storeUUID ?? "none"); verified: integrity \(v.integrity), rows \(v.rows), \(v.digestsCompared) content digests equal, \(v.externalDataFiles) external-data files"
                )
            }
            terminal.out("  table: salvaged (from orphaned pages), cells lost, pages lost")
            for table in report.tables
            where verbose || table.salvaged > 0 || table.lostCells > 0 || table.lostPages > 0 || !table.dropped.isEmpty
            {
                terminal.out(
                    "  \(table.name): \(table.salvaged) (\(table.fromOrphanPages)), \(table.lostCells), \(table.lostPages)"
                )
                for (reason, count) in table.dropped.sorted(by: { $0.key < $1.key }) {
                    terminal.out("    left out: \(count) rows: \(reason)")
                }
            }
            if verbose {
                terminal.out("  entity: rows in the result")
                for entity in report.entities { terminal.out("  \(entity.name): \(entity.rows)") }
            }
        }
        for cut in report.referencesCut {
            let what =
                switch cut.kind {
                case "to-one": "set to NULL (they pointed at lost rows)"
                case "join-row": "join rows removed (they pointed at lost rows)"
                default: "external-data references set to NULL (their files are missing)"
                }
            terminal.out("Cut: \(cut.table).\(cut.column): \(cut.rows) \(what)")
        }
        for (entity, value) in report.countersRaised.sorted(by: { $0.key < $1.key }) where verbose {
            terminal.out("Z_MAX of \(entity) raised to \(value)")
        }
        if !report.entitiesRestored.isEmpty {
            terminal.out(
                "Z_PRIMARYKEY rows restored from --schema-from: \(report.entitiesRestored.joined(separator: ", "))")
        }
        if report.damagedPageCount > 0 {
            terminal.out("Damaged pages: \(report.damagedPageCount)")
            for page in report.damagedPages.prefix(verbose ? report.damagedPages.count : 10) {
                terminal.out("  page \(page.page)\(page.table.map { " (\($0))" } ?? ""): \(page.reason)")
            }
            if !verbose, report.damagedPages.count > 10 {
                terminal.out("  ... (--verbose or --json lists up to \(report.damagedPages.count))")
            }
        }
        if report.unplacedPages > 0 {
            terminal.out(
                "Unplaced: \(report.unplacedPages) table pages outside every tree (\(report.unplacedRows) rows) fit no table alone; not salvaged"
            )
        }
        for line in report.unreadable { terminal.out("Not read: \(line)") }
        for line in envelope.notes where verbose || !quiet { terminal.out("Note: \(line)") }
        for problem in report.verification.inherited {
            terminal.out("Inherited: \(problem.code.rawValue): \(problem.message)")
        }
        if let snapshot = envelope.snapshot {
            terminal.out("The old destination is in \(snapshot); usm-repair restore \(snapshot) --yes puts it back")
        }
        if !quiet, !preview {
            terminal.out(
                report.lostAnything
                    ? "Something was lost or cut (exit 1): the lines above say what." : "Nothing was lost.")
        }
    }
}
