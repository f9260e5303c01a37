import Foundation

extension StatusReport {
    /// Writes the report's JSON, byte for byte what `json()` returns, in pieces: the report
    /// without its entity lists first, then each store's entities a thousand at a time, spliced in
    /// where the empty list stands. `JSONEncoder` builds a tree of everything it encodes before
    /// writing a byte (about 750 bytes per entity), so a store listing 200,000 entities would cost
    /// hundreds of megabytes encoded whole; in pieces the peak is one chunk.
    public func writeJSON(_ write: (String) -> Void) throws {
        guard stores.contains(where: { !$0.entities.isEmpty }) else {
            write(try json() + "\n")
            return
        }
        var skeleton = stores
        for i in skeleton.indices { skeleton[i].entities = [] }
        var copy = StatusReport(
            command: command, cloudEnabled: cloudEnabled, activeStore: activeStore, corruption: corruption,
            nextLaunch: nextLaunch,
            stores: skeleton,
            layout: layout, problems: problems, advice: advice, summary: summary, exitCode: exitCode)
        copy.actions = actions
        let text = try JSONOutput.encode(copy)
        // A store object's keys sit 6 spaces in (report, "stores" list, store); JSON strings cannot
        // hold a raw newline, so this text occurs only as an empty entity list, once per store, in order.
        let placeholder = "      \"entities\" : [\n\n      ]"
        var rest = text[...]
        for store in stores {
            guard let range = rest.range(of: placeholder) else { throw StreamingError.layout }
            guard !store.entities.isEmpty else {
                write(String(rest[..<range.upperBound]))
                rest = rest[range.upperBound...]
                continue
            }
            write(String(rest[..<range.lowerBound]))
            write("      \"entities\" : [\n")
            var first = true
            var start = 0
            while start < store.entities.count {
                let end = min(start + Self.entityChunk, store.entities.count)
                // The chunk encodes as "[\n  {...},\n  {...}\n]": keep the elements, 6 more spaces in.
                let chunk = try JSONOutput.encode(Array(store.entities[start..<end]))
                let lines = chunk.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().dropLast()
                if !first { write(",\n") }
                write(lines.map { "      " + $0 }.joined(separator: "\n"))
                first = false
                start = end
            }
            write("\n      ]")
            rest = rest[range.upperBound...]
        }
        write(String(rest) + "\n")
    }

    /// Entities encoded at a time.
    static let entityChunk = 1000

    /// The encoder's layout was not the one expected (never with Foundation's encoder).
    enum StreamingError: Error { case layout }
}
