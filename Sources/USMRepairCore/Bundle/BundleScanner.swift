import Foundation

/// A difference between a bundle and its manifest.
public struct BundleMismatch: Sendable, Encodable, Equatable {
    public let path: String
    public let problem: String
}

/// Reads a bundle entry by entry and refuses anything that could write outside the target:
/// the manifest must come first; every path must be relative, without `.` or `..` components,
/// under one of the manifest's roots, and appear once; only files, folders and symlinks whose
/// target stays inside their root are allowed; no entry may hold more bytes than the manifest
/// declares. Content checks (hashes, modes, times) are left to the caller's handler.
struct BundleScanner {
    /// The archive.
    let archive: URL
    /// A manifest larger than this is not ours.
    static let maxManifestSize: Int64 = 256 << 20

    /// What one scan saw.
    struct Outcome {
        let manifest: BundleManifestIndex
        var mismatches: [BundleMismatch]
        var entries: Int
    }

    /// Scans the archive; `handle` gets each validated entry (after the manifest) with its
    /// manifest record, and may read the entry's data from the reader.
    func scan(_ handle: (ArchiveReader.Entry, BundleFile?, ArchiveReader, BundleManifestIndex) throws -> Void) throws -> Outcome {
        let reader = try ArchiveReader(path: archive.path)
        guard let first = try reader.next() else { throw USMError.notABundle(path: archive.path, reason: "the archive is empty") }
        guard first.path == BundleManifest.entryName, first.kind == .file else {
            throw USMError.notABundle(path: archive.path, reason: "its first entry is \(first.path), not \(BundleManifest.entryName)")
        }
        var data = Data()
        try reader.readData(limit: Self.maxManifestSize) { data.append(contentsOf: $0) }
        let manifest: BundleManifestIndex
        do {
            manifest = try JSONDecoder().decode(BundleManifestIndex.self, from: data)
        } catch {
            throw USMError.notABundle(path: archive.path, reason: "its manifest.json does not describe a bundle (\(Self.describe(error)))")
        }
        guard manifest.format == BundleManifest.formatName else {
            throw USMError.notABundle(path: archive.path, reason: "its manifest says format '\(manifest.format)'")
        }
        guard manifest.formatVersion <= BundleManifest.currentVersion else {
            throw USMError.notABundle(path: archive.path, reason: "manifest format version \(manifest.formatVersion) is newer than this usm-repair reads (\(BundleManifest.currentVersion))")
        }
        let roots = Set(manifest.roots.map(\.name))
        for root in roots where !Self.isPlainName(root) {
            throw USMError.hostileArchive(path: archive.path, reason: "the manifest names a root '\(root)' that is not a plain folder name")
        }
        var expected: [String: BundleFile] = [:]
        for file in manifest.files {
            guard expected.updateValue(file, forKey: file.path) == nil else {
                throw USMError.hostileArchive(path: archive.path, reason: "the manifest lists \(file.path) twice")
            }
        }

        var outcome = Outcome(manifest: manifest, mismatches: [], entries: 0)
        var seen: Set<String> = []
        var links: Set<String> = []
        while let entry = try reader.next() {
            let path = try validate(entry, roots: roots)
            guard seen.insert(path).inserted else {
                throw USMError.hostileArchive(path: archive.path, reason: "\(path) appears twice")
            }
            // An entry below a symlink entry would be written wherever the link points.
            var prefix = Substring(path)
            while let slash = prefix.lastIndex(of: "/") {
                prefix = prefix[..<slash]
                if links.contains(String(prefix)) {
                    throw USMError.hostileArchive(path: archive.path, reason: "entry '\(path)' lies below the symlink '\(prefix)' (written through the symlink)")
                }
            }
            if entry.kind == .symlink { links.insert(path) }
            outcome.entries += 1
            let record = expected[path]
            if record == nil {
                outcome.mismatches.append(BundleMismatch(path: path, problem: "not in the manifest"))
            }
            if entry.kind == .file, let declared = entry.size, let record, declared > record.size {
                throw USMError.hostileArchive(path: archive.path, reason: "\(path) declares \(declared) bytes, more than the manifest's \(record.size)")
            }
            try handle(ArchiveReader.Entry(
                path: path, kind: entry.kind, size: entry.size, mode: entry.mode, mtime: entry.mtime, linkTarget: entry.linkTarget),
                record, reader, manifest)
        }
        for file in manifest.files where !seen.contains(file.path) {
            outcome.mismatches.append(BundleMismatch(path: file.path, problem: "listed in the manifest but missing from the archive"))
        }
        return outcome
    }

    /// The entry's normalised path, or a refusal.
    private func validate(_ entry: ArchiveReader.Entry, roots: Set<String>) throws -> String {
        var path = entry.path
        if entry.kind == .directory, path.hasSuffix("/") { path.removeLast() }
        func refuse(_ why: String) -> USMError { .hostileArchive(path: archive.path, reason: "entry '\(entry.path)' \(why)") }
        guard !path.isEmpty else { throw refuse("has an empty path") }
        guard !path.hasPrefix("/") else { throw refuse("has an absolute path") }
        guard !path.contains("\u{0}"), !path.contains("\\") else { throw refuse("has a NUL or backslash in its path") }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else { throw refuse("has an empty, '.' or '..' component") }
        guard roots.contains(String(parts[0])) else { throw refuse("lies outside the bundle's roots") }
        switch entry.kind {
        case .file, .directory:
            break
        case .symlink:
            let target = entry.linkTarget ?? ""
            guard BundleInventory.linkStaysInside(linkPath: "/" + path, target: target, root: "/" + parts[0]) else {
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
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\\") && !name.contains("\u{0}")
    }

    static func describe(_ error: Error) -> String {
        switch error {
        case let DecodingError.keyNotFound(key, _): "no \(key.stringValue)"
        case let DecodingError.typeMismatch(_, context): "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted: "not JSON"
        default: "\(error)"
        }
    }
}
