import CSupport
import Foundation

/// How wide text for a person may be (`Terminal` wraps to it): `COLUMNS` when set (POSIX's
/// override, as `ls` and Python's argparse read it), else the width of the terminal stdout is
/// (`TIOCGWINSZ`), else nil: output that goes to a file or a pipe keeps its lines whole, as `git`
/// and `ls` do, so `grep` finds a line and a script reads what a person would (scripts use `--json`,
/// which is never wrapped).
public enum TerminalWidth {
    /// The narrowest width honoured: below it lines would break into single words.
    public static let minimum = 40

    public static func columns(environment: [String: String], terminalColumns: () -> Int?) -> Int? {
        if let text = environment["COLUMNS"], let value = Int(text.trimmingCharacters(in: .whitespaces)), value > 0 {
            return max(minimum, value)
        }
        return terminalColumns().map { max(minimum, $0) }
    }

    /// The width of the terminal on `fd`, nil when it is none or does not say.
    public static func ofTerminal(_ fd: Int32) -> Int? {
        let columns = Int(usm_terminal_columns(fd))
        return columns > 0 ? columns : nil
    }
}
