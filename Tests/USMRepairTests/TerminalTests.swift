import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
@testable import usm_repair

/// Text output never carries a control character from a name or message to the terminal; JSON
/// stays exact.
@Suite("terminal text", .timed)
struct TerminalTests {
    static let hostile = "evil\u{1B}]0;pwned\u{07}\u{9B}2J\u{7F}\nnext\u{2028}line\tend"

    @Test("names with ESC, BEL, C1, DEL and line breaks print escaped; JSON keeps them exactly")
    func statusText() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let folder = paths.logs.appendingPathComponent(Self.hostile, isDirectory: true)
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("peer"), withIntermediateDirectories: true)
        for command in ["status", "check"] {
            let text = USM.run([command, "--container", paths.root.path])
            for control in ["\u{1B}", "\u{07}", "\u{9B}", "\u{7F}", "\u{2028}", "\t"] {
                #expect(
                    !text.stdout.contains(control),
                    "\(command): raw \(control.unicodeScalars.first!.value) in the output")
            }
            #expect(
                text.stdout.contains("evil\\x1b]0;pwned\\x07\\u{9b}2J\\x7f\\nnext\\u{2028}line\\tend"), "\(text.stdout)"
            )
            #expect(
                text.stdout.split(separator: "\n").allSatisfy { !$0.hasPrefix("next") },
                "a name cannot start a line of its own")
        }
        let json = USM.run(["status", "--container", paths.root.path, "--json"])
        let content = (json.json["layout"] as? [String: Any])?["cloudContent"] as? [[String: Any]] ?? []
        #expect(content.contains { $0["uuid"] as? String == Self.hostile }, "JSON holds the name exactly")
    }

    @Test("error messages on stderr are escaped too, the JSON envelope is exact")
    func errors() throws {
        let path = "/nonexistent/x\u{1B}[31m\u{07}.sqlite"
        let r = USM.run(["status", "--store", path, "--json"])
        #expect(r.status == 66)
        #expect(!r.stderr.contains("\u{1B}") && !r.stderr.contains("\u{07}"))
        #expect(r.stderr.contains("x\\x1b[31m\\x07.sqlite"), "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["message"] as? String == "store not found: \(path)")
        let usage = USM.run(["status", "--bogus\u{1B}[2J"])
        #expect(usage.status == 64)
        #expect(!usage.stderr.contains("\u{1B}"), "\(usage.stderr)")
    }

    @Test("colours survive escaping; escapes from text cannot pose as colours")
    func colours() {
        var captured = ""
        let terminal = Terminal(
            colors: true, progress: false, interactive: false, out: { captured += $0 }, err: { _ in })
        terminal.out("a " + terminal.paint("ok", .green) + " \u{1B}[31mb")
        #expect(captured == "a \u{1B}[32mok\u{1B}[0m \\x1b[31mb\n")
        captured = ""
        let plain = Terminal(colors: false, progress: false, interactive: false, out: { captured += $0 }, err: { _ in })
        plain.out(plain.paint("ok", .red) + "\u{E000}[31m")
        #expect(captured == "ok\u{E000}[31m\n", "no colour without a terminal, and a look-alike marker stays text")
        #expect(
            Terminal.escape(FileSystemPath.string(fromBytes: [0x62, 0xFF])) == "b\\xff", "non-UTF-8 bytes print as \\x")
    }
}
