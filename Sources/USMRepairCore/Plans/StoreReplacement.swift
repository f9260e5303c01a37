import Foundation

/// The one plan of the commands that put a store built in staging in place of a store's file set
/// (`migrate-store`, `salvage`), so that both snapshot, retire and install alike. The plan works
/// in DST's folder (`<folder>/.usm-repair/`):
/// 1. `snapshot` — when DST's file set is replaced: all of it, outside that folder;
/// 2. `build` — the store, made and verified in the operation's staging folder;
/// 3. `retire` — DST's old members, when they are replaced;
/// 4. `install` — the staged main file and its external-data folder;
/// 5. `commit`, `purge`.
/// A kill at any instant is finished or undone by `recover --store DST` (or the next run there).
/// The changes built on it (`MigrateStoreChange`, `SalvageChange`, `DedupeChange`) keep only what
/// they add: their checks, their build step, their details.
public struct StoreReplacement {
    /// The store whose file set is made or replaced.
    let destination: StoreFileSet
    /// The command, the plan's `operation`.
    let operation: String
    /// What the staged store is called in the steps' reasons (`new store`, `salvaged store`).
    let noun: String

    /// The folder such a plan works in: DST's.
    static func root(of destination: StoreFileSet) -> Plan.Root {
        .folder(destination.directory)
    }

    var root: Plan.Root { Self.root(of: destination) }

    /// What such a change's `prepare` made: the plan and what it was made on. `Extra`: what the
    /// command adds (dedupe's count; nothing for `migrate-store` and `salvage`).
    public struct Prepared<Extra> {
        public let plan: Plan
        /// Interrupted operations finished or undone before planning.
        public let recovered: [PlanExecutor.Recovery]
        /// Planned for a dry run.
        public let dryRun: Bool
        /// DST exists and is replaced (`--overwrite`): asked first.
        let replacing: Bool
        /// When planning began (the report's `durations.total`).
        let started: Date
        /// What the command adds.
        public let extra: Extra
    }

    /// Asked when DST exists and is replaced (snapshotted first); nothing is asked otherwise.
    func consent<Extra>(_ prepared: Prepared<Extra>) -> ChangeConsent? {
        guard prepared.replacing else { return nil }
        let path = destination.main.path
        return ChangeConsent(
            unattended: "\(path) exists; replacing it needs --yes (it is snapshotted first)",
            question: "Replace \(path)? It is snapshotted first.")
    }

    /// Runs `prepared`'s plan with `builder` as the build step's (the command's own), and the
    /// seconds it spent putting the store in place.
    func run<Extra>(
        _ prepared: Prepared<Extra>, executor: PlanExecutor, builder: @escaping PlanExecutor.Builder,
        progress: (String) -> Void
    ) throws -> (result: PlanExecutor.Result, installSeconds: Double) {
        let result = try executor.with(builder: builder).run(prepared.plan, progress: progress)
        return (result, Self.installSeconds(prepared.plan, result))
    }

    /// The envelope of `migrate-store` and `salvage` around their details, run (`result`) or not:
    /// `durations.total` set from `prepared.started`, the details' notes and status, `done` the
    /// next step after a run.
    func report<Extra, Details: ReplacementDetails>(
        _ prepared: Prepared<Extra>, command: String, operation: String, details: Details,
        result: PlanExecutor.Result?, done: String
    ) -> ChangeReport<Details> {
        var details = details
        details.durations["total"] = Date().timeIntervalSince(prepared.started)
        return ChangeReport(
            command: command, operation: operation, dryRun: prepared.dryRun, noOp: false, changed: result != nil,
            steps: ChangeStep.list(prepared.plan, result: result), snapshot: result?.snapshot,
            notes: details.notes + (result?.leftovers ?? []).map(ChangeNotes.leftover),
            recovered: prepared.recovered + (result?.recovered ?? []),
            seconds: details.durations["total"] ?? 0,
            nextStep: result == nil
                ? "run it without --dry-run to build, verify and install \(destination.main.path)" : done,
            status: details.exitStatus, details: details)
    }

    /// The checks every such command makes before planning, in this order: SRC is not DST, by
    /// path or as a file (device and inode, links followed: `usage`, saying `sameStore`), SRC
    /// exists, DST's folder exists, `also` (the command's own), the snapshot folder lies outside
    /// DST's folder; then what a kill left pending in DST's folder is recovered (a dry run
    /// refuses then, exit 7).
    /// - Throws: `usage`, `notFound`, `interruptedOperation`, what `also` throws.
    func prepare(
        source: StoreFileSet, sameStore: String, executor: PlanExecutor, dryRun: Bool, also: () throws -> Void = {}
    ) throws -> [PlanExecutor.Recovery] {
        guard source.main.path != destination.main.path else { throw USMError.usage(sameStore) }
        // Another name of the same file (a hard link, a folder symlinked to SRC's, a link to
        // SRC) is the same store: a merge would double every object, an overwrite replace SRC.
        guard !FileStatus.sameObject(source.main.path, destination.main.path) else {
            throw USMError.usage(
                "\(sameStore): \(destination.main.path) is another name of \(source.main.path) (the same file, through a hard link or a symlink)"
            )
        }
        guard FileStatus.lookup(source.main.path) != nil else {
            throw USMError.notFound(path: source.main.path, what: "source store")
        }
        guard FileStatus.resolve(destination.directory.path)?.kind == .directory else {
            throw USMError.notFound(path: destination.directory.path, what: "destination folder")
        }
        try also()
        try Snapshot.refuseInside(
            executor.snapshotDirectory, protected: [destination.directory], why: "the folder this command changes")
        return try executor.recoverBeforePlanning(in: [root], dryRun: dryRun)
    }

    /// The plan: `build(staged)` is the build step for the staged main file's path, `why` its
    /// reason. `replacing`: DST's existing file set is snapshotted and retired (else none of it
    /// may exist, which the caller checks).
    func plan(replacing: Bool, why: String, label: String?, build: (String) -> Plan.StoreBuild) throws -> Plan {
        let id = UUID().uuidString.lowercased()
        let operationFolder = root.operationURL(id)
        let staged = operationFolder.appendingPathComponent("staging/1/\(destination.fileName)").path
        var steps: [Plan.Step] = []
        var expected: [String: Plan.Fingerprint] = [:]
        for member in destination.allMembers { expected[member.path] = .of(member.path) }
        if replacing {
            steps.append(.init(.snapshot, "the old file set goes into a snapshot archive first; restore puts it back"))
        }
        steps.append(.init(.build(build(staged)), why))
        var counter = 1
        // A member that is a link leading out of DST's folder (`status --store DST` refuses to
        // follow it) is not retired, replaced or snapshotted (README: refused, exit 3).
        let confinement = Confinement(root: destination.directory)
        for member in destination.existingMembers() where replacing {
            counter += 1
            try PlanCheck.linkFree(member.path, under: root.path)
            try confinement.check(member)
            steps.append(
                .init(
                    .retire(
                        path: member.path,
                        trash: root.privatePath(id, "trash", counter, member.lastPathComponent)),
                    "the old \(member.lastPathComponent) makes way for the \(noun) (it is in the snapshot)"))
        }
        steps.append(
            .init(
                .install(staged: staged, path: destination.main.path, optional: false),
                "renamed into place from the staging folder beside it, with no -wal or -shm"))
        steps.append(
            .init(
                .install(
                    staged: StoreFileSet(main: URL(fileURLWithPath: staged)).supportDirectory.path,
                    path: destination.supportDirectory.path, optional: true),
                "its external-data folder goes with it"))
        steps += Plan.Step.finish("from here the \(noun) is in place and is never undone")
        var plan = Plan(
            id: id, operation: operation, roots: [root], expected: expected,
            stores: FileStatus.lookup(destination.main.path) != nil ? [destination.main.path] : [],
            snapshotItems: replacing ? destination.allMembers.map(\.path) : [], steps: steps, notes: [],
            nextLaunchBefore: nil,
            nextLaunchAfter: nil)
        plan.label = label
        return plan
    }

    /// Seconds the run spent putting the store in place (retire, install, commit, purge).
    private static func installSeconds(_ plan: Plan, _ result: PlanExecutor.Result) -> Double {
        let installing = Set(
            plan.steps.indices.filter {
                switch plan.steps[$0].action {
                case .retire, .install, .commit, .purge: true
                default: false
                }
            })
        return result.steps.filter { installing.contains($0.index) }.map(\.seconds).reduce(0, +)
    }
}

/// The details of a command that replaces a store (`MigrationReport`, `SalvageReport`): what the
/// shared envelope reads and sets.
protocol ReplacementDetails: Encodable & Sendable {
    var durations: [String: Double] { get set }
    var notes: [String] { get }
    var exitStatus: ExitStatus { get }
}

extension MigrationReport: ReplacementDetails {}
extension SalvageReport: ReplacementDetails {}
