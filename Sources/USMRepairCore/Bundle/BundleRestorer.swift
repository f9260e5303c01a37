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

    public init(archive: URL, target: URL, yes: Bool = false, snapshotDirectory: URL? = nil) {
        self.archive = archive
        self.target = target
        self.yes = yes
        self.snapshotDirectory = snapshotDirectory
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
    public let to: String
    public let roots: [Root]
    /// The snapshot of what was replaced, null when nothing was.
    @NullEncoded public var snapshot: String?
    public let entries: Int
    public let bytes: Int64
    public let exitCode = 0
    public let exitStatus = "ok"
}

/// Puts a bundle back: verify everything first, extract into a private folder beside the target,
/// then move each root into place with one rename (an atomic exchange when replacing), so a kill
/// at any moment leaves the old or the new folder, never a mix. Modes and times come from the manifest.
public struct BundleRestorer {
    public let options: RestoreOptions

    public init(options: RestoreOptions) { self.options = options }

    /// Restores. `confirm` is asked before replacing existing folders when `yes` is not set.
    public func run(confirm: (String) -> Bool = { _ in false }) throws -> RestoreResult {
        // 1. Verify: a bundle that does not match its manifest is not restored at all.
        let verification = try BundleVerifier.verify(options.archive)
        if let first = verification.mismatches.first {
            throw USMError.manifestMismatch(path: options.archive.path, count: verification.mismatches.count, first: "\(first.path): \(first.problem)")
        }

        // 2. The target, and what would be replaced.
        let target = options.target.standardizedFileURL
        if let status = FileStatus.resolve(target.path) {
            guard status.kind == .directory else { throw USMError.wrongKind(path: target.path, expected: "a folder (--to)") }
        } else {
            do { try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true) } catch {
                throw USMError.writeFailed(path: target.path, reason: error.localizedDescription)
            }
        }
        // A restore killed mid-way leaves its private folder behind; it never holds the only copy
        // of anything (what it replaced was snapshotted first), so it goes.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: target.path)) ?? [] where name.hasPrefix(".usm-restore-") {
            Self.removeTree(target.appendingPathComponent(name))
        }
        let manifest = try BundleScanner(archive: options.archive).scan { _, _, _, _ in }.manifest
        let existing = manifest.roots.filter { FileStatus.lookup(target.appendingPathComponent($0.name).path) != nil }
        if !existing.isEmpty, !options.yes {
            let names = existing.map { target.appendingPathComponent($0.name).path }.joined(separator: ", ")
            guard confirm("Replace \(names)? A snapshot of it is taken first.") else {
                throw USMError.confirmationRequired("\(names) exists; restoring over it needs --yes (a snapshot of it is taken first)")
            }
        }

        // 3. Extract into a private folder beside the target (same file system, so renames are atomic).
        let staging = target.appendingPathComponent(".usm-restore-\(UUID().uuidString)", isDirectory: true)
        guard mkdir(staging.path, 0o700) == 0 else { throw USMError.writeFailed(path: staging.path, reason: errnoDescription()) }
        defer { Self.removeTree(staging) }
        var bytes: Int64 = 0
        var directories: [(URL, BundleFile)] = []
        let outcome = try BundleScanner(archive: options.archive).scan { entry, record, reader, _ in
            guard let record else { return }
            let url = try Self.prepareParents(of: entry.path, in: staging, archive: options.archive)
            switch entry.kind {
            case .directory:
                if FileStatus.lookup(url.path) == nil, mkdir(url.path, 0o700) != 0 {
                    throw USMError.writeFailed(path: url.path, reason: errnoDescription())
                }
                directories.append((url, record))
            case .symlink:
                guard symlink(record.linkTarget ?? "", url.path) == 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
                _ = usm_set_times(url.path, record.fileTime.seconds, Int(record.fileTime.nanoseconds))
            case .file:
                bytes += try Self.writeFile(url, from: reader, record: record, archive: options.archive)
            case .hardlink, .other:
                throw USMError.hostileArchive(path: options.archive.path, reason: "entry '\(entry.path)' is not a file, folder or symlink")
            }
        }
        if let first = outcome.mismatches.first {
            throw USMError.manifestMismatch(path: options.archive.path, count: outcome.mismatches.count, first: "\(first.path): \(first.problem)")
        }
        // Folders last and deepest first, so setting a read-only mode or a time is not undone by a child.
        for (url, record) in directories.sorted(by: { $0.0.path.count > $1.0.path.count }) {
            _ = chmod(url.path, mode_t(record.modeBits & 0o1777))
            _ = usm_set_times(url.path, record.fileTime.seconds, Int(record.fileTime.nanoseconds))
        }

        // 4. Snapshot what will be replaced.
        var snapshot: URL?
        if !existing.isEmpty {
            let replaced = existing.map { target.appendingPathComponent($0.name, isDirectory: true) }
            snapshot = try Snapshot.take(
                .init(roots: existing.map { ($0.name, target.appendingPathComponent($0.name, isDirectory: true)) }, items: replaced,
                      operation: "restore"),
                into: options.snapshotDirectory ?? Snapshot.defaultDirectory(), protected: replaced + [staging])
        }

        // 5. Into place, one rename per root.
        var roots: [RestoreResult.Root] = []
        for root in manifest.roots {
            let staged = staging.appendingPathComponent(root.name)
            let final = target.appendingPathComponent(root.name)
            guard FileStatus.lookup(staged.path) != nil else { continue }
            let replaced = FileStatus.lookup(final.path) != nil
            if replaced {
                if !AtomicRename.exchange(staged, final) {
                    // No atomic exchange on this file system: move the old one aside, then the new in.
                    let aside = staging.appendingPathComponent(".old-\(root.name)")
                    guard rename(final.path, aside.path) == 0 else { throw USMError.writeFailed(path: final.path, reason: errnoDescription()) }
                    guard rename(staged.path, final.path) == 0 else {
                        let reason = errnoDescription()
                        _ = rename(aside.path, final.path)
                        throw USMError.writeFailed(path: final.path, reason: reason)
                    }
                }
            } else if rename(staged.path, final.path) != 0 {
                throw USMError.writeFailed(path: final.path, reason: errnoDescription())
            }
            roots.append(.init(name: root.name, path: final.path, replaced: replaced))
        }
        FileSync.directory(target)
        return RestoreResult(
            archive: options.archive.path, to: target.path, roots: roots, snapshot: snapshot?.path, entries: outcome.entries, bytes: bytes)
    }

    /// Makes sure every folder above `path` exists inside `staging` as a real folder (never
    /// through a symlink an earlier entry planted), and returns the entry's location.
    static func prepareParents(of path: String, in staging: URL, archive: URL) throws -> URL {
        var url = staging
        let parts = path.split(separator: "/").map(String.init)
        for part in parts.dropLast() {
            url.appendPathComponent(part)
            switch FileStatus.lookup(url.path)?.kind {
            case nil:
                guard mkdir(url.path, 0o700) == 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
            case .directory?:
                continue
            default:
                throw USMError.hostileArchive(path: archive.path, reason: "entry '\(path)' would be written through a symlink or file")
            }
        }
        url.appendPathComponent(parts.last ?? "")
        if FileStatus.lookup(url.path) != nil, FileStatus.lookup(url.path)?.kind != .directory {
            throw USMError.hostileArchive(path: archive.path, reason: "entry '\(path)' would overwrite another entry")
        }
        return url
    }

    /// Writes one file from the archive, checking its bytes against the manifest as they come.
    static func writeFile(_ url: URL, from reader: ArchiveReader, record: BundleFile, archive: URL) throws -> Int64 {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
        var closed = false
        defer { if !closed { close(fd) } }
        var hasher = SHA256()
        let size = try reader.readData(limit: record.size) { chunk in
            hasher.update(bufferPointer: chunk)
            try FileSync.writeAll(fd, chunk, path: url.path)
        }
        guard size == record.size, hasher.finalize().hex == record.sha256 else {
            throw USMError.manifestMismatch(path: archive.path, count: 1, first: "\(record.path): content changed since verification")
        }
        guard fsync(fd) == 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
        _ = fchmod(fd, mode_t(record.modeBits & 0o1777))
        closed = true
        close(fd)
        guard usm_set_times(url.path, record.fileTime.seconds, Int(record.fileTime.nanoseconds)) == 0 else {
            throw USMError.writeFailed(path: url.path, reason: errnoDescription())
        }
        return size
    }

    /// Removes a tree we made, making read-only folders writable first.
    static func removeTree(_ url: URL) {
        guard FileStatus.lookup(url.path) != nil else { return }
        if let enumerator = FileManager.default.enumerator(atPath: url.path) {
            _ = chmod(url.path, 0o700)
            while let rel = enumerator.nextObject() as? String {
                let path = url.appendingPathComponent(rel).path
                if FileStatus.lookup(path)?.kind == .directory { _ = chmod(path, 0o700) }
            }
        }
        try? FileManager.default.removeItem(at: url)
    }
}
