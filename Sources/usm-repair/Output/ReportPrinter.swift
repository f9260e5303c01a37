import Foundation
import USMRepairCore

/// The text form of a status or check report: a few readable lines for a person.
struct ReportPrinter {
    let terminal: Terminal
    let verbose: Bool
    let quiet: Bool
    /// The folder the command runs in: paths under it print relative to it, as typed (full with
    /// `--verbose`, and always in JSON), so `--container Examples/Demo.xcappdata` reads back as such.
    var currentDirectory: String? = nil

    /// One line of the report, paths under the current folder shown relative to it.
    private func out(_ line: String = "") {
        guard !verbose, let cwd = currentDirectory else { return terminal.out(line) }
        terminal.out(Self.relative(line, to: cwd))
    }

    /// `text` with every path that starts with `folder/` (at the start, after a space, `(`, `=` or a
    /// quote) made relative to `folder`.
    static func relative(_ text: String, to folder: String) -> String {
        let base = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        guard !base.isEmpty, text.contains(base + "/") else { return text }
        let pattern = "(?<=^|[\\s(='\"])" + NSRegularExpression.escapedPattern(for: base + "/")
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return text }
        return regex.stringByReplacingMatches(
            in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "")
    }

    func print(_ report: StatusReport) {
        if quiet {
            for problem in report.allProblems where problem.severity != .info { line(for: problem, indent: "") }
            return
        }
        let layout = report.layout
        // The verdict first: what is wrong and what to run fit on the first screen; the detail follows.
        if layout.mode == "layout" { printVerdict(report) }
        if layout.mode == "layout" {
            printLayout(report)
            out()
        }
        for document in layout.documents {
            out(
                "Document:     \(document.path) (\(document.storeContent)\(document.contentName.map { ", ubiquitous content \($0)" } ?? ""))"
            )
        }
        out(terminal.paint("Stores", .bold))
        if report.stores.isEmpty { out("  (none)") }
        for store in report.stores { printStore(store, report) }

        let all = report.allProblems
        if !all.isEmpty {
            out()
            out(terminal.paint("Problems", .bold))
            for problem in all { line(for: problem, indent: "  ") }
        }
        if !report.advice.isEmpty {
            out()
            out(terminal.paint("Next", .bold))
            for advice in report.advice { out("  - \(advice)") }
        }
        out()
        out(summaryLine(report))
    }

    /// `status: 3 of 3 store(s) present, ...`: the report in one line (first and last).
    private func summaryLine(_ report: StatusReport) -> String {
        let s = report.summary
        var summary =
            "\(report.command): \(s.present) of \(s.stores) store(s) present, \(s.healthy) healthy, \(s.errors) error(s), \(s.warnings) warning(s)"
        if s.activeStoreMarkedCorrupt { summary += "; " + terminal.paint("active store marked corrupt", .red) }
        if let next = s.nextLaunch { summary += "; next launch: \(next)" }
        return summary
    }

    /// The first lines: the summary, the most severe problems (three at most), and the first
    /// advice that repairs something (after the bundle to take first), or the first advice.
    private func printVerdict(_ report: StatusReport) {
        out(terminal.paint(summaryLine(report), .bold))
        let severe =
            report.allProblems.filter { $0.severity == .error && !$0.ignored }
            + report.allProblems.filter { $0.severity == .warning && !$0.ignored }
        for problem in severe.prefix(3) { line(for: problem, indent: "  ") }
        if severe.count > 3 { out("  (\(severe.count - 3) more under Problems)") }
        // A command that runs as things are (advice that explains a refusal says "not as things are").
        let repair = report.advice.first {
            $0.contains("usm-repair ") && !$0.contains("usm-repair archive") && !$0.contains("not as things are")
        }
        if let first = repair ?? report.advice.first {
            out(terminal.paint("Next:", .bold) + " \(first)")
        }
        out()
    }

    /// A path as shown to a person: relative to the container when it lies in it (full paths with
    /// `--verbose`, and always in JSON).
    private func shown(_ path: String, _ report: StatusReport) -> String {
        guard !verbose, let container = report.layout.container, path.hasPrefix(container + "/") else { return path }
        return String(path.dropFirst(container.count + 1))
    }

    private func printLayout(_ report: StatusReport) {
        let layout = report.layout
        if let container = layout.container { out("Container:    \(container)") }
        if let mac = layout.macApp {
            out(
                "Mac app:      \(mac.bundleID) in \(mac.home) (\(mac.sandboxed ? "sandboxed" : "not sandboxed"))")
            out("App folder:   \(layout.appDir ?? "(not found)")")
            out(
                "              \(mac.appFolder.path == layout.appDir ? "found: " : "looked for: ")\(mac.appFolder.how)")
            out("Preferences:  \(layout.preferences ?? "(not found)")")
            out(
                "              \(mac.preferences.path == layout.preferences ? "found: " : "looked for: ")\(mac.preferences.how)"
            )
            out("Cloud folder: \(layout.cloudDir ?? "(not found)")")
            out(
                "              \(mac.cloudFolder.path == layout.cloudDir ? "found: " : "looked for: ")\(mac.cloudFolder.how)"
            )
            for note in mac.notes { out("              note: \(note)") }
        } else {
            out("App folder:   \(layout.appDir.map { shown($0, report) } ?? "(not found)")")
            out(
                "Cloud folder: \(layout.cloudDir ?? "(not given: the ubiquity container lies outside the app's sandbox; --cloud-dir)")"
            )
        }
        let cloud = report.cloudEnabled.map { $0 ? terminal.paint("on", .green) : "off" } ?? "unknown"
        let source = layout.preferences.map { " (USMCloudEnabledKey in \($0))" } ?? " (no preferences file)"
        out("iCloud:       \(cloud)\(report.cloudEnabled == nil ? source : "")")
        if let active = report.activeStore {
            var facts = ["cloud version \(active.cloudVersion)"]
            if let marker = active.marker { facts.append(marker) }
            if let cached = active.cachedUUID {
                facts.append(
                    cached == active.uuid
                        ? "cached in the preferences" : terminal.paint("preferences cache \(cached)", .red))
            }
            facts.append(
                active.exists ? "\(active.copies) copy\(active.copies == 1 ? "" : "ies") here" : "no copy here")
            if active.content { facts.append("logs present") }
            out(
                "Active store: \(active.uuid.isEmpty ? "\"\" (empty)" : active.uuid.debugDescription.dropFirst().dropLast()) (\(facts.joined(separator: ", ")))"
            )
        } else {
            out("Active store: none")
        }
        if let corruption = report.corruption {
            let note =
                corruption.affectsActiveStore
                ? terminal.paint("ACTIVE STORE MARKED CORRUPT", .red) : "not the active store (ignored)"
            out("Corruption:   \(corruption.uuid) in \(corruption.marker): \(note)")
        }
        for store in layout.cloudStores {
            let copies = store.copies.count
            var facts = ["v\(store.cloudVersion)", "\(copies) cop\(copies == 1 ? "y" : "ies") here"]
            if let content = layout.cloudContent.first(where: { $0.uuid == store.uuid }) {
                facts.append("logs: \(content.peers.count) peer(s), \(content.files) file(s), \(bytes(content.bytes))")
            } else {
                facts.append("no logs")
            }
            if !store.markers.isEmpty { facts.append(store.markers.joined(separator: ", ")) }
            out("Cloud store:  \(store.uuid) (\(facts.joined(separator: "; ")))")
        }
        if let next = report.nextLaunch {
            out("Next launch:  \(terminal.paint(next.summary, .bold))\(next.state.map { " (\($0))" } ?? "")")
            for item in next.then { out("              then \(item)") }
            for unknown in next.unknowns { out("              unknown: \(unknown)") }
            if next.dependsOnDelegate { out("              (the app's delegate can change this outcome)") }
            if verbose {
                for step in next.reasoning { out("              \(step)") }
                for assumption in next.assumptions { out("              assumes \(assumption)") }
                if let other = next.withoutAccount { out("              \(other)") }
            }
        }
    }

    private func printStore(_ store: StoreReport, _ report: StatusReport) {
        let role: String =
            switch store.role {
            case .cloud: "cloud v\(store.cloudVersion ?? 1)\(store.active == true ? "*" : "")"
            default: store.role.rawValue
            }
        let health: String =
            switch store.health {
            case .ok: terminal.paint("ok", .green)
            case .missing: terminal.paint("missing", .dim)
            case .damaged, .notCoreData, .unreadable: terminal.paint(store.health.rawValue, .red)
            }
        out(
            "  \(role.padding(toLength: 9, withPad: " ", startingAt: 0)) \(health)  \(shown(store.path, report))")
        if let copy = store.copy {
            var where_ = ["peer \(copy.peer)", "content \(copy.contentName)", "account \(copy.account)"]
            if let listed = copy.accountListed {
                where_.append(listed ? "listed in the preferences" : "not in the preferences' account map")
            }
            if let opens = store.opens {
                where_.append(opens ? "the copy the app opens" : "not the copy the app opens")
            }
            out("            " + where_.joined(separator: ", "))
        } else if store.location == .nominal {
            out("            a plain file at the nominal store URL (ignored by Core Data on iOS 7+)")
        } else if store.location == .nosync {
            out("            an iOS 6 cloud store (CloudStore.nosync)")
        }
        guard store.exists, store.metadata != nil || store.objects > 0 else { return }
        let userEntities = store.entities.filter { !$0.system }
        // Objects are what the app shows (the ledger counts the same); Core Data's own history and
        // mirroring rows are said apart, so the two never give a person two numbers for one store.
        let bookkeeping = store.entities.filter(\.system).reduce(0) { $0 + $1.rows }
        var facts = ["\(userEntities.count) entities", "\(store.objects - bookkeeping) objects"]
        if bookkeeping > 0 { facts.append("\(bookkeeping) history rows") }
        if let uuid = store.storeUUID { facts.append("store UUID \(uuid)") }
        facts.append(store.walPresent ? "-wal present" : "no -wal")
        if store.ubiquityMetadata { facts.append("iCloud metadata") }
        if store.externalDataFiles > 0 { facts.append("\(store.externalDataFiles) external data files") }
        out("            " + facts.joined(separator: ", "))
        if verbose {
            for entity in store.entities {
                let parent = entity.parent.map { " : \($0)" } ?? ""
                out("              \(entity.name)\(parent)  \(entity.rows)")
            }
            for file in store.files {
                out("              [\(file.member)] \(file.path) (\(file.kind), \(bytes(file.size)))")
            }
        }
    }

    private func line(for problem: Problem, indent: String) {
        let tag: String =
            switch problem.severity {
            case .error: terminal.paint("error  ", .red)
            case .warning: terminal.paint("warning", .yellow)
            case .info: terminal.paint("info   ", .dim)
            }
        let store = problem.store.map { " [\(URL(fileURLWithPath: $0).lastPathComponent)]" } ?? ""
        let ignored = problem.ignored ? " (ignored)" : ""
        out("\(indent)\(tag) \(problem.code.rawValue)\(store)\(ignored): \(problem.message)")
    }

    private func bytes(_ n: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: n, countStyle: .file)
    }
}
