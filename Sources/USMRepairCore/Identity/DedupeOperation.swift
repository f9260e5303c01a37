import Foundation
import GRDB
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `dedupe` was asked.
public struct DedupeRequest: Sendable {
    /// The store de-duplicated in place (through a staged copy, installed by the plan).
    public var store: StoreFileSet
    /// `--key ENTITY=ATTR[,ATTR...]`.
    public var keys: [String]
    /// `--keep newest`: the copy with the highest `Z_PK` survives (default: the lowest).
    public var newest: Bool

    public init(store: StoreFileSet, keys: [String] = [], newest: Bool = false) {
        self.store = store
        self.keys = keys
        self.newest = newest
    }
}

/// What `dedupe` did (or, in a dry run, would do): the `details` of its envelope (`ChangeReport`).
public struct DedupeReport: Sendable, Encodable {
    public var store: String
    /// `oldest` or `newest`.
    public var keep: String
    /// Objects per entity before.
    public var before: [String: Int]
    /// Objects removed as duplicates, per entity (only entities with some).
    public var removed: [String: Int]
    /// Seconds per phase of this run (`preview`, then the plan's steps: `snapshot`, `build.*`,
    /// `retire`, `install`, `commit`, `purge`), for the benchmark; absent phases did not run.
    public var durations: [String: Double] = [:]
}

/// `dedupe`: the duplicates of one store removed (`Deduplicator`) as a journaled plan, like
/// `migrate-store --overwrite`: 1. `snapshot` — the store's file set; 2. `build` — the migration
/// engine copies the store whole (`ios`, its identity kept) into staging and verifies it, then the
/// duplicates are removed there and the result checked; 3. `retire` the old members; 4. `install`;
/// 5. `commit`, `purge`. Counted at planning on a private copy: the dry run says what goes, a store
/// without duplicates is nothing to do.
public struct DedupeChange: Change {
    public let request: DedupeRequest
    public let engine: MigrationEngine
    public let executor: PlanExecutor

    public init(request: DedupeRequest, engine: MigrationEngine, executor: PlanExecutor) {
        self.request = request
        self.engine = engine
        self.executor = executor
    }

    var replacement: StoreReplacement {
        StoreReplacement(destination: request.store, operation: "dedupe", noun: "de-duplicated store")
    }

    public var command: String { "dedupe" }

    /// What goes, counted on a private copy (objects per entity `before`, duplicates `removed`,
    /// the seconds of the count: `durations.preview`).
    public struct Counted {
        public let before: [String: Int]
        public let removed: [String: Int]
        let durations: [String: Double]
        /// A run's count: the private copy it was made on, de-duplicated already (the build
        /// installs it when the store has not changed since, rather than finding the groups again).
        let work: DedupeWork?
    }

    /// The plan and what goes.
    public typealias Prepared = StoreReplacement.Prepared<Counted>

    /// Checks the store, recovers first what a kill left pending in its folder (a dry run
    /// refuses then), counts the duplicates on a private copy (once: the run reuses the count)
    /// and plans.
    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        let store = request.store
        guard FileStatus.lookup(store.main.path) != nil else {
            throw USMError.notFound(path: store.main.path, what: "store")
        }
        try Snapshot.refuseInside(
            executor.snapshotDirectory, protected: [store.directory], why: "the folder this command changes")
        let recovered = try executor.recoverBeforePlanning(in: [replacement.root], dryRun: dryRun)
        progress("reading \(store.main.path), finding duplicates")
        let clock = Date()
        var work: DedupeWork?
        let before: [String: Int]
        let removed: [String: Int]
        if dryRun {
            (before, removed) = try Self.preview(store, keys: request.keys, newest: request.newest)
        } else {
            // The count of a run removes the duplicates from its private copy there and then.
            let made = try DedupeWork.make(store, keys: request.keys, newest: request.newest)
            (before, removed, work) = (made.before, made.removed, made)
        }
        let durations = ["preview": Date().timeIntervalSince(clock)]
        let plan = try replacement.plan(
            replacing: true,
            why:
                "the store is copied whole into staging and verified, its duplicates removed there and the result checked before anything is installed",
            label: nil
        ) { staged in
            var build = Plan.StoreBuild(
                source: store.main.path, staged: staged, strategy: StrategyChoice(id: "ios"), mergeInto: nil,
                keepUbiquityMetadata: true)
            build.operation = "dedupe"
            return build
        }
        return Prepared(
            plan: plan, recovered: recovered, dryRun: dryRun, replacing: true, started: clock,
            extra: Counted(before: before, removed: removed, durations: durations, work: work))
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? {
        prepared.extra.removed.isEmpty
            ? nil
            : ChangeConsent(
                unattended: "dedupe changes files: run it with --yes (see what goes with --dry-run)",
                question: "Remove these duplicates? A snapshot is taken first.")
    }

    func report(
        _ prepared: Prepared, removed: [String: Int], durations: [String: Double], result: PlanExecutor.Result?
    ) -> ChangeReport<DedupeReport> {
        let noOp = prepared.extra.removed.isEmpty
        let store = request.store.main.path
        return ChangeReport(
            command: command, operation: request.newest ? "dedupe --keep newest" : "dedupe",
            dryRun: prepared.dryRun, noOp: noOp,
            changed: result != nil, steps: noOp ? [] : ChangeStep.list(prepared.plan, result: result),
            snapshot: result?.snapshot,
            notes: (noOp ? ["no duplicates: nothing to do"] : []) + (result?.leftovers ?? []).map(ChangeNotes.leftover),
            recovered: prepared.recovered + (result?.recovered ?? []), seconds: result?.seconds ?? 0,
            nextStep: noOp
                ? "nothing to do"
                : result == nil
                    ? "run it without --dry-run to remove them (a snapshot is taken first)"
                    : "the app opens \(store) as before, without the duplicates",
            details: DedupeReport(
                store: store, keep: request.newest ? "newest" : "oldest", before: prepared.extra.before,
                removed: removed,
                durations: durations))
    }

    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) -> ChangeReport<DedupeReport> {
        report(prepared, removed: prepared.extra.removed, durations: prepared.extra.durations, result: nil)
    }

    /// Runs the plan: the store copied page by page into staging, its duplicates removed there
    /// and the result verified, then installed.
    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<DedupeReport> {
        guard !prepared.extra.removed.isEmpty else { return preview(prepared) }
        let store = request.store
        let request = self.request
        let work = prepared.extra.work
        let box = Mutex<(removed: [String: Int], durations: [String: Double])?>(nil)
        let (result, _) = try replacement.run(
            prepared, executor: executor,
            builder: { build in
                let (migration, durations) = try Self.build(
                    source: StoreFileSet(main: URL(fileURLWithPath: build.source)),
                    staged: URL(fileURLWithPath: build.staged), shownAs: store, keys: request.keys,
                    newest: request.newest, work: work)
                box.withLock { $0 = (migration.deduplicated, durations) }
                return migration
            }, progress: progress)
        let built = box.withLock { $0 }
        var durations = prepared.extra.durations
        for step in result.steps {
            durations[step.action.rawValue, default: 0] += step.seconds
        }
        for (name, seconds) in built?.durations ?? [:] { durations[name] = seconds }
        return report(prepared, removed: built?.removed ?? prepared.extra.removed, durations: durations, result: result)
    }

    /// What `dedupe` would remove from `store`, per entity, counted on a private copy (nothing of
    /// the store is written): the dry run's answer, and the check of the advice that proposes it.
    public static func preview(_ store: StoreFileSet, keys: [String] = []) throws -> [String: Int] {
        try preview(store, keys: keys, newest: false).removed
    }

    /// Objects per entity now, and what would go.
    static func preview(_ store: StoreFileSet, keys: [String], newest: Bool) throws -> (
        before: [String: Int], removed: [String: Int]
    ) {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-dedupe")
        defer { scratch.remove() }
        let captured = try MigrationEngine.capture(store, into: scratch.url.appendingPathComponent("c"), role: "store")
        let before = Dictionary(
            captured.report.entities.filter { !$0.system }.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        return (before, try count(captured.copy, keys: keys, newest: newest, remove: false))
    }

    /// The build step: a private consistent copy of `source` (`capture`, which refuses a damaged
    /// source), copied page by page into `staged`; its duplicates removed there in one
    /// transaction (`Deduplicator`); then the external-data files the result still names copied
    /// beside it (so the files only removed copies named are left behind); then the result
    /// verified: `integrity_check` and every invariant of `check` (a problem the source already
    /// had is inherited, not blamed), and its objects per entity are the source's less the removed
    /// ones. The finished form is WAL in the header, no sidecars. Seconds per phase beside.
    static func build(
        source: StoreFileSet, staged: URL, shownAs store: StoreFileSet, keys: [String], newest: Bool,
        work: DedupeWork? = nil
    ) throws -> (MigrationReport, [String: Double]) {
        var clock = Date()
        var phases: [String: Double] = [:]
        func lap(_ name: String) {
            let now = Date()
            phases["build." + name, default: 0] += now.timeIntervalSince(clock)
            clock = now
        }
        let files = StoreFileSet(main: staged)
        guard files.existingMembers().isEmpty else { throw USMError.destinationExists(path: staged.path) }
        let scratch = try TemporaryDirectory(prefix: "usm-repair-dedupe")
        defer { scratch.remove() }
        do {
            let captured: CapturedStore
            let removed: [String: Int]
            // The result's integrity_check when it ran on these bytes before the rename.
            var checked: Background<Result<[String], any Error>>?
            // The store's problems before, to tell inherited ones from new (read only when the
            // result has an error): from the capture, or a new one when it was de-duplicated.
            // A capture that fails then knows nothing inherited: every error counts as new.
            let inherited: () -> [Problem]
            if let work, work.captured.files.main.path == source.main.path, work.captured.unchanged(source),
                FileStatus.lookup(work.captured.copy.path) != nil
            {
                captured = work.captured
                lap("capture")
                // A page copy (the rename failed) is new bytes: checked again.
                checked = try work.place(at: staged) ? work.integrity : nil
                removed = work.removed
                lap("copy")
                inherited = {
                    (try? MigrationEngine.capture(
                        source, into: scratch.url.appendingPathComponent("source"), role: "source"
                    ).inheritedCheck().problems) ?? []
                }
            } else {
                captured = try MigrationEngine.capture(
                    source, into: scratch.url.appendingPathComponent("source"), role: "source")
                lap("capture")
                try StagedStore.copyWhole(from: captured.copy, to: staged)
                lap("copy")
                removed = try count(staged, keys: keys, newest: newest, remove: true)
                inherited = { captured.inheritedCheck().problems }
            }
            lap("dedupe")
            let externalFiles = try ExternalDataCopy.run(
                staged: files, schema: try CoreDataSchema.load(from: staged), from: [source])
            lap("external-data")
            var report = MigrationReport(
                strategy: "dedupe", mode: MigrationRequest.Mode.overwrite.rawValue, dryRun: false,
                source: .init(path: source.main.path, storeUUID: captured.report.storeUUID),
                destination: .init(path: store.main.path, storeUUID: captured.report.storeUUID))
            report.deduplicated = removed
            report.verification.externalDataFiles = externalFiles
            report.entities = try verify(
                staged: files, sourceEntities: captured.report.entities, inherited: inherited, removed: removed,
                integrity: Self.lines(of: checked), report: &report)
            try MigrationEngine.finish(files)
            lap("verify")
            return (report, phases)
        } catch {
            for member in files.existingMembers() { try? FileManager.default.removeItem(at: member) }
            throw error
        }
    }

    /// The checks of the de-duplicated store at `staged`, which was `captured` less `removed`.
    /// The lines `job` finds, as `verify` reads them (nil: no check ran before).
    private static func lines(of job: Background<Result<[String], any Error>>?) -> (@Sendable () throws -> [String])? {
        guard let job else { return nil }
        return { try job.value().get() }
    }

    /// `integrity`: the lines of an `integrity_check` of these bytes already run (`DedupeWork`).
    static func verify(
        staged: StoreFileSet, sourceEntities: [StoreReport.EntityCount], inherited: () -> [Problem],
        removed: [String: Int], integrity: (@Sendable () throws -> [String])? = nil, report: inout MigrationReport
    ) throws -> [MigrationReport.EntityRows] {
        ProgressNote.say("verifying the de-duplicated store: integrity_check, every invariant, objects per entity")
        // Every invariant but the duplicates (a warning, never a verification error: the removal
        // was counted on its own grouping; finding them again would double the work).
        var inspector = StoreInspector(depth: .check)
        inspector.checksDuplicates = false
        inspector.integrityLines = integrity
        let result = inspector.inspect(
            staged, role: .store, confinement: Confinement(root: staged.directory), privateCopy: staged.main)
        if let failure = result.readFailure {
            throw USMError.verificationFailed(
                path: staged.main.path, detail: "the de-duplicated store cannot be read: \(failure.message)")
        }
        report.verification.integrity = result.integrity
        guard result.integrity == "ok" else {
            throw USMError.verificationFailed(
                path: staged.main.path,
                detail: "integrity_check after removing duplicates: \(result.integrity)")
        }
        let errors = result.problems.filter { $0.severity == .error }
        if let unreadable = errors.first(where: { $0.code == .unreadable }) {
            throw USMError.unreadable(path: unreadable.subject ?? staged.main.path, reason: unreadable.message)
                .diagnosingSpace()
        }
        let known: Set<ProblemCode> =
            errors.isEmpty
            ? [] : Set(inherited().filter { $0.severity == .error }.map(\.code))
        report.verification.problems = errors.filter { !known.contains($0.code) }
        report.verification.inherited = errors.filter { known.contains($0.code) }
        if let first = report.verification.problems.first {
            throw USMError.verificationFailed(
                path: staged.main.path, detail: "\(first.code.rawValue): \(first.message)")
        }
        let sourceRows = Dictionary(
            sourceEntities.filter { !$0.system }.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        let afterRows = Dictionary(
            result.entities.filter { !$0.system }.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        var entities: [MigrationReport.EntityRows] = []
        var mismatches: [String] = []
        for name in Set(sourceRows.keys).union(afterRows.keys).sorted() {
            let expected = (sourceRows[name] ?? 0) - (removed[name] ?? 0)
            let after = afterRows[name] ?? 0
            if after != expected { mismatches.append("\(name): \(after) objects, expected \(expected)") }
            entities.append(
                .init(
                    name: name, source: sourceRows[name] ?? 0, destinationBefore: 0, expected: expected, after: after,
                    digest: "not-compared"))
        }
        guard mismatches.isEmpty else {
            throw USMError.verificationFailed(
                path: staged.main.path,
                detail: "objects per entity after removing duplicates: \(mismatches.joined(separator: "; "))")
        }
        return entities
    }

    /// The duplicates of the store at `url` per entity; with `remove`, removed (one transaction).
    /// `scratch`: `url` is a private copy thrown away after a crash, written without fsync.
    /// `listed`: told the counts of a removal before it removes anything.
    static func count(
        _ url: URL, keys: [String], newest: Bool, remove: Bool, scratch: Bool = false,
        listed: ([String: Int]) -> Void = { _ in }
    ) throws -> [String: Int] {
        let queue = try StagedStore.open(url)
        defer { try? queue.close() }
        do {
            return try queue.writeWithoutTransaction { db in
                if scratch { try db.execute(sql: "PRAGMA synchronous = OFF") }
                let schema = try CoreDataSchema.readMain(db)
                let parsed = try ObjectIdentity.parseKeys(keys, schema: schema)
                let deduplicator = Deduplicator(keys: parsed, newest: newest)
                guard remove else { return try deduplicator.count(db) }
                var removed: [String: Int] = [:]
                try db.inTransaction {
                    removed = try deduplicator.run(db, listed: listed)
                    return .commit
                }
                return removed
            }
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: url)
        }
    }
}

/// The counts of a removal running on another thread (`DedupeWork.make`), told as soon as they
/// are known (or its error); the first word told is kept.
private final class Told<Value: Sendable>: Sendable {
    private let told = Mutex<Result<Value, any Error>?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    /// Tells the outcome; only the first one told counts.
    func tell(_ result: Result<Value, any Error>) {
        let first = told.withLock { value -> Bool in
            guard value == nil else { return false }
            value = result
            return true
        }
        if first { ready.signal() }
    }

    func wait() throws -> Value {
        ready.wait()
        ready.signal()
        guard let result = told.withLock({ $0 }) else { throw USMError.unexpected("the duplicates were not counted") }
        return try result.get()
    }
}

/// A run's count (`DedupeChange.prepare`): the store captured into a private folder, its
/// duplicates removed there in one transaction; the build copies that result into staging when
/// no member of the store changed since the capture (`CapturedStore.unchanged`). The folder goes
/// with the last reference.
final class DedupeWork: Sendable {
    let scratch: TemporaryDirectory
    /// The capture (its report and schema are of the store before; its copy is de-duplicated).
    let captured: CapturedStore
    let before: [String: Int]
    let removed: [String: Int]

    /// The `integrity_check` lines of the de-duplicated copy, final once the count folded and
    /// flushed it: run on another thread while the plan's snapshot is written, read by the
    /// build's verification instead of checking the same bytes again after the rename. The
    /// thread first removes the duplicates and folds the copy: its errors are thrown by `value()`.
    let integrity: Background<Result<[String], any Error>>
    /// Told once the removal and the fold are done and the check's connection has the copy open
    /// (or what failed): the copy's bytes are final from then on, and `place` may rename it while
    /// its `integrity_check` goes on through the open file.
    private let folded: Told<Void>

    private init(
        scratch: TemporaryDirectory, captured: CapturedStore, before: [String: Int], removed: [String: Int],
        integrity: Background<Result<[String], any Error>>, folded: Told<Void>
    ) {
        self.scratch = scratch
        self.captured = captured
        self.before = before
        self.removed = removed
        self.integrity = integrity
        self.folded = folded
    }

    static func make(_ store: StoreFileSet, keys: [String], newest: Bool) throws -> DedupeWork {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-dedupe")
        let captured = try PhaseTimings.measure("dedupe: capture") {
            try MigrationEngine.capture(store, into: scratch.url.appendingPathComponent("c"), role: "store")
        }
        let before = Dictionary(
            captured.report.entities.filter { !$0.system }.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        // The removal, the fold and the integrity_check of the copy run on another thread: the
        // plan needs only the counts (told as soon as the copies are listed), and the snapshot
        // the plan takes first is written meanwhile. `place` waits for the removal and the
        // fold (and throws what they threw) before the copy is staged; the verification waits for
        // the check.
        let copy = captured.copy
        let counted = Told<[String: Int]>()
        let folded = Told<Void>()
        let integrity = Background { () throws -> Result<[String], any Error> in
            // Whatever happens below, `place` hears of it (the first outcome told counts).
            defer { folded.tell(.failure(USMError.unexpected("the de-duplicated copy was not folded"))) }
            do {
                let removed = try PhaseTimings.measure("dedupe: count and removal") {
                    try DedupeChange.count(copy, keys: keys, newest: newest, remove: true, scratch: true) {
                        counted.tell(.success($0))
                    }
                }
                counted.tell(.success(removed))
                // Nothing removed: nothing is staged or installed (the run is "nothing to do").
                if removed.isEmpty {
                    return .failure(USMError.unexpected("no duplicates were removed: the copy was not checked"))
                }
            } catch {
                counted.tell(.failure(error))
                folded.tell(.failure(error))
                throw error
            }
            do {
                try fold(copy)
            } catch {
                folded.tell(.failure(error))
                throw error
            }
            Memory.releaseFreed()
            // The check's connection opens the copy before `place` may rename it (SQLite holds
            // the file open from then on); it never writes (read only, rollback-journal mode).
            // The check's own failure is the verification's to report (as a check it ran would).
            let started = Date()
            let queue: DatabaseQueue
            do {
                var config = Configuration()
                config.label = "usm-repair.dedupe-check"
                config.readonly = true
                let bytes = UntrustedDatabase.storeBytes(copy.path)
                UntrustedDatabase.configure(&config, bytes: bytes)
                config.prepareDatabase { db in
                    try db.execute(sql: "PRAGMA cache_size = -\(IntegrityCheck.singleCacheKiB(forBytes: bytes))")
                    try db.execute(sql: "PRAGMA mmap_size = 0")
                }
                queue = try DatabaseQueue(path: copy.path, configuration: config)
            } catch {
                folded.tell(.success(()))
                return .failure(error)
            }
            folded.tell(.success(()))
            defer { try? queue.close() }
            let lines = Result {
                try queue.read { db in
                    try String.fetchAll(db, sql: "PRAGMA integrity_check(\(IntegrityCheck.maxLines))")
                }
            }
            PhaseTimings.note(
                "dedupe: integrity_check beside the snapshot", seconds: Date().timeIntervalSince(started))
            return lines
        }
        let removed = try counted.wait()
        return DedupeWork(
            scratch: scratch, captured: captured, before: before, removed: removed, integrity: integrity, folded: folded
        )
    }

    /// Gives the de-duplicated private copy at `copy` the form `StagedStore.copyWhole` leaves:
    /// rollback-journal mode, its WAL folded in, no `-wal`, `-shm` or `-journal` beside it, its
    /// bytes flushed. Nothing writes it afterwards.
    /// - Throws: `writeFailed` (the flush failed, or a side file still holds data).
    private static func fold(_ copy: URL) throws {
        do {
            let queue = try StagedStore.open(copy)
            defer { try? queue.close() }
            try queue.writeWithoutTransaction { db in try StagedStore.setJournalMode(db, "DELETE") }
            try queue.close()
        } catch {
            throw StagedStore.wrapWrite(error, path: copy)
        }
        // The main file is whole once its connection is closed in rollback-journal mode: a `-wal`
        // or `-journal` still holding bytes would be rows the rename leaves behind.
        for suffix in ["-wal", "-journal", "-shm"] {
            let side = copy.path + suffix
            guard let status = FileStatus.lookup(side) else { continue }
            if status.size > 0, suffix != "-shm" {
                throw USMError.writeFailed(
                    path: side, reason: "the de-duplicated copy's \(suffix) still holds data after it was closed")
            }
            try? FileManager.default.removeItem(atPath: side)
        }
        // It was written without fsync: its bytes reach the disk before it is staged.
        try flush(copy)
    }

    /// Puts the de-duplicated private copy (in the form `fold` gave it when it was made) at
    /// `staged`, a new name in the staging folder. Renamed there when both lie on one file
    /// system (no second write of the store), then the file and the staging folder flushed again
    /// so the rename is on disk; copied page by page when the rename fails (EXDEV: the scratch
    /// folder on another file system). The private copy is gone after a rename (a later build
    /// captures the store again). The removal and the fold are waited for first; the `integrity`
    /// check may still be reading the copy through its open file, and the verification waits for
    /// its lines.
    /// - Parameter move: `rename(2)`, returning 0 or the errno (a test makes it fail).
    /// - Throws: `writeFailed` (the flush failed), what the copy throws.
    /// - Returns: true when renamed (the staged bytes are the ones `integrity` checked).
    @discardableResult
    func place(at staged: URL, move: (String, String) -> Int32 = DedupeWork.rename) throws -> Bool {
        let copy = captured.copy
        // The removal and the fold finished (the check's own failure is the verification's).
        do {
            try folded.wait()
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: copy)
        }
        let code = move(copy.path, staged.path)
        guard code == 0 else {
            // Another file system (EXDEV) or one that refuses the rename: the copy is still
            // whole where it was; copy it page by page as before.
            PhaseTimings.note("dedupe: rename failed (\(errnoDescription(code))), copied", seconds: 0)
            try StagedStore.copyWhole(from: copy, to: staged)
            return false
        }
        // The rename reaches the disk: the file once more (its inode now named in staging),
        // then the folder's new entry.
        try Self.flush(staged)
        FileSync.directory(staged.deletingLastPathComponent())
        // The capture's other name of the same bytes (a hard link) goes: the staged file is
        // the only one.
        try? FileManager.default.removeItem(
            at: copy.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("raw"))
        PhaseTimings.note("dedupe: private copy renamed into staging", seconds: 0)
        return true
    }

    /// `rename(2)`: 0, or the errno.
    static func rename(_ from: String, _ to: String) -> Int32 {
        FileSystemPath.withCString(from) { source in
            FileSystemPath.withCString(to) { target in
                #if canImport(Glibc)
                    Glibc.rename(source, target) == 0 ? 0 : errno
                #else
                    Darwin.rename(source, target) == 0 ? 0 : errno
                #endif
            }
        }
    }

    /// fsync of `url`'s bytes; a failure is a write failure (ENOSPC, EIO), never ignored.
    private static func flush(_ url: URL) throws {
        let fd = FileSystemPath.withCString(url.path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
    }
}
