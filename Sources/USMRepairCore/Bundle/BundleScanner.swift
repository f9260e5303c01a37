import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A difference between a bundle and its manifest.
public struct BundleMismatch: Sendable, Encodable, Equatable {
    public let path: String
    public let problem: String
}

/// Differences found, the first `limit` kept: a bundle that differs everywhere is described by
/// its count and a sample, not by a list as long as the bundle.
struct MismatchList {
    static let limit = 1000
    private(set) var items: [BundleMismatch] = []
    private(set) var count = 0

    mutating func append(_ mismatch: BundleMismatch) {
        count += 1
        if items.count < Self.limit { items.append(mismatch) }
    }

    /// Counts differences beyond those listed.
    mutating func countMore(_ n: Int) { count += n }

    var first: BundleMismatch? { items.first }
    var isEmpty: Bool { count == 0 }
}

/// Reads a bundle entry by entry and refuses anything that could write outside the target:
/// the manifest must come first; every path must be relative, without `.` or `..` components,
/// under one of the manifest's roots, and appear once; only files, folders and symlinks are
/// allowed, and every symlink must resolve inside its root through the bundle's own links (checked
/// once all are known, before anything is extracted); no entry may lie below a symlink or hold
/// more bytes than the manifest declares. Content checks (hashes, modes, times) are left to the
/// caller's handler. Paths are split and compared as bytes, as the kernel sees them.
struct BundleScanner {
    /// The archive.
    let archive: URL
    /// Where the manifest's records and what the scan saw are kept.
    let index: ManifestIndex
    /// The private folder the manifest is copied into.
    let scratch: URL
    /// A manifest larger than this is not ours.
    static let maxManifestSize: Int64 = 1 << 30

    /// What one scan saw.
    struct Outcome {
        let manifest: ManifestHeader
        var mismatches: MismatchList
        var entries: Int
        /// SHA-256 of the manifest's bytes: a second pass must see the same manifest.
        let manifestSHA256: String
    }

    /// Scans the archive; `handle` gets each validated entry (after the manifest) with its
    /// manifest record, and may read the entry's data from the reader. With `previous` (a second
    /// pass over the same archive) the manifest must be the one the first pass read.
    func scan(
        after previous: Outcome? = nil,
        _ handle: (ArchiveReader.Entry, BundleFile?, ArchiveReader, ManifestHeader) throws -> Void
    ) throws -> Outcome {
        let reader = try ArchiveReader(path: archive.path)
        guard let first = try reader.next() else {
            throw USMError.notABundle(path: archive.path, reason: "the archive is empty")
        }
        guard first.path == BundleManifest.entryName, first.kind == .file else {
            throw USMError.notABundle(
                path: archive.path, reason: "its first entry is \(first.path), not \(BundleManifest.entryName)")
        }
        let (manifest, digest) = try readManifest(reader, previous: previous)
        guard manifest.format == BundleManifest.formatName else {
            throw USMError.notABundle(path: archive.path, reason: "its manifest says format '\(manifest.format)'")
        }
        guard manifest.formatVersion <= BundleManifest.currentVersion else {
            throw USMError.notABundle(
                path: archive.path,
                reason:
                    "manifest format version \(manifest.formatVersion) is newer than this usm-repair reads (\(BundleManifest.currentVersion))"
            )
        }
        let roots = Set(manifest.roots.map(\.name.pathKey))
        for root in manifest.roots.map(\.name) where !Self.isPlainName(root) {
            throw USMError.hostileArchive(
                path: archive.path, reason: "the manifest names a root '\(root)' that is not a plain folder name")
        }

        var outcome = Outcome(manifest: manifest, mismatches: MismatchList(), entries: 0, manifestSHA256: digest)
        var haveLinks = false
        while let entry = try reader.next() {
            let path = try validate(entry, roots: roots)
            let (record, repeated) = try index.see(path)
            guard !repeated else { throw USMError.hostileArchive(path: archive.path, reason: "\(path) appears twice") }
            // An entry below a symlink entry would be written wherever the link points.
            if haveLinks {
                var prefix = path
                while true {
                    let parent = FileSystemPath.parent(prefix)
                    guard parent != ".", parent != "/" else { break }
                    if try index.linkTarget(parent) != nil {
                        throw USMError.hostileArchive(
                            path: archive.path,
                            reason: "entry '\(path)' lies below the symlink '\(parent)' (written through the symlink)")
                    }
                    prefix = parent
                }
            }
            if entry.kind == .symlink {
                if try index.seenBelow(path) {
                    throw USMError.hostileArchive(
                        path: archive.path,
                        reason: "the symlink '\(path)' comes after entries below it (they would be written through it)")
                }
                try index.addLink(path, target: entry.linkTarget ?? "")
                haveLinks = true
            }
            outcome.entries += 1
            if record == nil {
                outcome.mismatches.append(BundleMismatch(path: path, problem: "not in the manifest"))
            }
            if entry.kind == .file, let declared = entry.size, let record, declared > record.size {
                throw USMError.hostileArchive(
                    path: archive.path,
                    reason: "\(path) declares \(declared) bytes, more than the manifest's \(record.size)")
            }
            try handle(
                ArchiveReader.Entry(
                    path: path, kind: entry.kind, size: entry.size, mode: entry.mode, mtime: entry.mtime,
                    linkTarget: entry.linkTarget),
                record, reader, manifest)
        }
        if haveLinks { try checkLinks() }
        if reader.isZip { try checkCentralDirectory(entries: outcome.entries, roots: roots) }
        let missing = try index.missing(limit: MismatchList.limit)
        for path in missing.paths {
            outcome.mismatches.append(
                BundleMismatch(path: path, problem: "listed in the manifest but missing from the archive"))
        }
        outcome.mismatches.countMore(missing.count - missing.paths.count)
        return outcome
    }

    /// Copies the manifest entry into the private folder (bounded), hashes it, and reads it into
    /// the index; on a second pass only checks that it is the same manifest.
    private func readManifest(_ reader: ArchiveReader, previous: Outcome?) throws -> (ManifestHeader, String) {
        let file = scratch.appendingPathComponent("manifest-\(UUID().uuidString).json")
        let fd = FileSystemPath.withCString(file.path) { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw USMError.writing(file.path) }
        defer { _ = FileSystemPath.withCString(file.path) { unlink($0) } }
        var hasher = SHA256()
        do {
            defer { close(fd) }
            try reader.readData(limit: Self.maxManifestSize) { chunk in
                hasher.update(bufferPointer: chunk)
                if previous == nil { try FileSync.writeAll(fd, chunk, path: file.path) }
            }
        } catch let error as USMError {
            if case .hostileArchive = error {
                throw USMError.notABundle(
                    path: archive.path, reason: "its manifest.json is larger than \(Self.maxManifestSize) bytes")
            }
            throw error
        }
        let digest = hasher.finalize().hex
        if let previous {
            guard digest == previous.manifestSHA256 else {
                throw USMError.manifestMismatch(
                    path: archive.path, count: 1,
                    first: "\(BundleManifest.entryName): the archive changed since it was verified")
            }
            try index.resetSeen()
            return (previous.manifest, digest)
        }
        return (try ManifestReader.read(file, into: index, archive: archive), digest)
    }

    /// Every symlink must resolve inside its root, following the bundle's own links.
    private func checkLinks() throws {
        try index.forEachLink { path, target in
            let parts = FileSystemPath.components(path)
            guard let root = parts.first else { return }
            var failure: (any Error)?
            let outcome = LinkResolution.resolve(link: Array(parts.dropFirst()), target: target) { components in
                do { return try index.linkTarget(([root] + components).joined(separator: "/")) } catch {
                    failure = error
                    return nil
                }
            }
            if let failure { throw failure }
            switch outcome {
            case .inside: return
            case .outside:
                throw USMError.hostileArchive(
                    path: archive.path, reason: "entry '\(path)' is a symlink pointing outside its root (\(target))")
            case .tooManyLinks:
                throw USMError.hostileArchive(
                    path: archive.path,
                    reason:
                        "entry '\(path)' is a symlink that does not resolve within \(LinkResolution.maxHops) links (\(target))"
                )
            }
        }
    }

    /// A zip names its entries twice: in each local header (read above, as a stream) and in the
    /// central directory at its end, which `unzip` and most extractors read instead. A name there
    /// that no local header has (`../../x` written over a harmless one) would pass here and be
    /// written out of the folder by them: every central name is validated as an entry's and must
    /// be one the local headers named, as many as they are.
    private func checkCentralDirectory(entries: Int, roots: Set<[UInt8]>) throws {
        var count = 0
        try ZipCentralDirectory.forEachName(archive.path) { bytes in
            count += 1
            let name = bytes.withUnsafeBufferPointer { FileSystemPath.string(fromBytes: $0) }
            if count == 1, name == BundleManifest.entryName { return }
            let entry = ArchiveReader.Entry(
                path: name, kind: name.hasSuffix("/") ? .directory : .file, size: nil, mode: 0,
                mtime: FileTime(seconds: 0, nanoseconds: 0), linkTarget: nil)
            let path = try validate(entry, roots: roots)
            guard try index.wasSeen(path) else {
                throw USMError.hostileArchive(
                    path: archive.path,
                    reason: "the zip's central directory names '\(name)', which no local header names")
            }
        }
        guard count == entries + 1 else {
            throw USMError.hostileArchive(
                path: archive.path,
                reason: "the zip's central directory lists \(count) entries, its local headers \(entries + 1)")
        }
    }

    /// The entry's normalised path, or a refusal.
    private func validate(_ entry: ArchiveReader.Entry, roots: Set<[UInt8]>) throws -> String {
        var path = entry.path
        if entry.kind == .directory, path.utf8.last == UInt8(ascii: "/") {
            path = String(decoding: path.utf8.dropLast(), as: UTF8.self)
        }
        func refuse(_ why: String) -> USMError {
            .hostileArchive(path: archive.path, reason: "entry '\(entry.path)' \(why)")
        }
        guard !path.isEmpty else { throw refuse("has an empty path") }
        guard !FileSystemPath.isAbsolute(path) else { throw refuse("has an absolute path") }
        guard !path.utf8.contains(0), !path.utf8.contains(UInt8(ascii: "\\")) else {
            throw refuse("has a NUL or backslash in its path")
        }
        let parts = FileSystemPath.components(path, omittingEmpty: false)
        guard !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw refuse("has an empty, '.' or '..' component")
        }
        guard roots.contains(parts[0].pathKey) else { throw refuse("lies outside the bundle's roots") }
        switch entry.kind {
        case .file, .directory:
            break
        case .symlink:
            // Resolved against the bundle's other links once all are known; absolute or empty targets go now.
            let target = entry.linkTarget ?? ""
            guard !target.isEmpty, !FileSystemPath.isAbsolute(target) else {
                throw refuse("is a symlink pointing outside its root (\(target))")
            }
        case .hardlink:
            throw refuse("is a hard link; bundles never hold hard links")
        case .other:
            throw refuse("is a device, FIFO or socket")
        }
        return path
    }

    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/"))
            && !name.utf8.contains(UInt8(ascii: "\\"))
            && !name.utf8.contains(0)
    }
}
