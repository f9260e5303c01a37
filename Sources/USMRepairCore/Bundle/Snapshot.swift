import Foundation

/// The archive taken of everything a change is about to replace or delete, before the first change:
/// `restore` puts it back. A snapshot is an ordinary bundle (`content: snapshot`, tar.zst) whose
/// manifest also records the items captured and those that did not exist.
///
/// Steps, each needing the one before:
/// 1. refuse a snapshot folder inside any root the change touches (it would be changed or lost
///    with them) — the caller names those roots;
/// 2. inventory the items (whole folders, files, symlinks; never following a link);
/// 3. hash every file, write the archive beside its final name, re-checking every source unchanged;
/// 4. fsync the archive and its folder, rename it into place;
/// 5. read it back and verify every entry against the manifest, so a snapshot that exists is one
///    that can be restored.
public enum Snapshot {
    /// The zstd level of a snapshot: 1. A snapshot is a short-lived safety copy written before
    /// every change, read back once (its verification) and kept until pruned. On issue 29's
    /// benchmark store (30.7 MiB) level 1 wrote it in 0.15 s against 0.25 s at level 3, 19.8 MiB
    /// against 19.5 MiB. `restore` reads any level. Bundles made for people (`archive`) keep level 3
    /// (`BundleWriter.zstdLevel`).
    static let zstdLevel: Int32 = 1

    /// What to capture.
    public struct Request: Sendable {
        /// Named folders; every item lies inside one of them (its archive path is `<name>/<path below>`).
        public var roots: [(name: String, url: URL)]
        /// Absolute paths of the items the change will replace, delete or create (missing ones are recorded as absent).
        public var items: [URL]
        /// The command, recorded in the manifest (`restore`, `delete container`...).
        public var operation: String
        /// The arguments recorded in the manifest.
        public var commandLine: [String]
        /// Whose data it holds (a container's name, a bundle ID): part of the file name.
        public var label: String?

        public init(
            roots: [(name: String, url: URL)], items: [URL], operation: String,
            commandLine: [String] = CommandLine.arguments,
            label: String? = nil
        ) {
            self.roots = roots
            self.items = items
            self.operation = operation
            self.commandLine = commandLine
            self.label = label
        }
    }

    /// Where snapshots go by default: `$XDG_STATE_HOME/usm-repair/snapshots`, else
    /// `~/.local/state/usm-repair/snapshots` (the XDG Base Directory default).
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        StateFolder.base(environment: environment).appendingPathComponent("snapshots", isDirectory: true)
    }

    /// Takes the snapshot into `directory` (created, private, when missing) and returns the archive's path.
    /// - Parameter protected: folders the change will alter; the snapshot must lie outside all of them.
    /// - Throws: `usage` when the folder lies inside a protected one, `writeFailed` when it cannot be
    ///   written, `unreadable` when an item cannot be read whole, `changedWhileReading` when a file
    ///   changes while it is captured, `manifestMismatch` when the written snapshot does not read back exactly.
    public static func take(_ request: Request, into directory: URL, protected: [URL]) throws -> URL {
        let output = try take(request, into: directory, protected: protected, verifying: false)
        try verify(output)
        return output
    }

    /// Step 5 alone: reads the snapshot at `output` back and verifies every entry against its
    /// manifest. - Throws: `manifestMismatch` when it does not read back exactly.
    public static func verify(_ output: URL) throws {
        let check = try PhaseTimings.measure("snapshot: verify") { try BundleVerifier.verify(output) }
        if let first = check.mismatches.first {
            throw USMError.manifestMismatch(
                path: output.path, count: check.mismatchCount, first: "\(first.path): \(first.problem)")
        }
    }

    /// Steps 1 to 4; with `verifying` false the caller runs step 5 (`verify`) itself before it
    /// relies on the snapshot (the executor: beside the build, before the first change).
    static func take(_ request: Request, into directory: URL, protected: [URL], verifying: Bool) throws -> URL {
        let folder = try prepare(directory, protected: protected + request.roots.map(\.url))
        let scratch = try TemporaryDirectory(prefix: "usm-repair-snapshot")
        defer { scratch.remove() }
        let catalog = try BundleCatalog(folder: scratch.url)
        let (inventory, absent) = try BundleInventory.forItems(
            roots: request.roots, items: request.items, catalog: catalog)
        for item in request.items where inventory.archivePath(item) == nil {
            throw USMError.usage("cannot snapshot \(item.path): it lies in none of the snapshot's folders")
        }
        try PhaseTimings.measure("snapshot: hash") {
            try BundleWriter.hashFiles(catalog, where: "kind = 'file' AND sha256 IS NULL")
        }
        // A snapshot that misses something it was asked to keep is no snapshot: refuse.
        var unreadable: BundleSkip?
        if try catalog.skippedCounts().unreadable > 0 {
            try catalog.forEachSkipped { page in unreadable = unreadable ?? page.first(where: \.unreadable) }
        }
        if let unreadable {
            throw USMError.unreadable(
                path: unreadable.path, reason: "the snapshot cannot capture it (\(unreadable.reason))")
        }
        // Nor is one that leaves out a FIFO, socket or device the change would remove: the undo
        // could not put it back (the plan refuses these first; this holds if one appears since).
        let special = Set(
            [FileStatus.Kind.fifo, .socket, .characterDevice, .blockDevice, .other].map(\.rawValue))
        var leftOut: BundleSkip?
        try catalog.forEachSkipped { page in leftOut = leftOut ?? page.first { special.contains($0.kind) } }
        if let leftOut {
            throw USMError.wrongKind(
                path: leftOut.path,
                expected: "a regular file, folder or symlink: it is a \(leftOut.kind), which no snapshot can hold")
        }
        // Nor one that leaves out a name the bundle cannot carry (a backslash): refused before
        // anything is written, so no snapshot that cannot be restored is left behind.
        var unnamed: BundleSkip?
        try catalog.forEachSkipped { page in
            unnamed = unnamed ?? page.first { $0.reason == BundleInventory.backslashReason }
        }
        if let unnamed {
            throw USMError.preconditionFailed(
                "the snapshot cannot hold \(unnamed.path): its name holds a backslash, which no bundle carries "
                    + "(an extractor on Windows reads it as a folder separator); rename it or move it out of the "
                    + "layout, then run again")
        }
        let items = request.items.compactMap { FileStatus.lookup($0.path) == nil ? nil : inventory.archivePath($0) }
        let (entries, contentBytes) = try catalog.totals()
        let header = BundleManifest(
            tool: ["name": "usm-repair", "version": USMRepair.version, "libarchive": ArchiveVersion.text],
            commandLine: request.commandLine, createdAt: FileTime.now.iso8601, host: BundleWriter.host,
            archiveFormat: ArchiveFormat.tarZstd.rawValue, content: "snapshot", personalData: true,
            roots: inventory.roots.map { BundleRoot(name: $0.name, source: $0.url.path) },
            status: nil, stores: [], redaction: nil, totals: ["entries": Int64(entries), "contentBytes": contentBytes],
            snapshot: SnapshotRecord(operation: request.operation, items: items.sorted(), absent: absent))
        let manifestFile = scratch.url.appendingPathComponent(BundleManifest.entryName)
        try ManifestWriter.write(header, catalog: catalog, to: manifestFile)
        let output = folder.appendingPathComponent(fileName(operation: request.operation, label: request.label))
        _ = try PhaseTimings.measure("snapshot: write") {
            try BundleWriter.write(
                catalog: catalog, manifest: manifestFile, output: output, format: .tarZstd, maxSize: nil,
                overwrite: false, contentBytes: contentBytes, progress: { _, _ in }, zstdLevel: zstdLevel)
        }
        FileSync.directory(folder)
        if verifying { try verify(output) }
        return output
    }

    /// `<operation>-<label>-<UTC time>-<random>.tar.zst`: the command and whose data it holds
    /// (letters, digits, `.`, `_` and `-` kept, the rest `-`; at most 64 characters of the label).
    static func fileName(operation: String, label: String?) -> String {
        let slug = String(operation.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
        let name =
            label.map { label in
                String(
                    label.unicodeScalars.prefix(64).map { scalar -> Character in
                        scalar.isASCII
                            && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
                            ? Character(scalar) : "-"
                    })
            }.flatMap { $0.isEmpty || $0.allSatisfy({ $0 == "-" || $0 == "." }) ? nil : "-" + $0 } ?? ""
        return "\(slug)\(name)-\(FileTime.now.stamp)-\(UUID().uuidString.prefix(8).lowercased()).tar.zst"
    }

    /// Refuses a snapshot folder inside a protected folder (judged on the real path, symlinks
    /// resolved, before anything is created), then creates it (0700) when missing.
    static func prepare(_ directory: URL, protected: [URL]) throws -> URL {
        let folder = directory.standardizedFileURL
        try refuseInside(folder, protected: protected, why: "which this command changes")
        if FileStatus.resolve(folder.path) == nil {
            try Folders.create(folder.path, mode: 0o700, purpose: "cannot create the snapshot folder")
        }
        guard FileStatus.resolve(folder.path)?.kind == .directory else {
            throw USMError.wrongKind(path: folder.path, expected: "a folder for snapshots")
        }
        return folder
    }

    /// Refuses (usage, 64) a snapshot folder that lies inside one of `protected`, judged on real
    /// paths (symlinks resolved on both sides, also for a folder that does not exist yet).
    public static func refuseInside(_ directory: URL, protected: [URL], why: String) throws {
        let folder = directory.standardizedFileURL
        let resolved = resolvedPath(of: folder)
        for root in protected {
            let base = resolvedPath(of: root.standardizedFileURL)
            if Confinement.isInside(resolved, base) {
                throw USMError.usage(
                    "the snapshot folder \(folder.path) lies inside \(root.path), \(why); choose another with --snapshot-dir"
                )
            }
        }
    }

    /// The path with the symlinks of its longest existing prefix resolved and the rest appended.
    static func resolvedPath(of url: URL) -> String {
        FileSystemPath.resolved(url.standardizedFileURL.path)
    }
}
