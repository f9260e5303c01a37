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
    /// Replace roots that already exist (after snapshotting them).
    public var yes: Bool
    /// Where the snapshot of replaced roots goes; default `Snapshot.defaultDirectory()`.
    public var snapshotDirectory: URL?
    /// Verify and say what would be restored and replaced; write nothing.
    public var dryRun: Bool

    public init(archive: URL, target: URL, yes: Bool = false, snapshotDirectory: URL? = nil, dryRun: Bool = false) {
        self.archive = archive
        self.target = target
        self.yes = yes
        self.snapshotDirectory = snapshotDirectory
        self.dryRun = dryRun
    }
}

/// What `restore` did; its JSON is the `restore --json` report.
public struct RestoreResult: Sendable, Encodable {
    /// One root put in place.
    public struct Root: Sendable, Encodable {
        public let name: String
        public let path: String
        /// True when an existing folder was replaced (it is in the snapshot).
        public let replaced: Bool
    }

    public let schemaVersion = 1
    public let command = "restore"
    public let archive: String
    /// False: the bundle went into `to` (`restore SNAPSHOT` without `--to` puts a snapshot back in place).
    public let inPlace = false
    public let dryRun: Bool
    public let to: String
    /// The roots restored (in a dry run: that would be, `replaced` telling which exist now).
    public let roots: [Root]
    /// The snapshot of what was replaced, null when nothing was.
    @NullEncoded public var snapshot: String?
    /// Entries in the bundle after its manifest.
    public let entries: Int
    /// The `status` command, as an argument list, for what was restored (`usm-repair status
    /// --container DIR/container --cloud-dir DIR/cloud`...); empty when the roots name nothing it reads.
    public var status: [String] = []
    /// Bytes of file content written (0 in a dry run).
    public let bytes: Int64
    /// What is worth knowing (usm-repair's own folders it could not remove).
    public var notes: [String] = []
    /// The code the process exits with (20 with `--detailed-exitcode`: a restore writes).
    public private(set) var exitCode: Int32 = 0
    public private(set) var exitStatus = "ok"

    /// Records the code the process exits with.
    public mutating func exit(_ status: ExitStatus) {
        exitCode = status.rawValue
        exitStatus = status.name
    }
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
public struct BundleRestorer {
    public let options: RestoreOptions

    public init(options: RestoreOptions) { self.options = options }

    /// Restores with `executor`. `confirm` is asked before replacing existing folders when `yes`
    /// is not set; `onEntry` is called with each entry's path as it is written.
    public func run(
        executor: PlanExecutor, confirm: (String) -> Bool = { _ in false }, onEntry: ((String) -> Void)? = nil,
        progress: (String) -> Void = { _ in }
    ) throws -> RestoreResult {
        // 1. Verify: a bundle that does not match its manifest is not restored at all.
        let scratch = try TemporaryDirectory(prefix: "usm-repair-restore")
        defer { scratch.remove() }
        let (first, _) = try Self.verified(options.archive, scratch: scratch.url)

        // 2. The target, and what would be replaced.
        let target = options.target.standardizedFileURL
        if let status = FileStatus.resolve(target.path), status.kind != .directory {
            throw USMError.wrongKind(path: target.path, expected: "a folder (--to)")
        }
        let roots = first.manifest.roots
        if options.dryRun {
            let planned = roots.map { root in
                let path = target.appendingPathComponent(root.name).path
                return RestoreResult.Root(name: root.name, path: path, replaced: FileStatus.lookup(path) != nil)
            }
            var result = RestoreResult(
                archive: options.archive.path, dryRun: true, to: target.path, roots: planned, snapshot: nil,
                entries: first.entries, bytes: 0)
            result.status = Self.statusCommand(planned, stores: first.manifest.stores)
            return result
        }
        if FileStatus.resolve(target.path) == nil {
            try Folders.create(target.path, mode: 0o755, purpose: "cannot create the folder to restore into")
        }
        let existing = roots.filter { FileStatus.lookup(target.appendingPathComponent($0.name).path) != nil }
        if !existing.isEmpty, !options.yes {
            let names = existing.map { target.appendingPathComponent($0.name).path }.joined(separator: ", ")
            guard confirm("Replace \(names)? A snapshot of it is taken first.") else {
                throw USMError.confirmationRequired(
                    "\(names) exists; restoring over it needs --yes (a snapshot of it is taken first)")
            }
        }
        let replaced = existing.map { target.appendingPathComponent($0.name, isDirectory: true) }
        if !replaced.isEmpty {
            try Snapshot.refuseInside(
                executor.snapshotDirectory, protected: replaced, why: "which this command changes")
        }
        let root = Plan.Root.folder(target)
        _ = try executor.recoverBeforePlanning(in: [root], dryRun: false)
        let plan = try Self.plan(archive: options.archive, roots: roots.map(\.name), target: target, root: root)
        let result = try executor.run(plan, progress: progress, entries: onEntry)
        var restored = RestoreResult(
            archive: options.archive.path, dryRun: false, to: target.path,
            roots: roots.map {
                .init(name: $0.name, path: target.appendingPathComponent($0.name).path, replaced: existing.contains($0))
            },
            snapshot: result.snapshot, entries: result.extracted.entries, bytes: result.extracted.bytes)
        restored.notes = result.leftovers.map(MaintenanceRun.leftoverNote)
        restored.status = Self.statusCommand(restored.roots, stores: first.manifest.stores)
        return restored
    }

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
                            trash: root.operationURL(id).appendingPathComponent("trash/\(n + 1)/\(name)").path),
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
        steps.append(.init(.commit, "from here the bundle is in place and is never undone"))
        steps.append(.init(.purge, "the trash, staging and journal are removed"))
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
