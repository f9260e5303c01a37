import ArgumentParser
import USMRepairCore

/// `usm-repair check`: every Core Data invariant, with an exit code scripts can rely on.
struct CheckCommand: USMCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Verify every Core Data invariant of every store in the layout (read-only).",
        discussion: """
            SQLite integrity_check; Z_METADATA; Z_MAX against the largest Z_PK of each hierarchy; every \
            Z_ENT known and in its hierarchy's table; to-one keys and join-table rows pointing at \
            existing rows; external-data references against the files in .<Name>_SUPPORT/_EXTERNAL_DATA \
            (0x02, external storage) and .<Name>_SUPPORT/_FBF (0x03, file-backed futures, with their \
            sizes), and files nobody references; iCloud metadata left in a local store; a WAL-mode store \
            without its -wal; malformed markers and preferences; leftover temporary stores.

            Problems are errors, warnings or information. Errors fail the check; warnings fail it \
            with --strict; information (a WAL-mode store closed cleanly, without its -wal) never \
            does. Problems accepted with --ignore are still printed, marked "(ignored)".

            Exit codes: 0 every invariant holds; 1 problems found (errors, or warnings with \
            --strict, not accepted with --ignore); 2 a store could not be read as Core Data; \
            3 refused; 64 usage; 66 not found; 74 I/O error; 75 no room for the private copy.

            Examples:
              usm-repair check --container Customer.xcappdata
              usm-repair check --store Customer.sqlite --strict
              usm-repair check --app-dir "Application Support" --json
            """
    )

    @OptionGroup(title: "Layout") var layout: LayoutFlags
    @OptionGroup(title: "Output") var output: OutputFlags

    @Option(
        name: .customLong("ignore"), parsing: .singleValue,
        help: ArgumentHelp(
            "Accept a problem code (e.g. external-data-orphan): still reported, marked ignored, no longer fails the check. Repeatable.",
            valueName: "code"), completion: .list(ProblemCode.allCases.map(\.rawValue)))
    var ignore: [String] = []

    @Flag(name: .customLong("strict"), help: "Fail on warnings too, not only on errors.")
    var strict = false

    func validate() throws {
        let unknown = ignore.filter { ProblemCode(rawValue: $0) == nil }
        if !unknown.isEmpty {
            throw ValidationError(
                "unknown problem code(s) for --ignore: \(unknown.joined(separator: ", ")); usm-repair help problems lists them"
            )
        }
    }

    func run(_ context: CommandContext) throws {
        try context.report(
            Inspection(
                options: layout.options(context.paths), depth: .check,
                ignoredCodes: Set(ignore.compactMap(ProblemCode.init(rawValue:))), strict: strict))
    }
}
