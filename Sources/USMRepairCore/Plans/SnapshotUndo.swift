import Foundation

/// The undo of an operation: a snapshot put back where it was taken (`restore SNAPSHOT` without
/// `--to`). It is planned and run like every changing command, so it is as safe as the operation
/// it undoes: the current state of every path is snapshotted first (the undo can itself be
/// undone), the snapshot's items are extracted into private folders beside their places and
/// checked against the manifest, what is there now is moved aside, the extracted items are
/// renamed into place, and the paths that did not exist when the snapshot was taken (the ones the
/// operation created) are removed. Every step is journaled: a kill leaves a state `recover` (or
/// the next changing command) finishes or undoes, across all folders at once.
///
/// Steps, each needing the one before:
/// 1. verify the whole snapshot against its manifest (nothing is planned from a damaged one);
/// 2. map each item and each absent path to the folder it was read from (`roots[].source`),
///    keeping only the outermost of nested items; refuse names that would leave their folder;
/// 3. fingerprint every path now, find the stores among them (they must not be open);
/// 4. plan: snapshot, extract, retire (what is there now), install (the snapshot's items),
///    commit, purge.
public enum SnapshotUndo {
    /// What an undo puts back and removes, for reports.
    public struct Paths: Sendable, Encodable, Equatable {
        /// The operation whose snapshot it is.
        public let undoes: String
        /// Items put back from the snapshot (files, links, whole folders).
        public let restored: [String]
        /// Paths that did not exist when the snapshot was taken and are removed now.
        public let removed: [String]
    }

    /// The plan of putting `snapshot` back in place, with the paths it restores and removes.
    /// - Throws: `notABundle` / `brokenArchive` / `manifestMismatch` for a damaged snapshot,
    ///   `usage` for a bundle that is not a snapshot (it has no places to go back to),
    ///   `hostileArchive` for items naming paths outside their folders, `preconditionFailed`
    ///   when a folder the snapshot was taken from (or an item's parent) no longer exists.
    public static func plan(snapshot archive: URL) throws -> (plan: Plan, paths: Paths) {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-undo")
        defer { scratch.remove() }
        let (first, _) = try BundleRestorer.verified(archive, scratch: scratch.url)
        guard let record = first.manifest.snapshot else {
            throw USMError.usage(
                "\(archive.path) is a bundle, not a snapshot: it records no places to go back to; give the folder to restore into with --to"
            )
        }
        let roots = first.manifest.roots

        // 2. Archive paths to absolute paths; the outermost of nested items only.
        func absolute(_ archivePath: String) throws -> (root: BundleRoot, path: String) {
            let parts = FileSystemPath.components(archivePath)
            guard let name = parts.first, let root = roots.first(where: { $0.name.pathKey == name.pathKey }),
                FileSystemPath.isAbsolute(root.source), !parts.contains(where: { $0 == "." || $0 == ".." })
            else {
                throw USMError.hostileArchive(
                    path: archive.path, reason: "the snapshot names '\(archivePath)', which lies in none of its folders"
                )
            }
            return (root, ([root.source] + parts.dropFirst()).joined(separator: "/"))
        }
        let items = outermost(record.items)
        let absent = outermost(record.absent).filter { path in !items.contains { FileSystemPath.isInside(path, $0) } }
        let itemPaths = try items.map { try absolute($0) }
        let absentPaths = try absent.map { try absolute($0) }

        // The folders the plan works in: each snapshot root, or its parent when the root itself
        // is an item (a folder replaced whole by `restore --to`).
        var planRoots: [Plan.Root] = []
        var stagingFolders: [String: String] = [:]
        let id = UUID().uuidString.lowercased()
        for root in roots {
            let mapped =
                itemPaths.filter { $0.root == root }.map(\.path) + absentPaths.filter { $0.root == root }.map(\.path)
            guard !mapped.isEmpty else { continue }
            // A folder of `/` would let a snapshot name any path on the machine.
            guard FileSystemPath.components(root.source).count >= 1 else {
                throw USMError.hostileArchive(
                    path: archive.path,
                    reason: "the snapshot's folder '\(root.name)' is /, which usm-repair never snapshots")
            }
            let whole = mapped.contains { $0.pathKey == root.source.pathKey }
            let folder = whole ? FileSystemPath.parent(root.source) : root.source
            guard FileStatus.resolve(folder)?.kind == .directory else {
                throw USMError.preconditionFailed(
                    "the folder the snapshot was taken from, \(folder), is not there any more; put the snapshot somewhere else with --to"
                )
            }
            let planRoot = Plan.Root(
                name: root.name, path: folder,
                privateFolder: root.name == "cloud" ? ".usm-repair.nosync" : ".usm-repair")
            if !planRoots.contains(where: { $0.path.pathKey == planRoot.path.pathKey }) { planRoots.append(planRoot) }
        }

        // 3. What is there now.
        var expected: [String: Plan.Fingerprint] = [archive.path: .of(archive.path)]
        var stores: [String] = []
        var retires: [Plan.Step] = []
        var installs: [Plan.Step] = []
        var counter = 0
        func planRoot(of path: String) throws -> Plan.Root {
            guard let root = Plan.Root.deepest(holding: path, in: planRoots) else {
                throw USMError.unexpected("\(path) lies in none of the undo's folders")
            }
            return root
        }
        func retire(_ path: String, _ reason: String) throws {
            // A link on the way (planted after the snapshot was taken) would lead the removal out
            // of the folder: refused, as for every plan.
            try PlanCheck.linkFree(path, under: try planRoot(of: path).path)
            expected[path] = .of(path)
            guard FileStatus.lookup(path) != nil else { return }
            stores += storeFiles(at: path)
            counter += 1
            let trash = try planRoot(of: path).privatePath(id, "trash", counter, FileSystemPath.lastComponent(path))
            retires.append(.init(.retire(path: path, trash: trash), reason))
        }
        for (index, (root, path)) in itemPaths.enumerated() {
            let parent = FileSystemPath.parent(path)
            guard FileStatus.lookup(parent)?.kind == .directory else {
                throw USMError.preconditionFailed(
                    "\(parent), the folder that held \(path), is not there any more; put the snapshot somewhere else with --to"
                )
            }
            try retire(path, "what is there now makes way for the snapshot's copy (it is in the new snapshot)")
            let holder = try planRoot(of: path)
            let staging = holder.operationURL(id).appendingPathComponent("staging/snapshot", isDirectory: true).path
            stagingFolders[root.name] = staging
            installs.append(
                .init(
                    .install(staged: staging + "/" + items[index], path: path, optional: false),
                    "the snapshot's copy goes back into place"))
        }
        for (_, path) in absentPaths {
            try retire(path, "it did not exist when the snapshot was taken: the operation made it")
        }

        var steps: [Plan.Step] = []
        if !retires.isEmpty || !installs.isEmpty {
            steps.append(
                .init(
                    .snapshot, "what is there now is archived first, outside these folders, so the undo can be undone"))
            if !installs.isEmpty {
                steps.append(
                    .init(
                        .extract(archive: archive.path, items: items, folders: stagingFolders),
                        "the snapshot's items are extracted beside their places and checked against its manifest"))
            }
            steps += retires + installs
            steps += Plan.Step.finish("from here the snapshot is back and is never undone")
        }
        let notes = [
            "puts back what `\(record.operation)` changed, as the snapshot of \(archive.lastPathComponent) recorded it"
        ]
        var plan = Plan(
            id: id, operation: "restore", roots: steps.isEmpty ? [] : planRoots, expected: expected, stores: stores,
            snapshotItems: itemPaths.map(\.path) + absentPaths.map(\.path), steps: steps, notes: notes,
            nextLaunchBefore: nil, nextLaunchAfter: nil)
        plan.label = planRoots.first.flatMap {
            Layout.label(ofFolder: URL(fileURLWithPath: $0.path, isDirectory: true))
        }
        return (
            plan,
            Paths(
                undoes: record.operation, restored: itemPaths.map(\.path),
                removed: absentPaths.map(\.path).filter { FileStatus.lookup($0) != nil })
        )
    }

    /// Runs the `extract` step: the snapshot verified again and its items written into the
    /// operation's staging folders, checked against the manifest, then flushed.
    static func extract(archive: URL, items: [String], folders: [String: String], onEntry: ((String) -> Void)? = nil)
        throws
        -> (entries: Int, bytes: Int64)
    {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-undo")
        defer { scratch.remove() }
        let (first, index) = try BundleRestorer.verified(archive, scratch: scratch.url)
        for folder in Set(folders.values) {
            try PlanExecutor.makeFolder(URL(fileURLWithPath: folder, isDirectory: true))
        }
        let written = try BundleRestorer.extract(
            archive, first: first, index: index, scratch: scratch.url,
            place: { path in
                guard let name = FileSystemPath.components(path).first, let folder = folders[name],
                    items.contains(where: { FileSystemPath.isInside(path, $0) })
                else { return nil }
                return (URL(fileURLWithPath: folder, isDirectory: true), path)
            }, onEntry: onEntry)
        for folder in Set(folders.values) {
            try FileSync.fileSystem(of: URL(fileURLWithPath: folder, isDirectory: true))
        }
        return written
    }

    /// The paths of `paths` that lie inside no other one of them.
    static func outermost(_ paths: [String]) -> [String] {
        paths.filter { path in !paths.contains { $0.pathKey != path.pathKey && FileSystemPath.isInside(path, $0) } }
    }

    /// The SQLite files at `path` (a file, or every file below a folder): stores that must not be
    /// open in another process while they are moved.
    static func storeFiles(at path: String) -> [String] {
        guard let status = FileStatus.lookup(path) else { return [] }
        switch status.kind {
        case .file:
            let name = FileSystemPath.lastComponent(path)
            guard !["-wal", "-shm", "-journal"].contains(where: { name.hasSuffix($0) }), status.size >= 100 else {
                return []
            }
            return (try? SQLiteHeader.read(path: path)) != nil ? [path] : []
        case .directory:
            var found: [String] = []
            try? DirectoryListing.forEach(path) { name in found += storeFiles(at: path + "/" + name) }
            return found
        default:
            return []
        }
    }
}

/// `restore SNAPSHOT` (in place) as a `Change`: the undo of an operation (see `SnapshotUndo`).
public struct SnapshotRestoreChange: Change {
    /// The snapshot put back.
    public let archive: URL
    /// Runs the plan (and recovers what a kill left pending): snapshot folder, record of operations, hooks.
    public let executor: PlanExecutor

    public init(archive: URL, executor: PlanExecutor) {
        self.archive = archive
        self.executor = executor
    }

    public var command: String { "restore" }

    /// What `restore SNAPSHOT` puts back and removes: the `details` of its envelope.
    public struct Details: Sendable, Encodable {
        /// The snapshot put back.
        public let archive: String
        /// Always true here: the snapshot goes back where it was taken (`restore --to` reports `inPlace: false`).
        public let inPlace = true
        /// The operation whose snapshot this is (`delete container`, `restore`...).
        public let undoes: String
        public let planID: String
        public let roots: [Plan.Root]
        /// Items put back (files, links, whole folders) and paths removed because the operation made them.
        public let restored: [String]
        public let removed: [String]
    }

    public struct Prepared {
        public let plan: Plan
        public let paths: SnapshotUndo.Paths
        public let recovered: [PlanExecutor.Recovery]
        public let dryRun: Bool
    }

    /// Plans the undo, recovering first what a kill left pending in its folders (a dry run
    /// refuses then, with `interruptedOperation`).
    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        var (plan, paths) = try SnapshotUndo.plan(snapshot: archive)
        let recovered = try executor.recoverBeforePlanning(in: plan.roots, dryRun: dryRun)
        // What recovery put back changes what is there now: plan again on it.
        if !recovered.isEmpty { (plan, paths) = try SnapshotUndo.plan(snapshot: archive) }
        return Prepared(plan: plan, paths: paths, recovered: recovered, dryRun: dryRun)
    }

    public func consent(_ prepared: Prepared) -> ChangeConsent? {
        guard !prepared.plan.isNoOp else { return nil }
        return ChangeConsent(
            unattended: "restore puts the snapshot back in place: run it with --yes (see the plan with --dry-run)",
            question: "Put the snapshot back? What is there now is snapshotted first.")
    }

    /// The report of a plan, run (`result`) or not.
    func report(_ prepared: Prepared, result: PlanExecutor.Result?) -> ChangeReport<Details> {
        let plan = prepared.plan
        let paths = prepared.paths
        return ChangeReport(
            command: command, operation: "restore", dryRun: prepared.dryRun, noOp: plan.isNoOp,
            changed: result != nil && !plan.isNoOp,
            steps: ChangeStep.list(plan, result: result), snapshot: result?.snapshot,
            notes: plan.notes + (result?.leftovers ?? []).map(ChangeNotes.leftover) + (result?.notes ?? []),
            recovered: prepared.recovered + (result?.recovered ?? []), seconds: result?.seconds ?? 0,
            nextStep: NextStep.describe(
                plan, options: NextStep.options(of: plan), preferencesPath: nil, dryRun: prepared.dryRun),
            details: Details(
                archive: archive.path, undoes: paths.undoes, planID: plan.id, roots: plan.roots,
                restored: paths.restored, removed: paths.removed))
    }

    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) -> ChangeReport<Details> {
        report(prepared, result: nil)
    }

    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<Details> {
        guard !prepared.plan.isNoOp else { return report(prepared, result: nil) }
        return report(prepared, result: try executor.run(prepared.plan, progress: progress))
    }
}
