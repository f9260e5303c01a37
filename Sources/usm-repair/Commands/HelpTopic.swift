import USMRepairCore

/// `usm-repair help exit-codes|problems|next-steps`: the references the binary carries itself, so
/// that an installed tool needs no file beside it to explain an exit code, a problem code or the
/// way back to the device. `usm-repair help COMMAND` stays argument-parser's own (a second `help`
/// subcommand would shadow it in completion scripts and repeat in the man page), so the topics
/// are answered before parsing (`USMRepairCommand.execute`).
enum HelpTopic: String, CaseIterable {
    case exitCodes = "exit-codes"
    case problems
    case nextSteps = "next-steps"

    /// The topic `arguments` ask for (`help TOPIC`), if they ask for one.
    static func requested(_ arguments: [String]) -> HelpTopic? {
        guard arguments.count == 2, arguments[0] == "help" else { return nil }
        return HelpTopic(rawValue: arguments[1])
    }

    /// The topic's text, ending with a newline.
    var text: String {
        switch self {
        case .exitCodes:
            var lines = ["Exit codes of usm-repair (the JSON envelope's exitCode and exitStatus):", ""]
            for status in ExitStatus.allCases.sorted(by: { $0.rawValue < $1.rawValue }) {
                lines.append(
                    "  " + "\(status.rawValue)".padding(toLength: 4, withPad: " ", startingAt: 0)
                        + status.name.padding(toLength: 22, withPad: " ", startingAt: 0) + status.meaning)
            }
            lines += [
                "",
                "When several stores give different answers, the worst wins (3 over 75 over 74 over 66 over 2 over 1 over 0).",
            ]
            return lines.joined(separator: "\n") + "\n"
        case .problems:
            var lines = ["Problem codes (status, check; check --ignore CODE accepts one):", ""]
            for code in ProblemCode.allCases {
                lines.append("  \(code.rawValue) (\(code.severity.rawValue)): \(code.summary)")
            }
            return lines.joined(separator: "\n") + "\n"
        case .nextSteps:
            return NextStep.guide + "\n"
        }
    }
}
