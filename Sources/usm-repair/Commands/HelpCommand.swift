import ArgumentParser
import USMRepairCore

/// `usm-repair help [TOPIC | SUBCOMMAND...]`: a command's help, or one of the reference tables
/// the binary carries itself, so that an installed tool needs no file beside it to explain an
/// exit code or a problem code. (It takes the place of argument-parser's own `help`, which it
/// does for subcommands too.)
struct HelpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "help",
        abstract: "Show a command's help, or a reference: exit-codes, problems, next-steps.",
        discussion: """
            Examples:
              usm-repair help exit-codes
              usm-repair help problems
              usm-repair help next-steps
              usm-repair help delete container
            """)

    /// The reference topics.
    enum Topic: String, CaseIterable {
        case exitCodes = "exit-codes"
        case problems
        case nextSteps = "next-steps"
    }

    @Argument(help: ArgumentHelp("exit-codes, problems, next-steps, or a command (e.g. delete container).", valueName: "topic"),
              completion: .list(["exit-codes", "problems", "next-steps"]))
    var topic: [String] = []

    mutating func run() throws {
        print(try render(), terminator: "")
    }

    /// What the command prints: the topic's text, or the help of the command named.
    func render() throws -> String {
        if let first = topic.first, let chosen = Topic(rawValue: first), topic.count == 1 {
            return Self.text(chosen)
        }
        var command: ParsableCommand.Type = USMRepairCommand.self
        for word in topic {
            guard let next = command.configuration.subcommands.first(where: { $0.configuration.commandName == word }) else {
                throw ValidationError("no command or topic '\(word)': try exit-codes, problems, next-steps or a command name")
            }
            command = next
        }
        return USMRepairCommand.helpMessage(for: command) + "\n"
    }

    /// The text of a topic, ending with a newline.
    static func text(_ topic: Topic) -> String {
        switch topic {
        case .exitCodes:
            var lines = ["Exit codes of usm-repair (the JSON envelope's exitCode and exitStatus):", ""]
            for status in ExitStatus.allCases.sorted(by: { $0.rawValue < $1.rawValue }) {
                lines.append("  " + "\(status.rawValue)".padding(toLength: 4, withPad: " ", startingAt: 0)
                             + status.name.padding(toLength: 22, withPad: " ", startingAt: 0) + status.meaning)
            }
            lines += ["", "When several stores give different answers, the worst wins (3 over 75 over 74 over 66 over 2 over 1 over 0)."]
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
