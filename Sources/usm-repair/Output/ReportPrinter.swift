import Foundation
import USMRepairCore

/// The text form of a status or check report: a few readable lines for a person.
struct ReportPrinter {
    let terminal: Terminal
    let verbose: Bool
    let quiet: Bool

    func print(_ report: StatusReport) {
        if quiet {
            for problem in report.allProblems { line(for: problem, indent: "") }
            return
        }
        let layout = report.layout
        if layout.mode == "layout" {
            if let container = layout.container { terminal.out("Container:    \(container)") }
            terminal.out("App folder:   \(layout.appDir ?? "(not found)")")
            terminal.out("Cloud folder: \(layout.cloudDir ?? "(not found)")")
            let cloud = report.cloudEnabled.map { $0 ? terminal.paint("on", .green) : "off" } ?? "unknown"
            let source = layout.preferences.map { " (USMCloudEnabledKey in \($0))" } ?? " (no preferences file)"
            terminal.out("iCloud:       \(cloud)\(report.cloudEnabled == nil ? source : "")")
            if let active = report.activeStore {
                terminal.out("Active store: \(active.uuid) (cloud version \(active.cloudVersion), \(active.marker)\(active.exists ? "" : ", no store file"))")
            } else {
                terminal.out("Active store: none")
            }
            if let corruption = report.corruption {
                let note = corruption.affectsActiveStore ? terminal.paint("ACTIVE STORE MARKED CORRUPT", .red) : "stale (not the active store)"
                terminal.out("Corruption:   \(corruption.uuid) in \(corruption.marker): \(note)")
            }
            for content in layout.cloudContent {
                terminal.out("Cloud content: CloudLogs/\(content.uuid): \(content.peers.count) peer(s), \(content.files) file(s), \(bytes(content.bytes))")
            }
            terminal.out()
        }
        terminal.out(terminal.paint("Stores", .bold))
        if report.stores.isEmpty { terminal.out("  (none)") }
        for store in report.stores { printStore(store) }

        let all = report.allProblems
        if !all.isEmpty {
            terminal.out()
            terminal.out(terminal.paint("Problems", .bold))
            for problem in all { line(for: problem, indent: "  ") }
        }
        if !report.advice.isEmpty {
            terminal.out()
            terminal.out(terminal.paint("Next", .bold))
            for advice in report.advice { terminal.out("  - \(advice)") }
        }
        let s = report.summary
        terminal.out()
        terminal.out("\(report.command): \(s.present) of \(s.stores) store(s) present, \(s.healthy) healthy, \(s.errors) error(s), \(s.warnings) warning(s)")
    }

    private func printStore(_ store: StoreReport) {
        let role = store.role == .cloud ? "cloud v\(store.cloudVersion ?? 1)\(store.active == true ? "*" : "")" : store.role.rawValue
        let health: String = switch store.health {
        case .ok: terminal.paint("ok", .green)
        case .missing: terminal.paint("missing", .dim)
        case .damaged, .notCoreData, .unreadable: terminal.paint(store.health.rawValue, .red)
        }
        terminal.out("  \(role.padding(toLength: 9, withPad: " ", startingAt: 0)) \(health)  \(store.path)")
        guard store.exists, store.metadata != nil || store.objects > 0 else { return }
        let userEntities = store.entities.filter { !$0.system }
        var facts = ["\(userEntities.count) entities", "\(store.objects) objects"]
        if let uuid = store.storeUUID { facts.append("store UUID \(uuid)") }
        facts.append(store.walPresent ? "-wal present" : "no -wal")
        if store.ubiquityMetadata { facts.append("iCloud metadata") }
        if store.externalDataFiles > 0 { facts.append("\(store.externalDataFiles) external data files") }
        terminal.out("            " + facts.joined(separator: ", "))
        if verbose {
            for entity in store.entities {
                let parent = entity.parent.map { " : \($0)" } ?? ""
                terminal.out("              \(entity.name)\(parent)  \(entity.rows)")
            }
            for file in store.files {
                terminal.out("              [\(file.member)] \(file.path) (\(file.kind), \(bytes(file.size)))")
            }
        }
    }

    private func line(for problem: Problem, indent: String) {
        let tag = switch problem.severity {
        case .error: terminal.paint("error  ", .red)
        case .warning: terminal.paint("warning", .yellow)
        case .info: terminal.paint("info   ", .dim)
        }
        let ignored = problem.ignored ? " (ignored)" : ""
        terminal.out("\(indent)\(tag) \(problem.code.rawValue)\(ignored): \(problem.message)")
    }

    private func bytes(_ n: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: n, countStyle: .file)
    }
}
