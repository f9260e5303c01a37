import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where output goes and how it may look: colour only when stdout is a terminal and `NO_COLOR`
/// is unset, progress only when stderr is a terminal. Built from facts (`live` reads the
/// process's), so commands run in tests with captured output.
final class Terminal {
    /// Receives one chunk of text for stdout or stderr.
    typealias Sink = (String) -> Void

    let colors: Bool
    let progressEnabled: Bool
    /// True when a person can answer a question on stdin.
    let interactive: Bool
    private let writeOut: Sink
    private let writeErr: Sink
    private let readAnswer: () -> String?
    /// The last percentage drawn, so the bar is redrawn only when it moves.
    private var lastPercent = -1

    init(colors: Bool, progress: Bool, interactive: Bool, out: @escaping Sink, err: @escaping Sink,
         readAnswer: @escaping () -> String? = { nil }) {
        self.colors = colors
        progressEnabled = progress
        self.interactive = interactive
        writeOut = out
        writeErr = err
        self.readAnswer = readAnswer
    }

    /// The process's own terminal, as the environment and `isatty` describe it.
    static func live(quiet: Bool, json: Bool) -> Terminal {
        let env = ProcessInfo.processInfo.environment
        let noColor = env["NO_COLOR"].map { !$0.isEmpty } ?? false
        return Terminal(
            colors: !json && !noColor && env["TERM"] != "dumb" && isatty(STDOUT_FILENO) == 1,
            progress: !quiet && isatty(STDERR_FILENO) == 1,
            interactive: isatty(STDIN_FILENO) == 1,
            out: { FileHandle.standardOutput.write(Data($0.utf8)) },
            err: { FileHandle.standardError.write(Data($0.utf8)) },
            readAnswer: { readLine() })
    }

    enum Style: String {
        case red = "31", green = "32", yellow = "33", bold = "1", dim = "2"
    }

    func paint(_ text: String, _ style: Style) -> String {
        colors ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    func out(_ line: String = "") {
        writeOut(line + "\n")
    }

    /// Text for stdout as it is, without a line break (output written in pieces).
    func write(_ text: String) {
        writeOut(text)
    }

    func err(_ line: String) {
        writeErr(line + "\n")
    }

    /// A one-line progress note on stderr, overwritten by the next one.
    func progress(_ index: Int, _ count: Int, _ path: String) {
        guard progressEnabled else { return }
        let name = URL(fileURLWithPath: path).lastPathComponent
        writeErr("\r\u{1B}[K[\(index + 1)/\(count)] reading \(name)")
    }

    /// A one-line progress note of free text on stderr, overwritten by the next one.
    func progressLine(_ text: String) {
        guard progressEnabled else { return }
        writeErr("\r\u{1B}[K\(text.prefix(100))")
    }

    /// A progress bar of bytes done, overwritten in place.
    func progressBytes(_ done: Int64, _ total: Int64) {
        guard progressEnabled, total > 0 else { return }
        let width = 30
        let filled = Int(Double(width) * Double(min(done, total)) / Double(total))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let percent = Int(100 * Double(min(done, total)) / Double(total))
        guard percent != lastPercent else { return }
        lastPercent = percent
        writeErr("\r\u{1B}[K[\(bar)] \(percent)%")
    }

    /// Asks a yes/no question on stderr; only a "y" or "yes" answer is yes. Never asks without a terminal.
    func ask(_ question: String) -> Bool {
        guard interactive else { return false }
        writeErr("\(question) [y/N] ")
        let answer = readAnswer()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return answer == "y" || answer == "yes"
    }

    func endProgress() {
        guard progressEnabled else { return }
        writeErr("\r\u{1B}[K")
        lastPercent = -1
    }
}
