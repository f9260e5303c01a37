import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where output goes and how it may look: colour only on a terminal without NO_COLOR, progress
/// only when stderr is a terminal.
struct Terminal {
    let colors: Bool
    let progressEnabled: Bool
    /// The last percentage drawn, so the bar is redrawn only when it moves.
    private let lastPercent = Box(-1)

    private final class Box {
        var value: Int
        init(_ value: Int) { self.value = value }
    }

    init(quiet: Bool, json: Bool) {
        let env = ProcessInfo.processInfo.environment
        let noColor = env["NO_COLOR"].map { !$0.isEmpty } ?? false
        colors = !json && !noColor && env["TERM"] != "dumb" && isatty(STDOUT_FILENO) == 1
        progressEnabled = !quiet && isatty(STDERR_FILENO) == 1
    }

    enum Style: String {
        case red = "31", green = "32", yellow = "33", bold = "1", dim = "2"
    }

    func paint(_ text: String, _ style: Style) -> String {
        colors ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    func out(_ line: String = "") {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// A one-line progress note on stderr, overwritten by the next one.
    func progress(_ index: Int, _ count: Int, _ path: String) {
        guard progressEnabled else { return }
        let name = URL(fileURLWithPath: path).lastPathComponent
        FileHandle.standardError.write(Data("\r\u{1B}[K[\(index + 1)/\(count)] reading \(name)".utf8))
    }

    /// A progress bar of bytes done, overwritten in place.
    func progressBytes(_ done: Int64, _ total: Int64) {
        guard progressEnabled, total > 0 else { return }
        let width = 30
        let filled = Int(Double(width) * Double(min(done, total)) / Double(total))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let percent = Int(100 * Double(min(done, total)) / Double(total))
        guard percent != lastPercent.value else { return }
        lastPercent.value = percent
        FileHandle.standardError.write(Data("\r\u{1B}[K[\(bar)] \(percent)%".utf8))
    }

    /// True when stdin is a terminal a person can answer.
    var interactive: Bool { isatty(STDIN_FILENO) == 1 }

    /// Asks a yes/no question on stderr; only a "y" or "yes" answer is yes.
    func ask(_ question: String) -> Bool {
        guard interactive else { return false }
        FileHandle.standardError.write(Data("\(question) [y/N] ".utf8))
        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return answer == "y" || answer == "yes"
    }

    func endProgress() {
        guard progressEnabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
