import Foundation

/// `status --graph`: the container as a Graphviz DOT graph (the convention of `terraform graph`):
/// the preferences and their cached StoreUUID, the markers, every cloud store with its copies and
/// logs, the local store, each with its objects, and the next launch as an edge to the store the
/// app will open. A store or marker with an error is red, with a warning orange. Every label is
/// text read from files: it is escaped, never markup.
public enum StatusGraph {
    /// The DOT text of `report`.
    public static func dot(_ report: StatusReport) -> String {
        var lines = [
            "digraph usm_repair {",
            "  rankdir=LR;",
            "  node [shape=box, fontname=\"Helvetica\", fontsize=10];",
            "  edge [fontname=\"Helvetica\", fontsize=9];",
        ]
        func node(_ id: String, _ label: [String], _ attributes: [String: String] = [:]) {
            var attrs = ["label=\(quote(label.joined(separator: "\n")))"]
            for (key, value) in attributes.sorted(by: { $0.key < $1.key }) { attrs.append("\(key)=\(value)") }
            lines.append("  \(quote(id)) [\(attrs.joined(separator: ", "))];")
        }
        func edge(_ from: String, _ to: String, _ label: String? = nil, _ attributes: [String: String] = [:]) {
            var attrs = label.map { ["label=\(quote($0))"] } ?? []
            for (key, value) in attributes.sorted(by: { $0.key < $1.key }) { attrs.append("\(key)=\(value)") }
            lines.append(
                "  \(quote(from)) -> \(quote(to))\(attrs.isEmpty ? "" : " [\(attrs.joined(separator: ", "))]");")
        }
        func colour(_ problems: [Problem]) -> [String: String] {
            if problems.contains(where: { $0.severity == .error && !$0.ignored }) {
                return ["color": "red", "fontcolor": "red"]
            }
            if problems.contains(where: { $0.severity == .warning && !$0.ignored }) { return ["color": "orange"] }
            return [:]
        }
        func objects(_ store: StoreReport) -> String {
            guard store.exists else { return "missing" }
            let count = store.entities.filter { !$0.system }.reduce(0) { $0 + $1.rows }
            return "\(Ledger.grouped(count)) objects, \(store.health.rawValue)"
        }
        let layout = report.layout

        // The app and what it does next.
        var app = ["app: next launch"]
        if let next = report.nextLaunch {
            app.append(next.outcome.rawValue + (next.state.map { " (\($0))" } ?? ""))
        } else {
            app.append("unknown")
        }
        node("app", app, ["shape": "oval", "style": "bold"])

        // The preferences: iCloud on or off, and the cached StoreUUID.
        if let preferences = layout.preferences {
            var label = ["preferences", URL(fileURLWithPath: preferences).lastPathComponent]
            label.append("iCloud: \(report.cloudEnabled.map { $0 ? "on" : "off" } ?? "unknown")")
            for cached in layout.cachedStoreUUIDs { label.append("cached: \(cached.value ?? "(not a string)")") }
            let problems = report.problems.filter {
                $0.code == .preferencesMalformed || $0.code.rawValue.hasPrefix("cached-uuid")
            }
            node("prefs", label, ["shape": "note"].merging(colour(problems)) { $1 })
            edge("prefs", "app", "read first")
        }

        // The local store.
        for store in report.stores where store.role == .local {
            node(
                "local", ["local store", URL(fileURLWithPath: store.path).lastPathComponent, objects(store)],
                ["shape": "cylinder"].merging(colour(store.problems)) { $1 })
        }

        // Cloud stores, their copies and logs.
        for cloud in layout.cloudStores {
            var label = ["cloud store \(cloud.uuid)", "version \(cloud.cloudVersion)"]
            if let content = layout.cloudContent.first(where: { $0.uuid == cloud.uuid }) {
                label.append("logs: \(content.peers.count) peer(s), \(content.files) file(s)")
            } else {
                label.append("no logs")
            }
            let active = report.activeStore?.uuid == cloud.uuid
            if active { label.append("ACTIVE") }
            node("cloud:\(cloud.uuid)", label, ["shape": "folder"].merging(active ? ["penwidth": "2"] : [:]) { $1 })
        }
        for (index, store) in report.stores.enumerated() where store.role == .cloud {
            let id = "copy:\(index)"
            var label = ["copy", URL(fileURLWithPath: store.path).lastPathComponent]
            if let copy = store.copy { label.append("peer \(copy.peer)") }
            label.append(objects(store))
            node(id, label, ["shape": "cylinder"].merging(colour(store.problems)) { $1 })
            if let uuid = store.uuid { edge("cloud:\(uuid)", id, "copy here", ["style": "dashed"]) }
        }

        // Markers name stores.
        for marker in layout.markers {
            let id = "marker:\(marker.kind.baseName)\(marker.cloudVersion)"
            let corrupt = marker.kind == .corruptedUUID
            let problems =
                report.problems.filter { $0.subject == marker.path }
                + (marker.valid ? [] : [Problem(.markerMalformed, "malformed", subject: marker.path)])
            node(
                id, [marker.name, marker.value ?? "(unreadable)"],
                ["shape": "tab"].merging(corrupt ? ["color": "red", "fontcolor": "red"] : colour(problems)) { $1 })
            if let uuid = marker.value, layout.cloudStores.contains(where: { $0.uuid == uuid }) {
                edge(id, "cloud:\(uuid)", corrupt ? "marks corrupt" : "names", corrupt ? ["color": "red"] : [:])
            }
        }

        // The next launch: an edge to the store the app will open.
        if let next = report.nextLaunch {
            let opens = ["style": "bold", "color": "blue"]
            switch next.outcome {
            case .openLocalStore:
                if report.stores.contains(where: { $0.role == .local }) { edge("app", "local", "opens", opens) }
            case .openCloudStore, .rebuildFromLogs, .openEmptyCloudStore:
                if let uuid = next.store, layout.cloudStores.contains(where: { $0.uuid == uuid }) {
                    edge(
                        "app", "cloud:\(uuid)", next.outcome == .openCloudStore ? "opens" : next.outcome.rawValue, opens
                    )
                }
            case .seedNewCloudStore, .createEmptyCloudStore:
                node(
                    "new",
                    ["new cloud store", next.outcome == .seedNewCloudStore ? "seeded from the local store" : "empty"],
                    ["shape": "folder", "style": "dashed"])
                edge("app", "new", "creates", opens)
                if next.outcome == .seedNewCloudStore, report.stores.contains(where: { $0.role == .local }) {
                    edge("local", "new", "seeds", ["style": "dashed"])
                }
            default:
                break
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    /// `text` as a DOT string: quotes and backslashes escaped, newlines as `\n`, other control
    /// characters as `\xNN` text (a name read from a file is data, never markup).
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                out += String(format: "\\\\x%02x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
