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
    /// Plan only: nothing is written anywhere but a private temporary folder.
    public var dryRun: Bool
    /// Where the snapshot of a replaced or merged-into destination goes (default `Snapshot.defaultDirectory()`).
    public var snapshotDirectory: URL?
    /// Recorded in the snapshot's manifest.
    public var commandLine: [String]

    /// Creates a request.
    public init(source: StoreFileSet, destination: StoreFileSet, strategy: String = StrategyRegistry.defaultID,
                mode: Mode = .create, options: MigrationOptions = MigrationOptions(), dryRun: Bool = false,
                snapshotDirectory: URL? = nil, commandLine: [String] = CommandLine.arguments) {
        self.source = source
        self.destination = destination
        self.strategy = strategy
        self.mode = mode
        self.options = options
        self.dryRun = dryRun
        self.snapshotDirectory = snapshotDirectory
        self.commandLine = commandLine
    }
}

/// The migration engine: captures the source, stages the destination beside its final place,
/// runs the chosen strategy, gives the result its identity, copies its external data, verifies
/// it, snapshots what it replaces and installs it with renames. On any failure nothing is left
/// at the destination and the source is untouched.
public struct MigrationEngine: Sendable {
    /// The strategies to choose from.
    public let registry: StrategyRegistry

    /// Creates an engine over `registry`.
    public init(registry: StrategyRegistry) {
        self.registry = registry
    }

    /// Runs (or, with `dryRun`, plans) one migration: builds the store in a staging folder beside
    /// the destination, then snapshots what it replaces and installs it.
    /// - Throws: `USMError` with a documented exit status; the destination is then as it was.
    public func run(_ request: MigrationRequest) throws -> MigrationReport {
        let started = Date()
        let description = try registry.description(of: request.strategy)
        let source = request.source, destination = request.destination
        guard source.main.path != destination.main.path else {
            throw USMError.usage("the source and the destination are the same store")
        }
        guard FileStatus.lookup(source.main.path) != nil else { throw USMError.notFound(path: source.main.path, what: "source store") }
        guard FileStatus.resolve(destination.directory.path)?.kind == .directory else {
            throw USMError.notFound(path: destination.directory.path, what: "destination folder")
        }
        let exists = !destination.existingMembers().isEmpty
        let merge = request.mode == .merge
        if merge {
            guard description.supportsMerge else {
                throw USMError.usage("--into merges only with strategies that support it (\(registry.descriptions.filter(\.supportsMerge).map(\.id).joined(separator: ", "))); \(description.id) does not")
            }
            guard FileStatus.lookup(destination.main.path) != nil else {
                throw USMError.notFound(path: destination.main.path, what: "destination store to merge into")
            }
        } else if exists && request.mode == .create {
            throw USMError.destinationExists(path: destination.main.path)
        }
        let replacing = merge || (request.mode == .overwrite && exists)
        let staging = destination.directory.appendingPathComponent(".usm-repair-staging-\(UUID().uuidString)", isDirectory: true)
        let staged = StoreFileSet(main: staging.appendingPathComponent(destination.fileName))

        if request.dryRun {
            var (report, _) = try buildStaged(
                source: source, staged: staged, shownAs: destination, strategy: request.strategy, options: request.options,
                mergeInto: merge ? destination : nil, mode: request.mode.rawValue, dryRun: true)
            if replacing {
                report.steps.append(MigrationStep("snapshot \(destination.main.path)", why: "the old file set goes into a snapshot archive first; restore puts it back"))
            }
            report.steps.append(MigrationStep("install \(destination.main.path)", why: "renamed into place from a staging folder beside it, with no -wal or -shm"))
            report.durations["total"] = Date().timeIntervalSince(started)
            return report
        }

        // Staging beside the destination, on the same file system.
        do {
            try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw USMError.writeFailed(path: destination.directory.path, reason: "cannot create a staging folder there: \(USMError.wrap(error).message)")
        }
        var installed = false
        defer { if !installed { try? FileManager.default.removeItem(at: staging) } }
        var (report, destinationSide) = try buildStaged(
            source: source, staged: staged, shownAs: destination, strategy: request.strategy, options: request.options,
            mergeInto: merge ? destination : nil, mode: request.mode.rawValue, dryRun: false)

        // Snapshot of what is replaced, then the renames.
        let installStarted = Date()
        if replacing {
            if let destinationSide, !destinationSide.unchanged(destination) {
                throw USMError.changedWhileReading(path: destination.main.path)
            }
            let root = destination.directory
            let snapshotRequest = Snapshot.Request(
                roots: [(name: root.lastPathComponent, url: root)], items: destination.allMembers, operation: "migrate-store",
                commandLine: request.commandLine)
            report.snapshot = try Snapshot.take(
                snapshotRequest, into: request.snapshotDirectory ?? Snapshot.defaultDirectory(), protected: [root]).path
        }
        try MigrationInstall.install(staged: staged, staging: staging, destination: destination, replacing: exists)
        installed = true
        try? FileManager.default.removeItem(at: staging)
        report.durations["install"] = Date().timeIntervalSince(installStarted)
        report.durations["total"] = Date().timeIntervalSince(started)
        return report
    }

    /// Builds a verified store at `staged` from `source` and installs nothing: the entry point for
    /// operations that install with their own plan (snapshot, retire, install, journal). The
    /// folder of `staged` must exist; only `staged` and its `_SUPPORT` folder are written (removed
    /// again on failure). With `mergeInto`, the staged store starts as a copy of that store.
    /// Rows per entity of the result are the report's `entities[].after`.
    public func build(source: StoreFileSet, staged: URL, strategy: String = StrategyRegistry.defaultID,
                      options: MigrationOptions = MigrationOptions(), mergeInto: StoreFileSet? = nil) throws -> MigrationReport {
        let files = StoreFileSet(main: staged)
        guard FileStatus.lookup(source.main.path) != nil else { throw USMError.notFound(path: source.main.path, what: "source store") }
        if let mergeInto, !(try registry.description(of: strategy)).supportsMerge || FileStatus.lookup(mergeInto.main.path) == nil {
            throw USMError.usage("cannot merge into \(mergeInto.main.path) with \(strategy)")
        }
        guard files.existingMembers().isEmpty else { throw USMError.destinationExists(path: staged.path) }
        do {
            return try buildStaged(
                source: source, staged: files, shownAs: files, strategy: strategy, options: options, mergeInto: mergeInto,
                mode: mergeInto == nil ? MigrationRequest.Mode.create.rawValue : MigrationRequest.Mode.merge.rawValue, dryRun: false).0
        } catch {
            for member in files.existingMembers() { try? FileManager.default.removeItem(at: member) }
            throw error
        }
    }

    /// Capture, strategy, identity, external data, verification and the finished form, into `staged`.
    func buildStaged(source: StoreFileSet, staged: StoreFileSet, shownAs destination: StoreFileSet, strategy id: String,
                     options: MigrationOptions, mergeInto: StoreFileSet?, mode: String, dryRun: Bool) throws -> (MigrationReport, CapturedStore?) {
        let started = Date()
        var clock = started
        func lap(_ name: String, into report: inout MigrationReport) {
            let now = Date()
            report.durations[name] = now.timeIntervalSince(clock)
            clock = now
        }
        let strategy = try registry.strategy(id)
        let description = type(of: strategy).description
        let merge = mergeInto != nil
        let scratch = try TemporaryDirectory(prefix: "usm-repair-migrate")
        defer { scratch.remove() }
        // 1. The source (and a merge's destination) through consistent private copies.
        let sourceSide = try Self.capture(source, into: scratch.url.appendingPathComponent("source"), role: "source")
        let destinationSide = try mergeInto.map { try Self.capture($0, into: scratch.url.appendingPathComponent("destination"), role: "destination") }
        var report = MigrationReport(
            strategy: description.id, mode: mode, dryRun: dryRun,
            source: .init(path: source.main.path, storeUUID: sourceSide.report.storeUUID),
            destination: .init(path: destination.main.path, storeUUID: destinationSide?.report.storeUUID))
        lap("capture", into: &report)

        let job = MigrationJob(
            source: sourceSide.copy, sourceSchema: sourceSide.schema, sourceExternalData: source.externalDataDirectory,
            destination: staged.main, destinationSchema: destinationSide?.schema,
            scratch: scratch.url.appendingPathComponent("strategy", isDirectory: true), options: options, dryRun: dryRun)
        try FileManager.default.createDirectory(at: job.scratch, withIntermediateDirectories: true)

        if dryRun {
            report.steps = try strategy.plan(job)
            report.steps.append(MigrationStep("verify", why: "integrity_check, every invariant of check, rows per entity and content digests, before anything is installed"))
            report.entities = Self.rowsBefore(sourceSide.report, destinationSide?.report)
            return (report, destinationSide)
        }
        if let destinationSide { try StagedStore.copyWhole(from: destinationSide.copy, to: staged.main) }

        // 2. The strategy.
        let outcome: MigrationOutcome
        do {
            outcome = try strategy.migrate(job)
        } catch let error as USMError {
            // Errors name the user's destination, not the staging folder.
            switch error {
            case let .schemaMismatch(_, detail): throw USMError.schemaMismatch(path: destination.main.path, detail: detail)
            case let .writeFailed(_, reason): throw USMError.writeFailed(path: destination.directory.path, reason: reason)
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
        lap("strategy", into: &report)

        // 3. Identity and external data.
        do {
            try Self.deleteJournalMode(staged.main)
            let identity = try StoreIdentity.apply(
                to: staged.main, sourcePlist: merge ? sourceSide.plist : nil, merge: merge,
                keepUbiquity: options.keepUbiquityMetadata, edits: outcome.metadataEdits)
            report.destination.storeUUID = identity.storeUUID
            report.notes += identity.notes
            let stagedSchema = try CoreDataSchema.load(from: staged.main)
            report.verification.externalDataFiles = try ExternalDataCopy.run(
                staged: staged, schema: stagedSchema,
                from: [source.externalDataDirectory] + (mergeInto.map { [$0.externalDataDirectory] } ?? []))
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: staged.main)
        }
        lap("identity", into: &report)

        // 4. Verification, then the finished form: WAL in the header, no sidecars.
        let verifier = MigrationVerifier(
            source: sourceSide, destination: destinationSide, policy: description.rows, outcome: outcome,
            keepUbiquity: options.keepUbiquityMetadata)
        do {
            try verifier.verify(
                staged: staged.main, sourceCopy: sourceSide.copy, sourceSchema: sourceSide.schema, destinationCopy: destinationSide?.copy,
                destinationSchema: destinationSide?.schema, report: &report)
        } catch let USMError.verificationFailed(_, detail) {
            throw USMError.verificationFailed(path: destination.main.path, detail: detail)
        }
        try Self.finish(staged)
        report.verification.sidecars = [staged.wal, staged.shm, staged.journal].filter { FileStatus.lookup($0.path) != nil }.map(\.path)
        lap("verify", into: &report)
        return (report, destinationSide)
    }
}
