import Foundation
import USMRepairCore

/// `copy-entities` (the default): every user entity's rows, attributes and relationships, copied
/// in bulk SQL from the attached source. Into a new store the keys are kept; into an existing one
/// (`--into`) entities are matched by name, keys move above the destination's `Z_MAX`, and
/// uniqueness conflicts are refused or resolved with `--on-conflict`.
public struct CopyEntitiesStrategy: MigrationStrategy {
    /// The strategy's self-description (`usm-repair strategies`).
    public static let description = StrategyDescription(
        id: "copy-entities", name: "Copy entities",
        summary:
            "Copies every entity, attribute and relationship into a new store or, with --into, merges them into an existing one.",
        keeps:
            "every user entity's rows and relationships (to-one, polymorphic to-one, to-many, many-to-many, ordered); into a new store, CloudKit mirroring (ANSCK*) rows with the keys they name; every Z_MAX at least the source's; metadata without ubiquity keys (a merge keeps the destination's keys over the source's, and the destination's versioning keys alone)",
        limits:
            "persistent-history (A*) tables are not copied; in a merge, CloudKit mirroring rows cannot follow the moved keys, so a source holding some is refused unless --drop-cloudkit; a merge needs entities of the same names and compatible column types",
        parameters: [
            "--into: merge into an existing store",
            "--on-conflict refuse|keep-destination|keep-source: rows that break a uniqueness constraint",
        ],
        supportsMerge: true, rows: .userEntities)

    /// Strategies hold no state.
    public init() {}

    /// The steps `--dry-run` prints.
    public func plan(_ job: MigrationJob) throws -> [MigrationStep] {
        var steps: [MigrationStep] = []
        if !job.isMerge {
            steps.append(
                MigrationStep(
                    "create \(job.destination.lastPathComponent) with the source's schema",
                    why: "a new store of the same model; Z_MAX kept so the keys can be too"))
        }
        let entities = job.sourceSchema.userEntities.map(\.name).joined(separator: ", ")
        steps.append(
            MigrationStep(
                job.isMerge ? "merge the rows of \(entities)" : "copy the rows of \(entities)",
                why: job.isMerge
                    ? "entities matched by name, keys moved above the destination's Z_MAX, every reference moved with them; uniqueness conflicts: \(job.options.onConflict.rawValue)"
                    : "one INSERT ... SELECT per table inside one transaction, keys kept"))
        let history = job.sourceSchema.systemTables.filter { !$0.uppercased().hasPrefix("ANSCK") }
        let cloudKit = try EntityCopy.cloudKitRows(job.source, schema: job.sourceSchema)
        if !history.isEmpty {
            steps.append(
                MigrationStep(
                    "leave out \(history.joined(separator: ", "))",
                    why: "persistent history records the source's own changes; its counters are kept"))
        }
        if !cloudKit.isEmpty {
            if !job.isMerge {
                steps.append(
                    MigrationStep(
                        "carry \(cloudKit.map(\.table).joined(separator: ", ")) as they are",
                        why:
                            "every object keeps its key, so the rows tying objects to their CloudKit records stay right"
                    ))
            } else if job.options.dropCloudKit {
                steps.append(
                    MigrationStep(
                        "leave out \(cloudKit.map(\.table).joined(separator: ", ")) (--drop-cloudkit)",
                        why: "in a merge the objects' keys move; CloudKit exports the merged objects as new records"))
            } else {
                throw EntityCopy.cloudKitRefusal(
                    cloudKit, why: "in a merge the objects' keys move, so these rows cannot come along")
            }
        }
        return steps
    }

    /// Fills the staged store of `job`.
    public func migrate(_ job: MigrationJob) throws -> MigrationOutcome {
        if !job.isMerge { try StagedStore.cloneSchema(from: job.source, to: job.destination, keepCounters: true) }
        let copied = try MigrationSession.run(job) { try $0.copyEntities(.identity) }
        var steps = try plan(job)
        steps.append(MigrationStep("SQL run", why: "the statements of the copy, in order", sql: copied.sql))
        var outcome = MigrationOutcome(
            rows: copied.rows, deduplicated: copied.deduplicated, leftOut: copied.leftOut, notes: copied.notes,
            steps: steps)
        outcome.carried = copied.carried
        outcome.matched = copied.matched
        return outcome
    }
}
