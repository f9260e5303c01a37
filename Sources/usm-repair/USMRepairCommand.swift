import ArgumentParser
import USMRepairCore

/// The `usm-repair` command: UbiquityStoreManager's maintenance and repair operations, offline.
@main
struct USMRepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usm-repair",
        abstract: "Inspect and repair UbiquityStoreManager / Core Data stores and iCloud containers, offline.",
        discussion: """
            Works directly on an app's files: the local and cloud Core Data SQLite stores (each with its \
            -wal, -shm, -journal and .<Name>_SUPPORT folder), the ubiquity container's CloudLogs with its \
            StoreUUID and CorruptedUUID markers, and the preferences plist holding USMCloudEnabledKey.

            Read-only commands never change a byte of your folders. Exit codes: 0 ok, 1 problems found, \
            2 bad input, 3 refused (symlink leaving the container), 64 usage, 66 not found, 74 I/O error.
            """,
        version: USMRepair.version,
        subcommands: [StatusCommand.self, CheckCommand.self, ArchiveCommand.self, RestoreCommand.self, BundleCommand.self]
    )
}
