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
        // A built-in strategy that reads its inputs through SQLite has their `quick_check` run
        // beside it (a damaged page is an error SQLite reports, never a wrong read), settled before
        // its result is used: a damaged input is refused as at capture, after the build instead of before.
        let cache = CaptureCache.current
        let beside = !dryRun && description.rows != .none && Self.checkedBeside.contains(description.id)
        let sourceSide =
            try cache?.capture(
                source, role: "source", model: options.model, readsRows: description.rows != .none,
                defersCheck: beside)
            ?? Self.capture(
                source, into: scratch.url.appendingPathComponent("source"), role: "source", model: options.model,
                readsRows: description.rows != .none, defersCheck: beside)
        defer { sourceSide.pendingCheck?.wait() }
        let destinationSide: CapturedStore?
        do {
            destinationSide = try mergeInto.map {
                try cache?.capture($0, role: "destination", defersCheck: beside)
                    ?? Self.capture(
                        $0, into: scratch.url.appendingPathComponent("destination"), role: "destination",
                        defersCheck: beside)
            }
        } catch {
            try sourceSide.pendingCheck?.settle()
            throw error
        }
        defer { destinationSide?.pendingCheck?.wait() }
        /// Every input's check settled: throws a damaged input's refusal.
        func settleChecks() throws {
            try sourceSide.pendingCheck?.settle()
            try destinationSide?.pendingCheck?.settle()
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
        sourceSide.pendingCheck?.start()
        destinationSide?.pendingCheck?.start()
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
        } catch {
            // A damaged input explains a strategy that failed on it: the input's refusal first.
            try settleChecks()
            throw Self.strategyError(error, destination: destination, staged: staged)
        }
        try PhaseTimings.measure("strategy: waiting for the inputs' quick_check") { try settleChecks() }

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
        // The files the result refers to, put in place on another thread: the verification's
        // B-tree walk starts beside it, and its external-data checks wait for it (issue 33: on
        // 1,001,000 objects the copy of 890 files, 0.4-0.8 s on the machine measured, stood here).
        // Nothing writes to the staged store from here until its finished form, after both.
        let externalSources = [options.supportFilesOf ?? source] + (mergeInto.map { [$0] } ?? [])
        let externalData = Background { () throws -> Int in
            do {
                let prefetched = try prefetch?.value() ?? [:]
                return try PhaseTimings.measure("external data: the rest copied, extras removed") {
                    try ExternalDataCopy.run(
                        staged: stagedFiles, schema: CoreDataSchema.load(from: stagedFiles.main),
                        from: externalSources, prefetched: prefetched)
                }
            } catch let error as USMError {
                throw error
            } catch {
                throw StagedStore.wrapWrite(error, path: stagedFiles.main)
            }
        }
        defer { _ = try? externalData.value() }
        lap("identity", into: &report)

        // 4. Verification, then the finished form: WAL in the header, no sidecars.
        ProgressNote.say("verifying the new store: integrity_check, every invariant, rows and digests")
        let verifier = MigrationVerifier(
            source: sourceSide, destination: destinationSide, policy: description.rows, outcome: outcome,
            keepUbiquity: options.keepUbiquityMetadata)
        do {
            try verifier.verify(
                staged: staged.main, inputs: try inputDigests?.value(),
                externalDataReady: { _ = try? externalData.value() }, report: &report)
        } catch let USMError.verificationFailed(_, detail) {
            // The copy's own failure (a full disk, a file of one name and two contents) explains
            // what the check then found missing: it comes first.
            _ = try externalData.value()
            throw USMError.verificationFailed(path: destination.main.path, detail: detail)
        } catch {
            _ = try externalData.value()
            throw error
        }
        report.verification.externalDataFiles = try externalData.value()
        try Self.finish(staged)
        report.verification.sidecars = [staged.wal, staged.shm, staged.journal].filter {
            FileStatus.lookup($0.path) != nil
        }.map(\.path)
        lap("verify", into: &report)
        return (report, destinationSide)
    }

    /// The built-in strategies whose inputs' `quick_check` runs beside them (`capture(defersCheck:)`):
    /// they read the private copies only through SQLite (the backup API, `INSERT … SELECT`), where a
    /// damaged page is an error, never a value read wrong. A plugin's program or a recipe is not run
    /// on a store not yet checked.
    static let checkedBeside: Set<String> = ["ios", "copy-entities"]

    /// A strategy's error as the user sees it: naming the user's destination, not the staging folder.
    static func strategyError(_ error: any Error, destination: StoreFileSet, staged: StoreFileSet) -> USMError {
        guard let error = error as? USMError else { return StagedStore.wrapWrite(error, path: staged.main) }
        switch error {
        case let .schemaMismatch(_, detail): return USMError.schemaMismatch(path: destination.main.path, detail: detail)
        case let .writeFailed(_, reason): return USMError.writeFailed(path: destination.directory.path, reason: reason)
        default: return error
        }
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
