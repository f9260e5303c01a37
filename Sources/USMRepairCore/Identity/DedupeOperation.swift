import Foundation
import GRDB
import Synchronization

/// What `dedupe` was asked.
public struct DedupeRequest: Sendable {
    /// The store de-duplicated in place (through a staged copy, installed by the plan).
    public var store: StoreFileSet
    /// `--key ENTITY=ATTR[,ATTR...]`.
    public var keys: [String]
    /// `--keep newest`: the copy with the highest `Z_PK` survives (default: the lowest).
    public var newest: Bool
    /// Count and report; change nothing.
    public var dryRun: Bool

    public init(store: StoreFileSet, keys: [String] = [], newest: Bool = false, dryRun: Bool = false) {
        self.store = store
        self.keys = keys
        self.newest = newest
        self.dryRun = dryRun
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

    /// What goes, counted on a private copy, and the plan.
    public struct Prepared {
        public let plan: Plan
        public let before: [String: Int]
        public let removed: [String: Int]
        public let recovered: [PlanExecutor.Recovery]
        public let dryRun: Bool
    }

    /// Checks the store, recovers first what a kill left pending in its folder (a dry run
    /// refuses then), counts the duplicates on a private copy and plans.
    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        let store = request.store
        guard FileStatus.lookup(store.main.path) != nil else {
            throw USMError.notFound(path: store.main.path, what: "store")
        }
        try Snapshot.refuseInside(
            executor.snapshotDirectory, protected: [store.directory], why: "the folder this command changes")
        let recovered = try executor.recoverBeforePlanning(in: [replacement.root], dryRun: dryRun)
        progress("reading \(store.main.path), finding duplicates")
        let (before, removed) = try Self.preview(store, keys: request.keys, newest: request.newest)
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
        return Prepared(plan: plan, before: before, removed: removed, recovered: recovered, dryRun: dryRun)
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? {
        prepared.removed.isEmpty
            ? nil
            : ChangeConsent(
                unattended: "dedupe changes files: run it with --yes (see what goes with --dry-run)",
                question: "Remove these duplicates? A snapshot is taken first.")
    }

    func report(_ prepared: Prepared, removed: [String: Int], result: PlanExecutor.Result?) -> ChangeReport<
        DedupeReport
    > {
        let noOp = prepared.removed.isEmpty
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
                store: store, keep: request.newest ? "newest" : "oldest", before: prepared.before, removed: removed))
    }

    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) -> ChangeReport<DedupeReport> {
        report(prepared, removed: prepared.removed, result: nil)
    }

    /// Runs the plan: the engine copies the store whole into staging, the duplicates are removed
    /// there and the result checked, then installed.
    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<DedupeReport> {
        guard !prepared.removed.isEmpty else { return preview(prepared) }
        let store = request.store
        let plan = prepared.plan
        let request = self.request
        let engine = self.engine
        let box = Mutex<[String: Int]?>(nil)
        let executor = self.executor.with(builder: { build in
            var options = MigrationOptions(keepUbiquityMetadata: true)
            options.operation = "dedupe"
            options.keepStoreUUID = true
            let staged = URL(fileURLWithPath: build.staged)
            var migration = try engine.build(
                source: StoreFileSet(main: URL(fileURLWithPath: build.source)), staged: staged, shownAs: store,
                strategy: "ios", options: options, mode: .overwrite)
            let referenced = try Self.externalReferences(staged)
            let done = try Self.count(staged, keys: request.keys, newest: request.newest)
            // External-data files of removed copies go, unless another object still names them.
            let stagedFiles = StoreFileSet(main: staged)
            for (kind, name) in try referenced.subtracting(Self.externalReferences(staged)).compactMap({
                reference -> (ExternalData.Kind, String)? in
                let parts = reference.split(separator: "/", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { return nil }
                return (parts[0] == "fbf" ? .fileBackedFuture : .externalStorage, parts[1])
            }) {
                let file = kind.directory(stagedFiles).appendingPathComponent(name)
                guard FileStatus.lookup(file.path)?.kind == .file else { continue }
                do {
                    try FileManager.default.removeItem(at: file)
                } catch {
                    throw USMError.writeFailed(path: file.path, reason: error.localizedDescription)
                }
            }
            let check = try StagedStore.open(staged)
            let integrity = try check.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
            try check.close()
            guard integrity == "ok" else {
                throw USMError.verificationFailed(
                    path: staged.path, detail: "integrity_check after removing duplicates: \(integrity ?? "no answer")")
            }
            migration.deduplicated = done
            box.withLock { $0 = done }
            return migration
        })
        let result = try executor.run(plan, progress: progress)
        return report(prepared, removed: box.withLock { $0 } ?? prepared.removed, result: result)
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
        return (before, try count(captured.copy, keys: keys, newest: newest))
    }

    /// The external-data files the store at `url` names (`ext/<name>`, `fbf/<name>`).
    static func externalReferences(_ url: URL) throws -> Set<String> {
        let queue = try StagedStore.open(url, readonly: true)
        defer { try? queue.close() }
        do {
            return try queue.read { db in
                var names: Set<String> = []
                try ExternalData.references(db, schema: try CoreDataSchema.readMain(db)) { reference, _ in
                    names.insert((reference.kind == .fileBackedFuture ? "fbf/" : "ext/") + reference.name)
                }
                return names
            }
        } catch let error as USMError {
            throw error
        } catch {
            throw StagedStore.wrapWrite(error, path: url)
        }
    }

    /// Removes the duplicates of the store at `url`; returns what was removed.
    static func count(_ url: URL, keys: [String], newest: Bool) throws -> [String: Int] {
        let queue = try StagedStore.open(url)
        defer { try? queue.close() }
        do {
            return try queue.writeWithoutTransaction { db in
                let schema = try CoreDataSchema.readMain(db)
                let parsed = try ObjectIdentity.parseKeys(keys, schema: schema)
                var removed: [String: Int] = [:]
                try db.inTransaction {
                    removed = try Deduplicator(keys: parsed, newest: newest).run(db)
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
