import Foundation
import USMRepairCore

/// `ios`: the whole-store copy, the analogue of Core Data's `migratePersistentStore`. Every page
/// of the private copy (WAL folded in) is copied with SQLite's backup API, history and CloudKit
/// tables included; the engine then gives the copy its own identity.
public struct IOSStrategy: MigrationStrategy {
    /// The strategy's self-description (`usm-repair strategies`).
    public static let description = StrategyDescription(
        id: "ios", name: "iOS-style whole-store copy",
        summary: "Copies the whole store page by page (WAL included), then rewrites its metadata for the destination.",
        keeps:
            "every table and row, history and CloudKit mirror tables included; keys, Z_MAX and the model cache as they are",
        limits: "creates a new store only (no --into); the destination must be new or replaced with --overwrite",
        parameters: ["--keep-ubiquity-metadata: keep com.apple.coredata.ubiquity.* keys"],
        supportsMerge: false, rows: .all)

    /// Strategies hold no state.
    public init() {}

    /// The steps `--dry-run` prints.
    public func plan(_ job: MigrationJob) throws -> [MigrationStep] {
        [
            MigrationStep(
                "copy every page of the source into \(job.destination.lastPathComponent)",
                why: "SQLite's backup API from the private copy keeps page size, auto-vacuum, encoding and every row"),
            MigrationStep(
                "new Z_UUID; ubiquity keys \(job.options.keepUbiquityMetadata ? "kept" : "removed")",
                why: "a new store must not share the source's identity or its iCloud ties"),
        ]
    }

    /// Fills the staged store of `job`.
    public func migrate(_ job: MigrationJob) throws -> MigrationOutcome {
        try StagedStore.copyWhole(from: job.source, to: job.destination)
        return MigrationOutcome(steps: try plan(job))
    }
}
