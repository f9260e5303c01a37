import Foundation

/// The project's documentation as tests read it: the README (what a newcomer reads first) and the
/// pages of docs/ it links (the guide, the JSON report, the generated reference...). A fact a
/// test checks is documented when it is on one of them.
enum Documentation {
    /// The README and every docs/*.md page, in a fixed order, one after the other.
    static func text() throws -> String {
        let root = CLITests.packageRoot
        let docs = root.appendingPathComponent("docs")
        let pages = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }
            .sorted()
        return try ([root.appendingPathComponent("README.md")] + pages.map { docs.appendingPathComponent($0) })
            .map { try String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
    }
}
