import Foundation
import GRDB
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs plans, and finishes or undoes the ones a kill interrupted. In `run`, in this order:
/// 1. take the lock of every root (another run holding one refuses);
/// 2. finish or undo any operation a kill left pending in those roots (`recover`), obeying only
///    operations this machine recorded writing (`PendingOperation`);
/// 3. check the plan (`PlanCheck`) and re-check every path's fingerprint (a change refuses);
/// 4. refuse when another process has a store the plan touches open or locked;
/// 5. record the plan's digest in the state folder (`OperationRecords`), then write `plan.json`
///    and the journal into the first root's private folder, fsynced;
/// 6. run each step between a `begin` and a `done` record; before each move, every folder on the
///    way must be a real folder, not a link (`PlanCheck.linkFree`).
/// Undo and redo sit next to each other here: before `commit`, recovery reverses the `retire` and
/// `install` steps that ran, newest first, and drops staging; after `commit`, it finishes `purge`.
/// Recovery never removes what it could not put back: an item whose place holds something new is
/// a `recoveryConflict` (checked for every item before the first moves back), an item in the trash
/// that is not what was retired is refused, and an undo that leaves anything in the trash keeps the
/// operation pending (`PlanExecutor+Undo.swift`).
public struct PlanExecutor {
    /// Fills a staged store from a source (the migration engine); returns the engine's report
    /// (rows per entity of the source and the result, verification, what was left out).
    public typealias Builder = @Sendable (Plan.StoreBuild) throws -> MigrationReport

    /// What the caller wants to see (or do) between steps.
    public struct Hooks: Sendable {
        /// Called after step `index` is journaled done. Throwing `Interruption` stops the run
        /// right there, as a kill would: nothing is undone or removed (tests of recovery).
        public var afterStep: @Sendable (_ index: Int) throws -> Void

        /// Called with the snapshot's path once it is written, before it is read back (tests of
        /// a snapshot that does not read back).
        public var snapshotWritten: @Sendable (_ path: URL) -> Void

        public init(
            afterStep: @escaping @Sendable (_ index: Int) throws -> Void = { _ in },
            snapshotWritten: @escaping @Sendable (_ path: URL) -> Void = { _ in }
        ) {
            self.afterStep = afterStep
            self.snapshotWritten = snapshotWritten
        }

        /// No hooks.
        public static let none = Hooks()
    }

    /// Thrown by a hook to stop a run where it is, as a kill would: no undo, no cleanup.
    public struct Interruption: Error, Equatable {
        public init() {}
    }

    /// What a run did.
    public struct Result: Sendable, Encodable {
        /// One step as run.
        public struct StepRun: Sendable, Encodable {
            public let index: Int
            public let action: Plan.Action.Kind
            public let reason: String
            public let seconds: Double
        }

        /// The snapshot `restore` puts back, null when the plan had nothing to snapshot.
        @NullEncoded public var snapshot: String?
        public let steps: [StepRun]
        /// Rows per entity of every store written, by its final path.
        public let rows: [String: [String: Int]]
        /// The migration engine's report of every store built, by its final path.
        public let builds: [String: MigrationReport]
        /// Entries and bytes extracted from an archive (`restore`).
        public let extracted: Extracted

        /// What an `extract` step wrote.
        public struct Extracted: Sendable, Encodable, Equatable {
            public var entries = 0
            public var bytes: Int64 = 0
        }
        /// Operations a kill had left pending, finished or undone first.
        public let recovered: [Recovery]
        public let seconds: Double
        /// usm-repair's own lock files or empty private folders that could not be removed (with
        /// why): the change is complete; the next run in those folders removes them.
        public var leftovers: [String] = []
        /// What the run could not finish outside its files (macOS: preferences `cfprefsd` may still cache).
        public var notes: [String] = []
    }

    /// An interrupted operation found and dealt with.
    public struct Recovery: Sendable, Encodable, Equatable {
        /// What recovery did to an interrupted operation.
        public enum Outcome: String, Sendable, Encodable, Equatable {
            /// It had not committed: the old state is back.
            case undone
            /// It had: the new state stays.
            case finished
        }

        public let operation: String
        public let id: String
        public let outcome: Outcome
        public let journal: String
    }

    public let snapshotDirectory: URL
    public let builder: Builder?
    /// Where this machine records the plans it writes (the only ones it ever recovers).
    public let records: OperationRecords
    public let hooks: Hooks
    /// The command line recorded in every snapshot's manifest.
    public let commandLine: [String]

    public init(
        snapshotDirectory: URL, builder: Builder? = nil, records: OperationRecords = OperationRecords(),
        hooks: Hooks = .none,
        commandLine: [String] = CommandLine.arguments
    ) {
        self.snapshotDirectory = snapshotDirectory
        self.builder = builder
        self.records = records
        self.hooks = hooks
        self.commandLine = commandLine
    }

    /// This executor with another migration engine behind its `build` steps.
    public func with(builder: @escaping Builder) -> PlanExecutor {
        PlanExecutor(
            snapshotDirectory: snapshotDirectory, builder: builder, records: records, hooks: hooks,
            commandLine: commandLine)
    }

    /// Runs `plan`. `progress` receives a line before each step. `allowed` are the folders the
    /// user named (a pending operation found first is obeyed only inside them); by default the plan's own.
    /// `entries` receives each archive entry an `extract` step writes (`restore --verbose`).
    public func run(
        _ plan: Plan, allowed: [Plan.Root]? = nil, progress: (String) -> Void = { _ in },
        entries: ((String) -> Void)? = nil
    ) throws -> Result {
        let started = Date()
        let lock = try OperationLock(roots: plan.roots)
        defer { lock.release() }
        let recovered = try recoverPending(in: plan.roots, allowed: allowed ?? plan.roots)
        if let problem = PlanCheck.problem(in: plan, allowed: nil) {
            throw USMError.unexpected("refusing to run a plan that is not well formed: \(problem)")
        }
        try verify(plan)
        guard let primary = plan.primaryRoot else { throw USMError.unexpected("a plan without folders") }
        let bytes = try JSONOutput.data(plan)
        guard bytes.count <= Journal.maxPlanBytes else {
            throw USMError.preconditionFailed(
                "the plan has \(plan.steps.count) steps, more than an operation can record (\(bytes.count) bytes)")
        }
        // The record first, outside the layout: an operation folder is obeyed later only if it
        // is there. Then the journal: every other folder of the operation exists only once it
        // does. If even that cannot be written (a full disk), nothing has changed: remove what was made.
        try records.write(plan, bytes: bytes)
        let journal: Journal
        do {
            try Self.makeFolder(primary.operationURL(plan.id))
            journal = try Journal.create(in: primary.operationURL(plan.id), planBytes: bytes)
            for root in plan.roots.dropFirst() {
                try Self.makeFolder(root.operationURL(plan.id))
            }
        } catch {
            try? purge(plan, journal: nil)
            throw USMError.wrap(error).diagnosingSpace()
        }
        defer { journal.close() }
        var runs: [Result.StepRun] = []
        var snapshot: String?
        var rows: [String: [String: Int]] = [:]
        var builds: [String: MigrationReport] = [:]
        var extracted = Result.Extracted()
        var notes: [String] = []
        // The snapshot's read-back runs beside the steps that only stage (build, checkpoint,
        // markers, preferences, extraction) and is waited for before the first step that touches
        // the user's folders: nothing is retired or installed on an unverified snapshot.
        var verification: SnapshotVerification?
        defer { verification?.abandon() }
        for (index, step) in plan.steps.enumerated() {
            progress("[step \(index + 1)/\(plan.steps.count)] \(step.reason)")
            let stepStart = Date()
            var done = Journal.Event(event: .done, step: index)
            do {
                var begin = Journal.Event(event: .begin, step: index)
                // What an install moves into place, recorded before it moves: its undo takes
                // back that item only, never another that came to lie at its place.
                if case let .install(staged, _, _) = step.action { begin.installs = Journal.identity(of: staged) }
                if step.action.touchesTheUsersFolders, let pending = verification {
                    verification = nil
                    try pending.wait()
                }
                try journal.append(begin)
                switch step.action {
                case .snapshot:
                    let file = try Snapshot.take(
                        .init(
                            roots: (plan.snapshotRoots ?? plan.roots).map {
                                ($0.name, URL(fileURLWithPath: $0.path, isDirectory: true))
                            },
                            items: plan.snapshotItems.map { URL(fileURLWithPath: $0) }, operation: plan.operation,
                            commandLine: commandLine, label: plan.label),
                        into: snapshotDirectory,
                        protected: plan.roots.map { URL(fileURLWithPath: $0.path, isDirectory: true) },
                        verifying: false)
                    hooks.snapshotWritten(file)
                    verification = SnapshotVerification(file)
                    snapshot = file.path
                    done.snapshot = file.path
                case let .checkpoint(source, staged):
                    rows[staged] = try Checkpoint.run(
                        source: StoreFileSet(main: URL(fileURLWithPath: source)), into: URL(fileURLWithPath: staged))
                case let .build(build):
                    guard let builder else {
                        throw USMError.unexpected("no migration engine was given to build \(build.staged)")
                    }
                    try Self.makeFolder(URL(fileURLWithPath: build.staged).deletingLastPathComponent(), in: plan)
                    let report: MigrationReport
                    do { report = try builder(build) } catch let error as DatabaseError {
                        // An SQLite error escaping the engine names the store being built.
                        throw StagedStore.wrapWrite(error, path: URL(fileURLWithPath: build.staged))
                    }
                    builds[build.staged] = report
                    rows[build.staged] = Dictionary(
                        report.entities.map { ($0.name, $0.after ?? 0) }, uniquingKeysWith: +)
                case let .writeMarker(uuid, staged):
                    try Self.makeFolder(URL(fileURLWithPath: staged).deletingLastPathComponent(), in: plan)
                    try FileWrite.create(URL(fileURLWithPath: staged), contents: try FileWrite.markerContents(uuid))
                case let .writePreferences(source, edit, staged):
                    try Self.makeFolder(URL(fileURLWithPath: staged).deletingLastPathComponent(), in: plan)
                    try edit.apply(from: URL(fileURLWithPath: source), to: URL(fileURLWithPath: staged))
                case let .extract(archive, items, folders):
                    let (count, bytes) = try SnapshotUndo.extract(
                        archive: URL(fileURLWithPath: archive), items: items, folders: folders, onEntry: entries)
                    extracted.entries += count
                    extracted.bytes += bytes
                case let .retire(path, trash):
                    // No folder on the way to the trash may be a link before one is made there.
                    try Self.makeFolder(URL(fileURLWithPath: trash).deletingLastPathComponent(), in: plan)
                    try Self.move(path, to: trash, in: plan)
                case let .install(staged, path, optional):
                    if optional, FileStatus.lookup(staged) == nil { break }
                    guard FileStatus.lookup(path) == nil else { throw USMError.changedSincePlanning(path: path) }
                    Self.keepMode(of: plan, replacedAt: path, on: staged)
                    Self.keepOwner(of: plan, replacedAt: path, on: staged)
                    try Self.move(staged, to: path, in: plan)
                case .commit:
                    try journal.append(.init(event: .committed))
                    // macOS: the preferences installed are handed to cfprefsd, which caches them.
                    for case let .install(_, path, _) in plan.steps.map(\.action) where path.hasSuffix(".plist") {
                        if let note = PreferencesDaemon.adopt(path) { notes.append(note) }
                    }
                case .purge:
                    try purge(plan, journal: journal)
                }
                if step.action != .purge { try journal.append(done) }
                try hooks.afterStep(index)
            } catch let interruption as Interruption {
                // Stopped as a kill would stop it: the journal says where, `recover` goes on.
                throw interruption
            } catch {
                // Nothing after the failing step ran: undo what did, unless the plan had committed.
                let failure = USMError.wrap(error).diagnosingSpace()
                if plan.steps[..<index].contains(where: { $0.action == .commit }) {
                    // The change is in place; only the cleanup failed: say so, `recover` finishes it.
                    throw USMError.operationPending(
                        operation: plan.operation, committed: true, reason: failure.message,
                        underlying: failure.exitStatus)
                }
                // Undo, then drop staging; if the undo itself fails the operation stays pending
                // (its trash may hold the user's files) for `recover`.
                let state = Journal.state(in: journal.folder, stepCount: plan.steps.count)
                do {
                    try Self.undo(plan, begun: state.begun, installs: state.installs)
                    // Nothing is discarded that was not put back (a trash swapped or filled meanwhile).
                    try Self.refuseLeftovers(plan)
                } catch {
                    throw USMError.operationPending(
                        operation: plan.operation, committed: false,
                        reason: "\(failure.message); then: \(USMError.wrap(error).message)"
                            + (USMError.snapshotNote(snapshot).map { "; \($0)" } ?? ""),
                        underlying: failure.exitStatus)
                }
                try? purge(plan, journal: journal)
                throw failure
            }
            runs.append(
                .init(
                    index: index, action: step.action.kind, reason: step.reason,
                    seconds: Date().timeIntervalSince(stepStart)))
        }
        // A plan that stages only (none touches the user's folders) still ends on a verified snapshot.
        if let pending = verification {
            verification = nil
            try pending.wait()
        }
        var finalRows: [String: [String: Int]] = [:]
        var finalBuilds: [String: MigrationReport] = [:]
        for step in plan.steps {
            guard case let .install(staged, path, _) = step.action else { continue }
            if let counted = rows[staged] { finalRows[path] = counted }
            if let report = builds[staged] { finalBuilds[path] = report }
        }
        var result = Result(
            snapshot: snapshot, steps: runs, rows: finalRows, builds: finalBuilds, extracted: extracted,
            recovered: recovered,
            seconds: Date().timeIntervalSince(started))
        result.leftovers = lock.release()
        result.notes = notes
        return result
    }

    /// Refuses when a path changed since planning, or a store is in use by another process.
    func verify(_ plan: Plan) throws {
        // Everything the plan moves aside or snapshots is what a snapshot can hold.
        let retired = plan.steps.compactMap { step -> String? in
            if case let .retire(path, _) = step.action { return path }
            return nil
        }
        try PlanCheck.refuseSpecialFiles(plan.snapshotItems + retired)
        for (path, expected) in plan.expected.sorted(by: { $0.key < $1.key })
        where Plan.Fingerprint.of(path) != expected {
            throw USMError.changedSincePlanning(path: path)
        }
        for store in plan.stores {
            if let busy = StoreLocks.busy(StoreFileSet(main: URL(fileURLWithPath: store))) {
                throw USMError.storeBusy(path: busy.path, reason: busy.reason, pid: busy.pid)
            }
        }
    }

    // MARK: - Recovery

    /// Finishes or undoes every operation pending in `roots` (the folders the user named); takes their locks.
    public func recover(roots: [Plan.Root]) throws -> [Recovery] {
        let lock = try OperationLock(roots: roots)
        defer { lock.release() }
        return try recoverPending(in: roots, allowed: roots)
    }

    /// What `recover` would do in `roots`, changing nothing (`recover --dry-run`): each pending
    /// operation this machine recorded, as finished (committed) or undone; one it did not write is
    /// refused (`untrustedOperation`) as the run refuses it. A folder killed before its journal
    /// is only removed by the run, as it is not reported by it either.
    public func pendingRecoveries(roots: [Plan.Root]) throws -> [Recovery] {
        try Self.pending(in: roots).compactMap { folder in
            if isUnjournaled(folder, in: roots) { return nil }
            let pending = try PendingOperation.load(folder, allowed: roots, records: records)
            return Recovery(
                operation: pending.plan.operation, id: pending.plan.id,
                outcome: pending.committed ? .finished : .undone, journal: folder.path)
        }
    }

    /// Before planning in `roots`: a pending operation refuses a dry run (`interruptedOperation`,
    /// or `untrustedOperation` for one this machine did not write), and is otherwise finished or
    /// undone first. Returns what was recovered.
    func recoverBeforePlanning(in roots: [Plan.Root], dryRun: Bool) throws -> [Recovery] {
        guard let folder = Self.pending(in: roots).first else { return [] }
        if dryRun {
            if isUnjournaled(folder, in: roots), let record = records.read(folder.lastPathComponent) {
                throw USMError.interruptedOperation(path: folder.path, operation: record.operation)
            }
            let pending = try PendingOperation.load(folder, allowed: roots, records: records)
            throw USMError.interruptedOperation(path: folder.path, operation: pending.plan.operation)
        }
        return try recover(roots: roots)
    }

    /// The operation folders holding a plan in `roots` (pending operations), without locking.
    public static func pending(in roots: [Plan.Root]) -> [URL] {
        roots.flatMap { root -> [URL] in
            let operations = root.privateURL.appendingPathComponent("operations", isDirectory: true)
            guard FileStatus.lookup(root.privateURL.path)?.kind == .directory,
                FileStatus.lookup(operations.path)?.kind == .directory
            else { return [] }
            // A `.purging-<id>` folder is one a kill left half removed (its plan may still be in
            // it): not pending, only to be removed (`recoverPending`).
            let names = ((try? DirectoryListing.names(operations.path)) ?? []).filter { !$0.hasPrefix(purgingPrefix) }
            return names.sorted().map { operations.appendingPathComponent($0, isDirectory: true) }
                .filter { FileStatus.lookup($0.appendingPathComponent(Journal.planName).path)?.kind == .file }
        }
    }

    /// Under the caller's lock: finishes (committed) or undoes (not committed) each pending
    /// operation this machine recorded writing, taking the locks of the folders its plan names
    /// that the caller did not lock. One it did not write is refused (`untrustedOperation`) and
    /// left as it is.
    func recoverPending(in roots: [Plan.Root], allowed: [Plan.Root]) throws -> [Recovery] {
        var done: [Recovery] = []
        for folder in Self.pending(in: roots) {
            // Killed while its plan was being written, before its journal: nothing of the plan
            // began (the journal is made before the first step), so the folder goes, whatever its
            // plan.json holds. Only a folder this machine recorded, in a folder the record names.
            if isUnjournaled(folder, in: roots) {
                try SafeRemove.tree(folder)
                continue
            }
            let pending = try PendingOperation.load(folder, allowed: allowed, records: records)
            let plan = pending.plan
            // Folders are the same folder whatever a plan calls them (`app`, the folder's name...).
            let extra = try OperationLock(
                roots: plan.roots.filter { root in !roots.contains { $0.path.pathKey == root.path.pathKey } })
            defer { extra.release() }
            if pending.committed {
                let journal = try Journal.reopen(folder)
                defer { journal.close() }
                try purge(plan, journal: journal)
            } else {
                do {
                    try Self.undo(plan, begun: pending.journal.begun, installs: pending.journal.installs)
                    // "Undone" only when the trash is empty: an item no step put back (a journal
                    // emptied, cut short or replaced) keeps the folder, and recovery refuses.
                    try Self.refuseLeftovers(plan)
                } catch let error as USMError {
                    throw error.namingSnapshot(pending.journal.snapshot)
                }
                try purge(plan, journal: nil)
            }
            done.append(
                Recovery(
                    operation: plan.operation, id: plan.id, outcome: pending.committed ? .finished : .undone,
                    journal: folder.path))
        }
        // What a kill left half removed: a folder being purged (its operation had finished), or
        // one killed while its plan was being written (nothing of the user's can be in it: the
        // first retire comes after the journal). Only folders of operations this machine recorded.
        for root in roots {
            let operations = root.privateURL.appendingPathComponent("operations", isDirectory: true)
            guard FileStatus.lookup(root.privateURL.path)?.kind == .directory,
                FileStatus.lookup(operations.path)?.kind == .directory
            else { continue }
            for name in (try? DirectoryListing.names(operations.path)) ?? [] {
                let folder = operations.appendingPathComponent(name, isDirectory: true)
                let purging = name.hasPrefix(Self.purgingPrefix)
                let id = purging ? String(name.dropFirst(Self.purgingPrefix.count)) : name
                guard let record = records.read(id), record.roots.contains(where: { $0.pathKey == root.path.pathKey })
                else { continue }
                let trash = folder.appendingPathComponent("trash")
                let unplanned =
                    FileStatus.lookup(folder.appendingPathComponent(Journal.planName).path)?.kind != .file
                    && ((try? DirectoryListing.names(trash.path)) ?? []).isEmpty
                    && !roots.contains {
                        FileStatus.lookup($0.operationURL(id).appendingPathComponent(Journal.planName).path) != nil
                    }
                if purging || unplanned {
                    try SafeRemove.tree(folder)
                    if !roots.contains(where: {
                        FileStatus.lookup($0.operationURL(id).path) != nil
                            || FileStatus.lookup(
                                $0.privateURL.appendingPathComponent("operations/\(Self.purgingPrefix)\(id)").path)
                                != nil
                    }) {
                        records.remove(id)
                    }
                }
            }
        }
        // A record whose operation never reached the layout (a kill right after the record was
        // written): every folder it names is locked here and none holds its operation.
        for record in records.all() {
            let folders = record.roots.compactMap { path in roots.first { $0.path.pathKey == path.pathKey } }
            guard folders.count == record.roots.count,
                !folders.contains(where: {
                    FileStatus.lookup($0.operationURL(record.id).path) != nil
                        || FileStatus.lookup(
                            $0.privateURL.appendingPathComponent("operations/\(Self.purgingPrefix)\(record.id)").path)
                            != nil
                })
            else { continue }
            records.remove(record.id)
        }
        return done
    }

    /// True for an operation folder of `roots` that this machine recorded (for that folder) and
    /// that holds no journal and nothing in its trash: a run killed between writing the plan and
    /// creating the journal. (A journal missing beside retired items was removed afterwards: the
    /// operation is undone from its plan, or refused, never discarded with the items.)
    func isUnjournaled(_ folder: URL, in roots: [Plan.Root]) -> Bool {
        let id = folder.lastPathComponent
        guard FileStatus.lookup(folder.appendingPathComponent(Journal.journalName).path) == nil,
            !roots.contains(where: { !Self.trashLeftovers(in: $0.operationURL(id)).isEmpty }),
            let record = records.read(id)
        else { return false }
        return roots.contains { root in
            root.operationURL(id).path.pathKey == folder.path.pathKey
                && record.roots.contains { $0.pathKey == root.path.pathKey }
        }
    }

    /// Removes the operation's folders (other roots first, the journal's last), records the end,
    /// and forgets its record. Each folder is first renamed to `.purging-<id>` in one step, so
    /// that a kill in the middle of the removal leaves a folder recovery knows it may simply finish removing.
    func purge(_ plan: Plan, journal: Journal?) throws {
        for root in plan.roots.dropFirst() { try Self.discard(root.operationURL(plan.id)) }
        try? journal?.append(.init(event: .finished))
        if let primary = plan.primaryRoot { try Self.discard(primary.operationURL(plan.id)) }
        records.remove(plan.id)
    }

    static let purgingPrefix = ".purging-"

    private static func discard(_ folder: URL) throws {
        let doomed = folder.deletingLastPathComponent().appendingPathComponent(purgingPrefix + folder.lastPathComponent)
        // A kill in an earlier purge may have left the renamed folder half removed: finish it.
        if FileStatus.lookup(doomed.path) != nil { try SafeRemove.tree(doomed) }
        guard FileStatus.lookup(folder.path) != nil else { return }
        try move(folder.path, to: doomed.path)
        try SafeRemove.tree(doomed)
    }

    // MARK: - Files

    /// A file that replaces another keeps the permission bits of the one it replaces (the app's
    /// files stay as readable as they were): the retired file is in the operation's trash.
    static func keepMode(of plan: Plan, replacedAt path: String, on staged: String) {
        for step in plan.steps {
            guard case let .retire(retired, trash) = step.action, retired == path,
                let old = FileStatus.lookup(trash), old.kind == .file, FileStatus.lookup(staged)?.kind == .file
            else { continue }
            _ = FileSystemPath.withCString(staged) { chmod($0, mode_t(old.mode & 0o1777)) }
            return
        }
    }

    /// What is installed belongs to whoever owned what it replaces (the retired item, in the
    /// operation's trash), or, when nothing was there, whoever owns the folder it goes into: a
    /// store, preferences or marker written by a run as root stays the app's user's (Core Data and
    /// UbiquityStoreManager write them as that user). Folders installed whole (a store's
    /// `_SUPPORT` folder) take that owner throughout.
    static func keepOwner(of plan: Plan, replacedAt path: String, on staged: String) {
        var owner: Ownership?
        for step in plan.steps {
            guard case let .retire(retired, trash) = step.action, retired == path, let old = Ownership.of(trash) else {
                continue
            }
            owner = old
            break
        }
        guard let owner = owner ?? Ownership.of(URL(fileURLWithPath: path).deletingLastPathComponent().path) else {
            return
        }
        owner.apply(toTree: staged)
    }

    /// Moves within `plan`'s folders, never through a link on either way and never over an item
    /// that appeared at `to` (`AnchoredPath.move`: the folders are opened one name at a time from
    /// their roots, so a link swapped in while the run goes on is refused, not followed).
    static func move(_ from: String, to: String, in plan: Plan) throws {
        if let fromRoot = plan.root(of: FileSystemPath.parent(from)),
            let toRoot = plan.root(of: FileSystemPath.parent(to))
        {
            try AnchoredPath.move(from, under: fromRoot.path, to: to, under: toRoot.path)
            return
        }
        for path in [from, to] {
            if let root = plan.root(of: path) { try PlanCheck.linkFree(path, under: root.path) }
        }
        try move(from, to: to)
    }

    static func move(_ from: String, to: String) throws {
        // Through the path's own bytes: a name that is not UTF-8 is moved as the file system knows it.
        let moved = FileSystemPath.withCString(from) { a in FileSystemPath.withCString(to) { rename(a, $0) } }
        guard moved == 0 else {
            throw USMError.writeFailed(path: to, reason: "cannot move \(from) there: \(errnoDescription())")
        }
        FileSync.directory(URL(fileURLWithPath: to).deletingLastPathComponent())
        FileSync.directory(URL(fileURLWithPath: from).deletingLastPathComponent())
    }

    /// Makes a folder of `plan` (staging, trash), never through a link: below one of the plan's
    /// roots each folder on the way is opened (or made) from the one before it, so a link
    /// swapped in meanwhile is refused instead of having the folder made outside the layout.
    static func makeFolder(_ url: URL, in plan: Plan) throws {
        guard let root = plan.root(of: url.path) else { return try makeFolder(url) }
        try AnchoredPath.makeFolder(url.path, under: root.path)
    }

    static func makeFolder(_ url: URL) throws {
        do {
            try FileManager.default.createDirectory(
                at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw USMError.writeFailed(path: url.path, reason: USMError.wrap(error).message)
        }
    }
}

extension Plan.Action {
    /// What kind of action a step is, as reports and printers name it (the JSON `action`).
    public enum Kind: String, Sendable, Encodable, Equatable {
        case snapshot, checkpoint, build, extract, retire, install, commit, purge
        case writeMarker = "write-marker"
        case writePreferences = "write-preferences"
    }

    /// The action's kind, for reports.
    public var kind: Kind {
        switch self {
        case .snapshot: .snapshot
        case .checkpoint: .checkpoint
        case .build: .build
        case .writeMarker: .writeMarker
        case .writePreferences: .writePreferences
        case .extract: .extract
        case .retire: .retire
        case .install: .install
        case .commit: .commit
        case .purge: .purge
        }
    }
}

/// A snapshot's read-back (`Snapshot.verify`) running on another thread, with the command's
/// scratch registry and progress sink.
final class SnapshotVerification: Sendable {
    private let work: Background<Void>

    init(_ file: URL) {
        let scratch = Scratch.current
        let sink = ProgressNote.box
        work = Background {
            try Scratch.$current.withValue(scratch) {
                try ProgressNote.$box.withValue(sink) { try Snapshot.verify(file) }
            }
        }
    }

    /// Waits for the read-back; throws what it found (`manifestMismatch`, a read error).
    func wait() throws { try work.value() }

    /// Waits for it and drops its outcome (a run that failed before relying on it).
    func abandon() { _ = try? work.value() }
}
