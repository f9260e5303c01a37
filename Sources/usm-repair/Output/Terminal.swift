import Foundation
import USMRepairCore
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where output goes and how it may look: colour only when stdout is a terminal and `NO_COLOR`
/// is unset, progress only when stderr is a terminal. Built from facts (`live` reads the
/// process's), so commands run in tests with captured output.
///
/// Every line of text passes `escape` here, the one place, so no printer can forget: a file name
/// holding ESC, BEL or a line break prints as `\x1b`, `\x07`, `\n` instead of reaching the
/// terminal. JSON (`json`) goes out exact.
final class Terminal {
    /// Receives one chunk of text for stdout or stderr.
    typealias Sink = (String) -> Void
    /// Receives text for stderr from any thread (progress from inside a migration).
    typealias ErrorSink = @Sendable (String) -> Void

    let colors: Bool
    let progressEnabled: Bool
    /// The width lines of text are wrapped to (`TerminalWidth`); nil: lines stay whole.
    let width: Int?
    /// True when a person can answer a question on stdin.
    let interactive: Bool
    private let writeOut: Sink
    private let writeErr: ErrorSink
    private let readAnswer: () -> String?
    /// The first failure to write stdout (a full disk, an I/O error), if any: the command then
    /// ends with its exit code once its work is done.
    let outputFailure: () -> USMError?
    /// The last percentage drawn, so the bar is redrawn only when it moves.
    private var lastPercent = -1

    init(
        colors: Bool, progress: Bool, interactive: Bool, out: @escaping Sink, err: @escaping ErrorSink,
        readAnswer: @escaping () -> String? = { nil }, outputFailure: @escaping () -> USMError? = { nil },
        width: Int? = nil
    ) {
        self.colors = colors
        self.width = width
        progressEnabled = progress
        self.interactive = interactive
        writeOut = out
        writeErr = err
        self.readAnswer = readAnswer
        self.outputFailure = outputFailure
    }

    /// The process's own terminal, as the environment and `isatty` describe it.
    static func live(quiet: Bool, json: Bool, environment env: [String: String]) -> Terminal {
        let noColor = env["NO_COLOR"].map { !$0.isEmpty } ?? false
        return Terminal(
            colors: !json && !noColor && env["TERM"] != "dumb" && isatty(STDOUT_FILENO) == 1,
            progress: !quiet && isatty(STDERR_FILENO) == 1,
            interactive: isatty(STDIN_FILENO) == 1,
            out: { StandardStream.output.write($0) },
            err: { StandardStream.error.write($0) },
            readAnswer: { readLine() }, outputFailure: { StandardStream.output.failure },
            width: json
                ? nil
                : TerminalWidth.columns(environment: env) {
                    isatty(STDOUT_FILENO) == 1 ? TerminalWidth.ofTerminal(STDOUT_FILENO) ?? 80 : nil
                })
    }

    enum Style: String {
        case red = "31"
        case green = "32"
        case yellow = "33"
        case bold = "1"
        case dim = "2"
    }

    /// Stands for ESC in painted text until the line is escaped: random per run, so text from a
    /// file name cannot forge it.
    private let escapeMarker = "\u{E000}" + UUID().uuidString.prefix(8) + "\u{E001}"

    func paint(_ text: String, _ style: Style) -> String {
        colors ? "\(escapeMarker)[\(style.rawValue)m\(text)\(escapeMarker)[0m" : text
    }

    /// One line of text on stdout, control characters escaped, wrapped to `width`.
    func out(_ line: String = "") {
        writeOut(render(line, wrap: true) + "\n")
    }

    /// One line of text on stdout, control characters escaped, never wrapped (a DOT graph).
    func outWhole(_ line: String) {
        writeOut(render(line) + "\n")
    }

    /// JSON for stdout as it is, without a line break (output written in pieces; never text).
    func write(_ text: String) {
        writeOut(text)
    }

    /// One line of text on stderr, control characters escaped.
    func err(_ line: String) {
        writeErr(render(line) + "\n")
    }

    /// JSON on stdout, exactly as encoded.
    func json(_ text: String) {
        writeOut(text + "\n")
    }

    private func render(_ line: String, wrap: Bool = false) -> String {
        var escaped = Self.escape(line)
        if wrap, let width {
            let marker = escapeMarker
            escaped = TextWrap.wrap(escaped, width: width) { Self.removingColours($0, marker: marker) }
                .joined(separator: "\n")
        }
        return colors ? escaped.replacingOccurrences(of: escapeMarker, with: "\u{1B}") : escaped
    }

    /// Text made safe for a terminal: C0 controls, DEL, C1 controls and Unicode line and paragraph
    /// separators become visible escapes (`\n`, `\t`, `\x1b`, `\u{85}`...), and the bytes of a file
    /// name that are not UTF-8 (see `FileSystemPath`) print as `\xff`.
    static func escape(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x00...0x1F, 0x7F: out += "\\x" + hex(scalar.value, 2)
            case 0xF700...0xF7FF: out += "\\x" + hex(scalar.value - 0xF700, 2)
            default: out += "\\u{" + hex(scalar.value, 2) + "}"
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0xF700...0xF7FF: true
        default: false
        }
    }

    /// `text` without the colour escapes `paint` put in (marker, `[`, digits, `m`): what takes columns.
    private static func removingColours(_ text: Substring, marker: String) -> String {
        guard text.contains(marker.first ?? " ") else { return String(text) }
        var out = ""
        var rest = text
        while let range = rest.range(of: marker) {
            out += rest[..<range.lowerBound]
            rest = rest[range.upperBound...]
            if let end = rest.firstIndex(of: "m") { rest = rest[rest.index(after: end)...] }
        }
        return out + rest
    }

    private static func hex(_ value: UInt32, _ width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// A one-line progress note on stderr, overwritten by the next one.
    func progress(_ index: Int, _ count: Int, _ path: String) {
        guard progressEnabled else { return }
        let name = Self.escape(URL(fileURLWithPath: path).lastPathComponent)
        writeErr("\r\u{1B}[K[\(index + 1)/\(count)] reading \(name)")
    }

    /// A one-line progress note of free text on stderr, overwritten by the next one.
    func progressLine(_ text: String) {
        guard progressEnabled else { return }
        writeErr("\r\u{1B}[K\(text.prefix(100))")
    }

    /// Where the core's phase notes (`ProgressNote`) go: the progress line, nil when progress is not shown.
    func noteSink() -> ProgressNote.Sink? {
        guard progressEnabled else { return nil }
        let write = writeErr
        return { text in write("\r\u{1B}[K" + Self.escape(String(text.prefix(100)))) }
    }

    /// A progress line of rows copied (`building: 1200 of 5000 rows copied`), for a migration's
    /// strategy to call from wherever it runs; nothing when progress is not shown.
    func rowCounter(_ what: String) -> @Sendable (Int64, Int64) -> Void {
        guard progressEnabled else { return { _, _ in } }
        let write = writeErr
        return { done, total in
            guard total > 0 else { return }
            write("\r\u{1B}[K\(what): \(done) of \(total) rows copied")
        }
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
        writeErr("\(render(question)) [y/N] ")
        let answer = readAnswer()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return answer == "y" || answer == "yes"
    }

    func endProgress() {
        guard progressEnabled else { return }
        writeErr("\r\u{1B}[K")
        lastPercent = -1
    }
}
