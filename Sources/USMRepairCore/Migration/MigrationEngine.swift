import Foundation
import GRDB

/// One migration asked for: values only, so the CLI and the maintenance operations call it alike.
public struct MigrationRequest: Sendable {
    /// Whether the destination is new, merged into, or replaced.
    public enum Mode: String, Sendable, Encodable {
        /// The destination must not exist.
        case create
        /// The destination exists and receives the source's rows (`--into`).
        case merge
        /// The destination, if it exists, is snapshotted and replaced (`--overwrite`).
        case overwrite
    }

    /// The source store's file set (read only, through a private copy).
    public var source: StoreFileSet
    /// The destination store's file set.
    public var destination: StoreFileSet
    /// The strategy id (`ios`, `copy-entities`, `manual`, `none`).
    public var strategy: String
    /// Create, merge or overwrite.
    public var mode: Mode
    /// The user's options.
    public var options: MigrationOptions

    /// Creates a request.
    public init(
        source: StoreFileSet, destination: StoreFileSet, strategy: String = StrategyRegistry.defaultID,
        mode: Mode = .create, options: MigrationOptions = MigrationOptions()
    ) {
        self.source = source
        self.destination = destination
        self.strategy = strategy
        self.mode = mode
        self.options = options
    }

    /// The strategy as a plan's build step carries it.
    public var choice: StrategyChoice {
        var choice = StrategyChoice(
            id: strategy, recipe: options.recipe, plugin: options.plugin, parameters: options.parameters,
            onConflict: options.onConflict,
            timeout: options.pluginTimeout, dropCloudKit: options.dropCloudKit)
        if options.allowDuplicates { choice.allowDuplicates = true }
        return choice
    }
}

/// The migration engine: captures the source, runs the chosen strategy into a staged store,
/// gives the result its identity, copies its external data and verifies it. It installs nothing:
/// every change to the user's folders is a plan run by `PlanExecutor` (snapshot, retire, install,
/// journal, recovery), `migrate-store` (`MigrateStoreChange`) as much as the maintenance operations.
public struct MigrationEngine: Sendable {
    /// The strategies to choose from.
    public let registry: StrategyRegistry

    /// Creates an engine over `registry`.
    public init(registry: StrategyRegistry) {
        self.registry = registry
    }

    /// What `build` would do, for `--dry-run`: the source captured and counted, the strategy's
    /// steps with their SQL, the rows it starts from. Nothing is written but a private scratch folder.
    public func preview(
        source: StoreFileSet, shownAs destination: StoreFileSet, strategy: String, options: MigrationOptions,
        mergeInto: StoreFileSet?, mode: MigrationRequest.Mode
    ) throws -> MigrationReport {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-preview")
        defer { scratch.remove() }
        let staged = StoreFileSet(main: scratch.url.appendingPathComponent(destination.fileName))
        return try buildStaged(
            source: source, staged: staged, shownAs: destination, strategy: strategy, options: options,
            mergeInto: mergeInto,
            mode: mode.rawValue, dryRun: true
        ).0
    }

    /// Builds a verified store at `staged` from `source` and installs nothing: the entry point for
    /// operations that install with their own plan (snapshot, retire, install, journal). The
    /// folder of `staged` must exist; only `staged` and its `_SUPPORT` folder are written (removed
    /// again on failure). With `mergeInto`, the staged store starts as a copy of that store.
    /// Rows per entity of the result are the report's `entities[].after`.
    public func build(
        source: StoreFileSet, staged: URL, shownAs destination: StoreFileSet? = nil,
        strategy: String = StrategyRegistry.defaultID,
        options: MigrationOptions = MigrationOptions(), mergeInto: StoreFileSet? = nil,
        mode: MigrationRequest.Mode? = nil,
        progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) throws -> MigrationReport {
        let files = StoreFileSet(main: staged)
        guard FileStatus.lookup(source.main.path) != nil else {
            throw USMError.notFound(path: source.main.path, what: "source store")
        }
        if let mergeInto,
            !(try registry.description(of: strategy)).supportsMerge || FileStatus.lookup(mergeInto.main.path) == nil
        {
            throw USMError.usage("cannot merge into \(mergeInto.main.path) with \(strategy)")
        }
        guard files.existingMembers().isEmpty else { throw USMError.destinationExists(path: staged.path) }
        do {
            return try buildStaged(
                source: source, staged: files, shownAs: destination ?? files, strategy: strategy, options: options,
                mergeInto: mergeInto,
                mode: (mode ?? (mergeInto == nil ? .create : .merge)).rawValue, dryRun: false, progress: progress
            ).0
        } catch {
            for member in files.existingMembers() { try? FileManager.default.removeItem(at: member) }
            throw error
        }
    }

    /// Capture, strategy, identity, external data, verification and the finished form, into `staged`.
    func buildStaged(
        source: StoreFileSet, staged: StoreFileSet, shownAs destination: StoreFileSet, strategy id: String,
        options: MigrationOptions, mergeInto: StoreFileSet?, mode: String, dryRun: Bool,
        progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) throws -> (MigrationReport, CapturedStore?) {
        let started = Date()
        var clock = started
        func lap(_ name: String, into report: inout MigrationReport) {
            let now = Date()
            report.durations[name] = now.timeIntervalSince(clock)
            PhaseTimings.note("engine \(name)", seconds: now.timeIntervalSince(clock))
            clock = now
        }
        let strategy = try registry.strategy(id)
        let description = type(of: strategy).description
        let merge = mergeInto != nil
        let scratch = try TemporaryDirectory(prefix: "usm-repair-migrate")
        defer { scratch.remove() }
        // 1. The source (and a merge's destination) through consistent private copies.
        // The plan's comparison may have captured them already in this command (`CaptureCache`).
        let cache = CaptureCache.current
        let sourceSide =
            try cache?.capture(source, role: "source", model: options.model, readsRows: description.rows != .none)
            ?? Self.capture(
                source, into: scratch.url.appendingPathComponent("source"), role: "source", model: options.model,
                readsRows: description.rows != .none)
        let destinationSide = try mergeInto.map {
            try cache?.capture($0, role: "destination")
                ?? Self.capture($0, into: scratch.url.appendingPathComponent("destination"), role: "destination")
        }
        var report = MigrationReport(
            strategy: description.id, mode: mode, dryRun: dryRun,
            source: .init(path: source.main.path, storeUUID: sourceSide.report.storeUUID),
            destination: .init(path: destination.main.path, storeUUID: destinationSide?.report.storeUUID))
        lap("capture", into: &report)

        let job = MigrationJob(
            source: sourceSide.copy, sourceSchema: sourceSide.schema,
            sourceExternalData: (options.supportFilesOf ?? source).externalDataDirectory,
            destination: staged.main, destinationSchema: destinationSide?.schema,
            scratch: scratch.url.appendingPathComponent("strategy", isDirectory: true), options: options,
            dryRun: dryRun, progress: progress)
        try FileManager.default.createDirectory(at: job.scratch, withIntermediateDirectories: true)

        if dryRun {
            report.steps = try strategy.plan(job)
            report.steps.append(
                MigrationStep(
                    "verify",
                    why:
                        "integrity_check, every invariant of check, rows per entity and content digests, before anything is installed"
                ))
            report.entities = Self.rowsBefore(sourceSide.report, destinationSide?.report)
            return (report, destinationSide)
        }
        // One connection per private copy stays open until the end: the copies' WAL index is built
        // once, before the two readers below start, instead of by whichever opens first.
        let holders = try ([sourceSide.copy] + (destinationSide.map { [$0.copy] } ?? [])).map { copy in
            let queue = try StagedStore.open(copy, readonly: true)
            _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master") }
            return queue
        }
        defer { for holder in holders { try? holder.close() } }
        // The content digests of the source (and of a merge's destination as it was), read once
        // from the private copies on another thread while the strategy runs: the provenance and
        // the verification both use them (the copies are private and read-only, so they cannot change).
        // With a `CaptureCache`, digests the plan's comparison already read are not read again.
        let sourceInput = sourceSide
        let destinationInput = destinationSide
        let inputDigests =
            description.rows == .none
            ? nil
            : Background { () throws -> InputDigests in
                func read(_ side: CapturedStore) throws -> ContentDigest.Read {
                    try cache?.digests(of: side) ?? ContentDigest.read(side.copy, schema: side.schema)
                }
                let source = try read(sourceInput)
                let before = try destinationInput.map { try read($0) }
                return InputDigests(
                    source: source.digests, sourceColumns: source.columns,
                    before: before?.digests ?? [:], beforeColumns: before?.columns ?? [:])
            }
        defer { _ = try? inputDigests?.value() }
        // The files the source's rows refer to, copied beside the strategy where its result
        // refers to the same files (`ExternalDataCopy.run` copies what is left and removes extras).
        let stagedFiles = staged
        let externalSource = options.supportFilesOf ?? source
        let prefetch: Background<[ExternalData.Kind: Set<String>]>? =
            description.rows == .all || description.rows == .userEntities
            ? Background {
                try PhaseTimings.measure("external data beside the strategy") {
                    try ExternalDataCopy.prefetch(
                        staged: stagedFiles, copy: sourceInput.copy, schema: sourceInput.schema, from: externalSource)
                }
            } : nil
        defer { _ = try? prefetch?.value() }
        if let destinationSide { try StagedStore.copyWhole(from: destinationSide.copy, to: staged.main) }

        // 2. The strategy.
        let outcome: MigrationOutcome
        do {
            outcome = try strategy.migrate(job)
        } catch let error as USMError {
            // Errors name the user's destination, not the staging folder.
            switch error {
            case let .schemaMismatch(_, detail):
                throw USMError.schemaMismatch(path: destination.main.path, detail: detail)
            case let .writeFailed(_, reason):
                throw USMError.writeFailed(path: destination.directory.path, reason: reason)
            default: throw error
            }
        } catch {
            throw StagedStore.wrapWrite(error, path: staged.main)
        }
        guard FileStatus.resolve(staged.main.path)?.kind == .file else {
            throw USMError.verificationFailed(path: destination.main.path, detail: "the strategy produced no store")
        }
        report.steps = outcome.steps
        report.recipe = outcome.recipe
        report.recipeSHA256 = outcome.recipeSHA256
        report.plugin = outcome.plugin
        report.leftOut = outcome.leftOut
        report.notes = outcome.notes
        report.deduplicated = outcome.deduplicated
        report.matched = outcome.matched
        lap("strategy", into: &report)

        // 3. Counters, identity and external data.
        do {
            // What needs no provenance runs first: the source's digests are read beside it.
            try PhaseTimings.measure("identity: journal mode") { try Self.deleteJournalMode(staged.main) }
            // Installed stores have counters at or above their keys: Core Data hands out Z_MAX + 1,
            // and a copy whose counters were behind would reuse keys in use (a whole-store copy
            // keeps the source's counters as they are).
            for change in try PhaseTimings.measure("identity: counters", { try Counters.raise(staged: staged.main) }) {
                report.countersRaised.append(.init(entity: change.entity, from: change.from, to: change.to))
                report.notes.append(
                    "Z_MAX of \(change.entity) raised from \(change.from) to \(change.to), the largest key in use: Core Data would otherwise hand out keys that exist"
                )
            }
            let stagedSchema = try CoreDataSchema.load(from: staged.main)
            report.verification.externalDataFiles = try PhaseTimings.measure("identity: external data") {
                try ExternalDataCopy.run(
                    staged: staged, schema: stagedSchema,
                    from: [options.supportFilesOf ?? source] + (mergeInto.map { [$0] } ?? []),
                    prefetched: prefetch?.value() ?? [:])
            }
            // Where the result's data comes from, recorded in its metadata: a second run of the same
            // migration or merge recognises its own end state (a strategy that moves no rows records nothing).
            var provenance: Provenance.Entry?
            if let inputDigests {
                let digests = try PhaseTimings.measure("identity: waiting for the source's digests") {
                    try inputDigests.value().source
                }
                let digest = Provenance.digest(digests, userEntities: Set(sourceSide.schema.userEntities.map(\.name)))
                report.source.digest = digest
                provenance = Provenance.Entry(
                    operation: options.operation, mode: mode, sourceStoreUUID: sourceSide.report.storeUUID,
                    sourceDigest: digest,
                    strategy: description.id, date: FileTime.now.iso8601, tool: "usm-repair \(USMRepair.version)")
            }
            let choice = Self.identity(
                merge: merge, mode: mode, replaced: destination, outcome: outcome, options: options,
                scratch: scratch.url.appendingPathComponent("replaced", isDirectory: true), notes: &report.notes)
            let identity = try PhaseTimings.measure("identity: metadata") {
                try StoreIdentity.apply(
                    to: staged.main, sourcePlist: merge ? sourceSide.plist : nil, merge: merge, identity: choice,
                    keepUbiquity: options.keepUbiquityMetadata, edits: outcome.metadataEdits, provenance: provenance)
            }
            report.destination.storeUUID = identity.storeUUID
            report.identity =
                switch choice {
                case .fresh: "new"
                case .keep: "replaced-store"
                case .staged: merge ? "destination" : "source"
                }
            report.notes += identity.notes
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: staged.main)
        }
        lap("identity", into: &report)

        // 4. Verification, then the finished form: WAL in the header, no sidecars.
        ProgressNote.say("verifying the new store: integrity_check, every invariant, rows and digests")
        let verifier = MigrationVerifier(
            source: sourceSide, destination: destinationSide, policy: description.rows, outcome: outcome,
            keepUbiquity: options.keepUbiquityMetadata)
        do {
            try verifier.verify(staged: staged.main, inputs: try inputDigests?.value(), report: &report)
        } catch let USMError.verificationFailed(_, detail) {
            throw USMError.verificationFailed(path: destination.main.path, detail: detail)
        }
        try Self.finish(staged)
        report.verification.sidecars = [staged.wal, staged.shm, staged.journal].filter {
            FileStatus.lookup($0.path) != nil
        }.map(\.path)
        lap("verify", into: &report)
        return (report, destinationSide)
    }

    /// The identity of the result (see `StoreIdentity`): a merge keeps the destination's; a store
    /// replacing another (`--overwrite`) keeps the replaced store's, read from a private copy of
    /// it; a whole-store repair keeps its source's; everything else, and `--new-identity`, gets a new one.
    static func identity(
        merge: Bool, mode: String, replaced destination: StoreFileSet, outcome: MigrationOutcome,
        options: MigrationOptions, scratch: URL, notes: inout [String]
    ) -> StoreIdentity.Choice {
        if merge { return .staged }
        if options.newIdentity { return .fresh }
        // A salvaged store stands in for the damaged one: object URIs name its Z_UUID.
        if options.keepStoreUUID { return .staged }
        if mode == MigrationRequest.Mode.overwrite.rawValue, FileStatus.lookup(destination.main.path) != nil {
            do {
                try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
                let capture = try StoreCapture.capture(destination, members: ["main", "wal", "journal"], into: scratch)
                guard let copy = capture.openable else { throw USMError.unexpected("its -journal is hot") }
                let queue = try StagedStore.open(copy, readonly: true)
                defer { try? queue.close() }
                let uuid = try queue.read { db in try String.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA LIMIT 1")
                }
                guard let uuid, UUID(uuidString: uuid) != nil else {
                    throw USMError.unexpected("it holds no store UUID")
                }
                notes.append(
                    "Z_UUID \(uuid) kept from the store it replaces, as Core Data's own replace does: object URIs the app kept still resolve (--new-identity gives a new one)"
                )
                return .keep(uuid)
            } catch {
                notes.append(
                    "the identity of the store it replaces could not be read (\(USMError.wrap(error).message)): the new store gets a new Z_UUID"
                )
                return .fresh
            }
        }
        if outcome.keepsSourceIdentity {
            notes.append(
                "Z_UUID kept from the source: the result is the same store repaired (--new-identity gives a new one)")
            return .staged
        }
        return .fresh
    }
}
