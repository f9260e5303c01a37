import Foundation
import USMRepairCore

/// `none`: no data moves. A new destination gets the source's schema, `Z_PRIMARYKEY` rows with
/// the source's `Z_MAX` (counters never go down: keys handed out before are not handed out again),
/// metadata and model cache, so Core Data opens it as an empty store of the same model.
public struct NoneStrategy: MigrationStrategy {
    /// The strategy's self-description (`usm-repair strategies`).
    public static let description = StrategyDescription(
        id: "none", name: "No data",
        summary: "Creates an empty store with the source's schema, metadata and model cache; no rows move.",
        keeps:
            "the schema (tables, indexes, triggers), Z_PRIMARYKEY with the source's Z_MAX, the metadata (fresh UUID) and Z_MODELCACHE",
        limits: "no rows; with --into there is nothing to do, so it is refused",
        parameters: [], supportsMerge: false, rows: .none)

    /// Strategies hold no state.
    public init() {}

    /// The steps `--dry-run` prints.
    public func plan(_ job: MigrationJob) throws -> [MigrationStep] {
        [
            MigrationStep(
                "create \(job.destination.lastPathComponent) with the source's schema and no rows",
                why: "the app opens it as an empty store of the same model")
        ]
    }

    /// Fills the staged store of `job`.
    public func migrate(_ job: MigrationJob) throws -> MigrationOutcome {
        try StagedStore.cloneSchema(from: job.source, to: job.destination, keepCounters: true)
        return MigrationOutcome(steps: try plan(job))
    }
}
