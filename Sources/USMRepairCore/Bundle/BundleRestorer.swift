import CSupport
import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `restore` is asked to do.
public struct RestoreOptions: Sendable {
    public var archive: URL
    /// The folder the bundle's roots are restored into (`<to>/<root>/...`).
    public var target: URL

    public init(archive: URL, target: URL) {
        self.archive = archive
        self.target = target
    }
}

/// What `restore --to` did or would do: the `details` of its envelope (`ChangeReport`).
public struct RestoreResult: Sendable, Encodable {
    /// One root put in place.
    public struct Root: Sendable, Encodable {
        public let name: String
        public let path: String
        /// True when an existing folder was replaced (it is in the snapshot).
        public let replaced: Bool
    }

    public let archive: String
    /// False: the bundle went into `to` (`restore SNAPSHOT` without `--to` puts a snapshot back in place).
    public let inPlace = false
    public let to: String
    /// The roots restored (in a dry run: that would be, `replaced` telling which exist now).
    public let roots: [Root]
    /// Entries in the bundle after its manifest.
    public let entries: Int
    /// The `status` command, as an argument list, for what was restored (`usm-repair status
    /// --container DIR/container --cloud-dir DIR/cloud`...); empty when the roots name nothing it reads.
    public var status: [String] = []
    /// Bytes of file content written (0 in a dry run).
    public let bytes: Int64
}

/// Puts a bundle (or a snapshot) into a folder (`restore --to DIR`), as a plan run by
/// `PlanExecutor` like every change on disk: all roots at once, journaled, so a kill at any
/// moment is finished or undone by `recover` (`--app-dir DIR`, or the next restore into DIR).
///
/// Steps, each needing the one before:
/// 1. verify the whole archive (hostile entries, links resolved through the bundle's own links,
///    every hash, the stores' `Z_UUID` and rows) — nothing is written before this passes;
/// 2. plan in DIR (created when missing): `snapshot` of the roots it replaces (outside DIR),
///    `extract` into the operation's staging folder inside DIR (same file system), each file
///    checked against the manifest as it is written and every byte flushed, `retire` the roots
///    that exist, `install` the extracted ones, `commit`, `purge`.
public struct BundleRestoreChange: Change {
    public let options: RestoreOptions
    /// Runs the plan (and recovers what a kill left pending): snapshot folder, record of operations, hooks.
    public let executor: PlanExecutor
    /// Called with each entry's path as it is written (`--verbose`).
    public var onEntry: ((String) -> Void)?

    public init(options: RestoreOptions, executor: PlanExecutor) {
        self.options = options
        self.executor = executor
    }

    public var command: String { "restore" }

    /// The verified archive, the plan, and what it replaces.
    public struct Prepared {
        public let plan: Plan
        public let roots: [RestoreResult.Root]
        public let entries: Int
        public let status: [String]
        public let recovered: [PlanExecutor.Recovery]
        public let dryRun: Bool
    }

    /// Verifies the whole archive (a bundle that does not match its manifest is not restored at
    /// all), checks the target and the snapshot folder, recovers what a kill left pending in the
    /// target (a dry run refuses then) and plans.
    public func prepare(dryRun: Bool, progress: (String) -> Void = { _ in }) throws -> Prepared {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-restore")
        defer { scratch.remove() }
        let (first, _) = try BundleRestorer.verified(options.archive, scratch: scratch.url)
        let target = options.target.standardizedFileURL
        if let status = FileStatus.resolve(target.path), status.kind != .directory {
            throw USMError.wrongKind(path: target.path, expected: "a folder (--to)")
        }
        let manifestRoots = first.manifest.roots
        let roots = manifestRoots.map { root in
            let path = target.appendingPathComponent(root.name).path
            return RestoreResult.Root(name: root.name, path: path, replaced: FileStatus.lookup(path) != nil)
        }
        let replaced = roots.filter(\.replaced).map { URL(fileURLWithPath: $0.path, isDirectory: true) }
        if !replaced.isEmpty {
            try Snapshot.refuseInside(
                executor.snapshotDirectory, protected: replaced, why: "which this command changes")
        }
        let root = Plan.Root.folder(target)
        var recovered: [PlanExecutor.Recovery] = []
        if FileStatus.resolve(target.path) != nil {
            recovered = try executor.recoverBeforePlanning(in: [root], dryRun: dryRun)
        }
        let plan = try BundleRestorer.plan(
            archive: options.archive, roots: manifestRoots.map(\.name), target: target, root: root)
        return Prepared(
            plan: plan, roots: roots, entries: first.entries,
            status: BundleRestorer.statusCommand(roots, stores: first.manifest.stores), recovered: recovered,
            dryRun: dryRun)
    }

    /// Replacing a folder that exists is asked first; restoring into empty places is not.
    public func consent(_ prepared: Prepared) -> ChangeConsent? {
        let existing = prepared.roots.filter(\.replaced).map(\.path)
        guard !existing.isEmpty else { return nil }
        let names = existing.joined(separator: ", ")
        return ChangeConsent(
            unattended: "\(names) exists; restoring over it needs --yes (a snapshot of it is taken first)",
            question: "Replace \(names)? A snapshot of it is taken first.")
    }

    func report(_ prepared: Prepared, result: PlanExecutor.Result?) -> ChangeReport<RestoreResult> {
        let status = prepared.status.map(ShellWords.quote).joined(separator: " ")
        return ChangeReport(
            command: command, operation: "restore --to", dryRun: prepared.dryRun, noOp: prepared.roots.isEmpty,
            changed: result != nil && !prepared.roots.isEmpty,
            steps: ChangeStep.list(prepared.plan, result: result), snapshot: result?.snapshot,
            notes: (result?.leftovers ?? []).map(ChangeNotes.leftover) + (result?.notes ?? []),
            recovered: prepared.recovered + (result?.recovered ?? []), seconds: result?.seconds ?? 0,
            nextStep: status.isEmpty
                ? "the bundle's folders are under \(options.target.path)"
                : "\(result == nil ? "after it, " : "")see what was restored: \(status)",
            details: RestoreResult(
                archive: options.archive.path, to: options.target.standardizedFileURL.path, roots: prepared.roots,
                entries: result?.extracted.entries ?? prepared.entries, status: prepared.status,
                bytes: result?.extracted.bytes ?? 0))
    }

    public func preview(_ prepared: Prepared, progress: (String) -> Void = { _ in }) -> ChangeReport<RestoreResult> {
        report(prepared, result: nil)
    }

    /// Creates the target when missing and runs the plan.
    public func run(_ prepared: Prepared, progress: (String) -> Void = { _ in }) throws -> ChangeReport<
        RestoreResult
    > {
        let target = options.target.standardizedFileURL
        if FileStatus.resolve(target.path) == nil {
            try Folders.create(target.path, mode: 0o755, purpose: "cannot create the folder to restore into")
        }
        let result = try executor.run(prepared.plan, progress: progress, entries: onEntry)
        return report(prepared, result: result)
    }
}

/// Puts a bundle (or a snapshot) into a folder: the plan, the verification and the extraction
/// that `BundleRestoreChange` and `SnapshotRestoreChange` share.
public enum BundleRestorer {
    /// The plan of putting the roots `names` of `archive` into `target`.
    static func plan(archive: URL, roots names: [String], target: URL, root: Plan.Root) throws -> Plan {
        let id = UUID().uuidString.lowercased()
        let staging = root.operationURL(id).appendingPathComponent("staging/bundle", isDirectory: true).path
        var expected: [String: Plan.Fingerprint] = [archive.path: .of(archive.path)]
        var stores: [String] = []
        var retires: [Plan.Step] = []
        var installs: [Plan.Step] = []
        var items: [String] = []
        for (n, name) in names.enumerated() {
            guard BundleScanner.isPlainName(name) else {
                throw USMError.hostileArchive(
                    path: archive.path, reason: "its root '\(name)' is not a plain folder name")
            }
            let final = target.appendingPathComponent(name).path
            try PlanCheck.linkFree(final, under: root.path)
            expected[final] = .of(final)
            if FileStatus.lookup(final) != nil {
                items.append(final)
                stores += SnapshotUndo.storeFiles(at: final)
                retires.append(
                    .init(
                        .retire(
                            path: final,
                            trash: root.privatePath(id, "trash", n + 1, name)),
                        "the folder there now makes way for the bundle's (it is in the snapshot)"))
            }
            installs.append(
                .init(
                    .install(staged: staging + "/" + name, path: final, optional: true),
                    "the bundle's \(name) goes into place"))
        }
        var steps: [Plan.Step] = []
        if !items.isEmpty {
            steps.append(
                .init(.snapshot, "the folders replaced are archived first, outside this folder; restore puts them back")
            )
        }
        steps.append(
            .init(
                .extract(
                    archive: archive.path, items: names,
                    folders: Dictionary(names.map { ($0, staging) }, uniquingKeysWith: { a, _ in a })),
                "the bundle's roots are extracted beside their places, each file checked against the manifest, then flushed"
            ))
        steps += retires + installs
        steps += Plan.Step.finish("from here the bundle is in place and is never undone")
        // The snapshot names each replaced folder as the bundle's root it was (`restore` of it, in
        // place or `--to`, gives that folder back).
        let snapshotRoots = items.map {
            Plan.Root(name: FileSystemPath.lastComponent($0), path: $0, privateFolder: root.privateFolder)
        }
        return Plan(
            id: id, operation: "restore", roots: [root], expected: expected, stores: stores, snapshotItems: items,
            steps: steps,
            notes: [], nextLaunchBefore: nil, nextLaunchAfter: nil, snapshotRoots: snapshotRoots)
    }

    /// Verifies the whole archive against its manifest (hostile entries, links, hashes, stores)
    /// and returns the scan to extract after.
    /// - Throws: `manifestMismatch` when anything differs, and what `BundleVerifier.verify` throws.
    static func verified(_ archive: URL, scratch: URL) throws -> (first: BundleScanner.Outcome, index: ManifestIndex) {
        let (verification, first, index) = try BundleVerifier.verify(archive, scratch: scratch)
        if let mismatch = verification.mismatches.first {
            throw USMError.manifestMismatch(
                path: archive.path, count: verification.mismatchCount, first: "\(mismatch.path): \(mismatch.problem)")
        }
        return (first, index)
    }

    /// Extracts a verified archive: `place` maps each entry's archive path to the private folder
    /// it goes into and its path there (nil leaves the entry out). Files are checked against the
    /// manifest as they are written; folders get their modes and times last, deepest first.
    /// Nothing is flushed here: the caller flushes the file system before moving anything into place.
    static func extract(
        _ archive: URL, first: BundleScanner.Outcome, index: ManifestIndex, scratch: URL,
        place: (String) -> (base: URL, path: String)?, onEntry: ((String) -> Void)? = nil
    ) throws -> (entries: Int, bytes: Int64) {
        var bytes: Int64 = 0
        let outcome = try BundleScanner(archive: archive, index: index, scratch: scratch).scan(after: first) {
            entry, record, reader, _ in
            guard let record, let (base, relative) = place(entry.path) else { return }
            let url = try Self.prepareParents(of: relative, in: base, archive: archive)
            switch entry.kind {
            case .directory:
                if FileStatus.lookup(url.path) == nil, FileSystemPath.withCString(url.path, { mkdir($0, 0o700) }) != 0 {
                    throw USMError.writing(url.path)
                }
            case .symlink:
                let made = FileSystemPath.withCString(record.linkTarget ?? "") { target in
                    FileSystemPath.withCString(url.path) { symlink(target, $0) }
                }
                guard made == 0 else { throw USMError.writing(url.path) }
                _ = FileSystemPath.withCString(url.path) {
                    usm_set_times($0, record.fileTime.seconds, Int(record.fileTime.nanoseconds))
                }
            case .file:
                bytes += try Self.writeFile(url, from: reader, record: record, archive: archive)
            case .hardlink, .other:
                throw USMError.hostileArchive(
                    path: archive.path, reason: "entry '\(entry.path)' is not a file, folder or symlink")
            }
            onEntry?(entry.path)
        }
        if let mismatch = outcome.mismatches.first {
            throw USMError.manifestMismatch(
                path: archive.path, count: outcome.mismatches.count, first: "\(mismatch.path): \(mismatch.problem)")
        }
        // Folders last and deepest first, so setting a read-only mode or a time is not undone by a child.
        try index.forEachDirectoryDeepestFirst { page in
            for record in page {
                guard let (base, relative) = place(record.path) else { continue }
                let path = base.path + "/" + relative
                guard FileStatus.lookup(path)?.kind == .directory else { continue }
                _ = FileSystemPath.withCString(path) { chmod($0, mode_t(record.modeBits & 0o1777)) }
                _ = FileSystemPath.withCString(path) {
                    usm_set_times($0, record.fileTime.seconds, Int(record.fileTime.nanoseconds))
                }
            }
        }
        return (outcome.entries, bytes)
    }

    private static func move(_ from: URL, _ to: URL) -> Int32 {
        FileSystemPath.withCString(from.path) { a in FileSystemPath.withCString(to.path) { rename(a, $0) } }
    }

    /// Makes sure every folder above `path` exists inside `staging` as a real folder (never
    /// through a symlink an earlier entry planted), and returns the entry's location.
    static func prepareParents(of path: String, in staging: URL, archive: URL) throws -> URL {
        var current = staging.path
        let parts = FileSystemPath.components(path)
        for part in parts.dropLast() {
            current += "/" + part
            switch FileStatus.lookup(current)?.kind {
            case nil:
                guard FileSystemPath.withCString(current, { mkdir($0, 0o700) }) == 0 else {
                    throw USMError.writing(current)
                }
            case .directory?:
                continue
            default:
                throw USMError.hostileArchive(
                    path: archive.path, reason: "entry '\(path)' would be written through a symlink or file")
            }
        }
        current += "/" + (parts.last ?? "")
        if let kind = FileStatus.lookup(current)?.kind, kind != .directory {
            throw USMError.hostileArchive(path: archive.path, reason: "entry '\(path)' would overwrite another entry")
        }
        return URL(fileURLWithPath: current)
    }

    /// Writes one file from the archive, checking its bytes against the manifest as they come.
    static func writeFile(_ url: URL, from reader: ArchiveReader, record: BundleFile, archive: URL) throws -> Int64 {
        let fd = FileSystemPath.withCString(url.path) {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { throw USMError.writing(url.path) }
        var closed = false
        defer { if !closed { close(fd) } }
        var hasher = SHA256()
        let size = try reader.readData(limit: record.size) { chunk in
            hasher.update(bufferPointer: chunk)
            try FileSync.writeAll(fd, chunk, path: url.path)
        }
        guard size == record.size, hasher.finalize().hex == record.sha256 else {
            throw USMError.manifestMismatch(
                path: archive.path, count: 1, first: "\(record.path): content changed since verification")
        }
        // Each file is flushed here only where the whole extraction cannot be flushed at once.
        if !FileSync.flushesWholeFileSystem { guard fsync(fd) == 0 else { throw USMError.writing(url.path) } }
        _ = fchmod(fd, mode_t(record.modeBits & 0o1777))
        closed = true
        close(fd)
        guard
            FileSystemPath.withCString(
                url.path, { usm_set_times($0, record.fileTime.seconds, Int(record.fileTime.nanoseconds)) }) == 0
        else {
            throw USMError.writing(url.path)
        }
        return size
    }

    /// `usm-repair status` for the roots put in place: the container (or app folder, document,
    /// store) with the ubiquity container and preferences beside it as flags, since they no longer
    /// lie where discovery looks.
    static func statusCommand(_ roots: [RestoreResult.Root], stores: [BundleStore]) -> [String] {
        func path(_ name: String) -> String? { roots.first { $0.name == name }?.path }
        var arguments = ["usm-repair", "status"]
        if let container = path("container") {
            arguments += ["--container", container]
        } else if let document = path("document") {
            arguments += ["--document", document]
        } else if let store = path("store") {
            // The store root is the store's folder; the manifest names the main file under it.
            guard let main = stores.first(where: { $0.path.hasPrefix("store/") }) else { return [] }
            return arguments + ["--store", (store as NSString).appendingPathComponent(String(main.path.dropFirst(6)))]
        } else if let app = path("app") {
            arguments += ["--app-dir", app]
        } else {
            return []
        }
        if let cloud = path("cloud") { arguments += ["--cloud-dir", cloud] }
        if path("container") == nil, let folder = path("preferences"),
            let plist = (try? FileManager.default.contentsOfDirectory(atPath: folder))?.filter({
                $0.hasSuffix(".plist")
            })
            .sorted().first
        {
            arguments += ["--prefs", (folder as NSString).appendingPathComponent(plist)]
        }
        return arguments
    }

}
