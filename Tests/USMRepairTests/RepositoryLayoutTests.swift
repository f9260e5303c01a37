import Foundation
import Testing

/// The repository as the README describes it (CI checks the code against `.swift-format`).
@Suite("repository layout", .timed)
struct RepositoryLayoutTests {
    static let root = CLITests.packageRoot

    /// The paths the README's "Layout of the repository" block names: top-level entries as written,
    /// indented ones below the folder above them.
    static func listedPaths() throws -> [String] {
        let readme = try Documentation.text()
        let section = try #require(readme.components(separatedBy: "## Layout of the repository\n").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```").dropFirst().first)
        var paths: [String] = []
        var folder = ""
        for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
            let indent = line.prefix { $0 == " " }.count
            guard let word = line.split(separator: " ").first.map(String.init) else { continue }
            if indent == 0 {
                folder = word.hasSuffix("/") ? String(word.dropLast()) : ""
                paths.append(word.hasSuffix("/") ? String(word.dropLast()) : word)
            } else if indent == 2, word.hasSuffix("/"), !folder.isEmpty {
                paths.append(folder + "/" + word.dropLast())
            }
        }
        return paths
    }

    /// The folders directly inside `relative`, hidden ones left out.
    static func folders(in relative: String) throws -> [String] {
        let url = relative.isEmpty ? root : root.appendingPathComponent(relative)
        return try FileManager.default.contentsOfDirectory(atPath: url.path).filter { name in
            var isDirectory: ObjCBool = false
            return !name.hasPrefix(".")
                && FileManager.default.fileExists(
                    atPath: url.appendingPathComponent(name).path, isDirectory: &isDirectory)
                && isDirectory.boolValue
        }.map { relative.isEmpty ? $0 : relative + "/" + $0 }.sorted()
    }

    @Test(
        "the README's layout names every folder at the top, in Sources/, in the core, the executable and Tests/, and nothing that is not there"
    )
    func readmeLayout() throws {
        let listed = try Self.listedPaths()
        #expect(listed.count > 20, "\(listed)")
        for path in listed {
            #expect(
                FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path),
                "the README names \(path), which does not exist")
        }
        var required = try Self.folders(in: "")
        for parent in ["Sources", "Sources/USMRepairCore", "Sources/usm-repair", "Tests"] {
            required += try Self.folders(in: parent)
        }
        for folder in required {
            #expect(
                listed.contains { $0 == folder || $0.hasPrefix(folder + "/") },
                "the README's layout does not name \(folder)")
        }
    }

    /// Scripts/slowest-tests.sh lists what `.timed` recorded: a suite without it is missing from CI's list.
    @Test("every suite carries the .timed trait (CI's list of the slowest tests)")
    func everySuiteTimed() throws {
        let folder = CLITests.packageRoot.appendingPathComponent("Tests/USMRepairTests")
        let files = try #require(FileManager.default.enumerator(atPath: folder.path))
        var suites = 0
        for case let file as String in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            // Each attribute at the start of a line, up to the brace of the type it is on.
            for part in text.components(separatedBy: "\n@Suite(").dropFirst() {
                let attribute = part.components(separatedBy: "{").first ?? part
                suites += 1
                #expect(attribute.contains(".timed"), "\(file): @Suite(\(attribute.prefix(60))… has no .timed")
            }
        }
        #expect(suites > 90)
    }

}
