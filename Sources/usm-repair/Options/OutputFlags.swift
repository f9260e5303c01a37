import ArgumentParser

/// How results are printed; shared by every command.
struct OutputFlags: ParsableArguments {
    @Flag(name: .long, help: "Print a JSON report on stdout (schema in docs/json-report.md) instead of text.")
    var json = false

    @Flag(name: [.short, .long], help: "Print only problems and errors.")
    var quiet = false

    @Flag(
        name: [.short, .long],
        help: """
            Say more: status and check print every entity with its row count and every file; archive \
            lists every item left out; bundle verify and restore print every entry as it is checked or written.
            """)
    var verbose = false

    func validate() throws {
        if quiet && verbose { throw ValidationError("--quiet and --verbose cannot be used together") }
    }
}
