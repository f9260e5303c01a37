import Dispatch
import Foundation
import GRDB
import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a bundle: one archive of everything a layout holds, `manifest.json` first.
///
/// Steps, in this order because each needs the one before:
/// 1. list what goes in, into an on-disk catalog (lstat, readlink and listings only);
/// 2. capture every store's file set consistently into a private folder, hashing as it copies;
/// 3. hash every other file (the manifest, written first, carries every hash);
/// 4. run `status` on the captured copies, so the manifest describes exactly the archived bytes;
/// 5. redact or reduce, when asked, into further private copies;
/// 6. estimate the size against `--max-size`, before writing anything;
/// 7. write the manifest into the private folder, then the archive beside its final name
///    (re-checking that no source changed), fsync;
/// 8. put the `.sha256` sidecar and (`--redact`) the redaction map in place, then rename the
///    archive to its name last, so that a bundle is never there without them.
/// What could not be read is left out, listed, and makes the exit status 74.
public struct BundleWriter {
    public let options: ArchiveOptions

    public init(options: ArchiveOptions) { self.options = options }

    /// Progress: (bytes done, bytes in all).
    public typealias Progress = (Int64, Int64) -> Void

    /// Writes the bundle and returns what was written. `phase` names each phase as it starts
    /// (reading the stores, redacting each one, writing), `progress` the bytes written.
    public func run(progress: Progress = { _, _ in }, phase: (String) -> Void = { _ in }) throws -> ArchiveResult {
        let layout = try Layout.discover(options.layout)
        let scratch = try TemporaryDirectory(prefix: "usm-repair-bundle")
        defer { scratch.remove() }
        let catalog = try BundleCatalog(folder: scratch.url)
        let inventory = try BundleInventory.forLayout(layout, catalog: catalog)
        let output = try resolveOutput(inventory: inventory)

        // 2. Stores, captured consistently; a store that cannot be read is left out, listed.
        phase("reading \(inventory.stores.count) store(s) through private copies")
        let captures = try Self.capture(
            inventory.stores, into: scratch.url.appendingPathComponent("stores"), catalog: catalog)
        var privateCopies: [String: URL] = [:]
        for (index, store) in inventory.stores.enumerated() {
            if let openable = captures[index]?.openable { privateCopies[store.files.main.path] = openable }
        }

        // 4. The status report, on the captured bytes, in the background while 3. hashes the other files.
        let inspection = Inspection(
            options: options.layout, depth: .status, ignoredCodes: [], privateCopies: privateCopies)
        let pendingStatus = Background { try inspection.run(layout: layout) }
        let hashable = options.content == .full ? "category <> 'member'" : "category IN ('marker', 'other')"
        try Self.hashFiles(catalog, where: "kind = 'file' AND sha256 IS NULL AND bytesFrom IS NULL AND \(hashable)")
        let status = try pendingStatus.value()
        Memory.releaseFreed()

        // 3 and 5. Every store entry, with its hash and any transformation.
        let mapFile = scratch.url.appendingPathComponent("redaction-map.sqlite")
        let redactor = Redactor(map: options.content == .redacted ? mapFile : nil)
        let (storeRecords, redactedStores) = try storeEntries(
            inventory: inventory, captures: captures, status: status, catalog: catalog, redactor: redactor,
            scratch: scratch.url,
            phase: phase)
        var others = OtherTransforms()
        if options.content != .full {
            phase(
                options.content == .redacted
                    ? "redacting: external-data files replaced by their keyed digests, logs left out"
                    : "leaving out rows, logs and external data")
            others = try transformOthers(catalog: catalog, redactor: redactor, scratch: scratch.url)
        }

        // 6. Size, before writing.
        let (entries, contentBytes) = try catalog.totals()
        // What redaction did, and only that (a store alone has no logs, no preferences).
        let redaction =
            options.content == .redacted
            ? BundleRedaction(
                method: Redactor.method, stores: redactedStores,
                excluded: others.logs > 0 ? ["CloudLogs transaction logs (their content cannot be redacted)"] : [],
                externalData: others.externalData > 0
                    ? "each file's content replaced by its keyed digest (32 bytes); names kept" : nil,
                preferences: others.preferences > 0 ? "only USMCloudEnabledKey kept" : nil) : nil
        let header = BundleManifest(
            tool: ["name": "usm-repair", "version": USMRepair.version, "libarchive": ArchiveVersion.text],
            commandLine: options.commandLine, createdAt: FileTime.now.iso8601, host: Self.host,
            archiveFormat: options.format.rawValue, content: options.content.rawValue,
            personalData: options.content == .full,
            roots: inventory.roots.map { BundleRoot(name: $0.name, source: $0.url.path) },
            status: status, stores: storeRecords, redaction: redaction,
            totals: ["entries": Int64(entries), "contentBytes": contentBytes])
        let manifestFile = scratch.url.appendingPathComponent(BundleManifest.entryName)
        try ManifestWriter.write(header, catalog: catalog, to: manifestFile)
        var estimate: Int64?
        if let limit = options.maxSize {
            let size = try SizeEstimate.estimate(
                catalog: catalog, manifest: manifestFile, total: contentBytes, entries: entries, format: options.format,
                scratch: scratch.url)
            estimate = size
            if size > limit {
                throw USMError.tooLarge(
                    estimate: size, limit: limit, detail: "\(contentBytes) bytes of content in \(entries) entries")
            }
        }

        // 7 and 8. The archive beside its final name, then its sidecar.
        phase("writing \(output.lastPathComponent)")
        // The redaction map beside the bundle, private: the engineer's, never sent. Written before
        // the bundle's rename (the bundle's own name is the last thing to appear), so no bundle is
        // ever there without its map; a kill in between leaves a map beside no bundle (its header
        // names the bundle's SHA-256), removed again when the rename fails.
        var redactionMap: URL?
        let withMap = options.content == .redacted && FileStatus.lookup(mapFile.path) != nil
        let written = try Self.write(
            catalog: catalog, manifest: manifestFile, output: output, format: options.format, maxSize: options.maxSize,
            overwrite: options.overwrite, contentBytes: contentBytes, progress: progress,
            zstdLevel: Self.zstdLevel(content: options.content, contentBytes: contentBytes)
        ) { sha256 in
            guard withMap else { return [] }
            let map = try Self.writeRedactionMap(from: mapFile, beside: output, bundleSHA256: sha256)
            redactionMap = map
            return [map]
        }
        let sidecar = URL(fileURLWithPath: output.path + ".sha256")
        var listed: [BundleSkip] = []
        try catalog.forEachSkipped(limit: ArchiveResult.skippedListed) { listed += $0 }
        let counts = try catalog.skippedCounts()
        return ArchiveResult(
            output: output.path, sidecar: sidecar.path, sha256: written.sha256, bytes: written.bytes,
            format: options.format.rawValue,
            content: options.content.rawValue, personalData: options.content == .full, entries: entries,
            contentBytes: contentBytes, stores: storeRecords.count, skipped: listed, skippedCount: counts.all,
            unreadable: counts.unreadable,
            undecodableNames: layout.problems.filter { $0.code == .undecodableName }.compactMap(\.subject),
            estimatedBytes: estimate, redactionMap: redactionMap?.path)
    }

    /// Writes the tokens of a redacted bundle and the values they stand for to
    /// `<bundle>.redaction-map.jsonl`, mode 0600, as one JSON object a line: a header naming the
    /// bundle, then `{"token": "redacted:1", "text": "…"}` or `{"token": …, "blob": "<base64>"}`
    /// (as `sos clean` keeps its map: so a value the customer names can be found in the bundle).
    static func writeRedactionMap(from map: URL, beside output: URL, bundleSHA256: String) throws -> URL {
        let destination = URL(fileURLWithPath: output.path + ".redaction-map.jsonl")
        let scratch = Scratch.current
        let (partial, fd) = try scratch.makeFile(
            in: output.deletingLastPathComponent(),
            name: ".\(destination.lastPathComponent).partial-\(UUID().uuidString.prefix(8))", mode: 0o600)
        do {
            _ = fchmod(fd, 0o600)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var buffer = Data()
            func flush() throws {
                try buffer.withUnsafeBytes { try FileSync.writeAll(fd, $0, path: partial.path) }
                buffer.removeAll(keepingCapacity: true)
            }
            let header: [String: String] = [
                "format": "usm-repair-redaction-map", "formatVersion": "1", "bundle": output.lastPathComponent,
                "bundleSHA256": bundleSHA256,
                "note": "private: the values the bundle's tokens stand for; keep it, never send it with the bundle",
            ]
            buffer += try encoder.encode(header) + Data("\n".utf8)
            var config = Configuration()
            config.readonly = true
            let queue = try DatabaseQueue(path: map.path, configuration: config)
            defer { try? queue.close() }
            try queue.read { db in
                let rows = try Row.fetchCursor(db, sql: "SELECT token, kind, value FROM redaction ORDER BY token")
                while let row = try rows.next() {
                    let token = "redacted:" + String(row["token"] as Int64)
                    let value: DatabaseValue = row["value"]
                    var line = ["token": token]
                    switch value.storage {
                    case let .string(text): line["text"] = text
                    case let .blob(data): line["blob"] = data.base64EncodedString()
                    default: continue
                    }
                    buffer += try encoder.encode(line) + Data("\n".utf8)
                    if buffer.count > 1 << 20 { try flush() }
                }
            }
            try flush()
            _ = fsync(fd)
        } catch {
            close(fd)
            scratch.release(partial)
            throw USMError.wrap(error)
        }
        close(fd)
        do {
            try AtomicRename.replace(destination, with: partial.url, overwrite: true)
        } catch {
            scratch.release(partial)
            throw USMError.wrap(error)
        }
        scratch.forget(partial)
        return destination
    }

    // MARK: - Steps

    /// Captures every store on every core; one that cannot be read is left out and listed.
    static func capture(_ stores: [BundleInventory.Store], into directory: URL, catalog: BundleCatalog) throws -> [Int:
        StoreCapture]
    {
        let outcomes = JobPool.map(stores.count) { i in
            try StoreCapture.capture(
                stores[i].files, members: Array(stores[i].members.keys).sorted(),
                into: directory.appendingPathComponent("\(i)", isDirectory: true))
        }
        var captures: [Int: StoreCapture] = [:]
        for (i, outcome) in outcomes.enumerated() {
            switch outcome {
            case let .success(capture):
                captures[i] = capture
            case let .failure(error as USMError):
                guard case .unreadable = error else { throw error }
                for path in stores[i].members.values.sorted() { try catalog.remove(path) }
                let main = stores[i].members["main"] ?? stores[i].files.fileName
                try catalog.skip(
                    BundleSkip(
                        path: main, kind: "store", reason: "could not be read (\(error.message)); left out",
                        unreadable: true))
            case let .failure(error):
                throw error
            }
        }
        return captures
    }

    /// Hashes the files `filter` selects, a page at a time on every core; a file that cannot be
    /// read is left out and listed, one that changed size meanwhile stops the bundle.
    static func hashFiles(_ catalog: BundleCatalog, where filter: String) throws {
        try catalog.forEach(where: filter, pageSize: 256) { page in
            let sources = page.sorted { $0.size > $1.size }
            let outcomes = JobPool.map(sources.count) { i in try FileCopy.sha256(of: sources[i].source ?? "") }
            var hashes: [(path: String, sha256: String)] = []
            for (i, outcome) in outcomes.enumerated() {
                let entry = sources[i]
                switch outcome {
                case let .success(hashed):
                    guard hashed.bytes == entry.size else {
                        throw USMError.changedWhileReading(path: entry.source ?? entry.path)
                    }
                    hashes.append((entry.path, hashed.sha256))
                case let .failure(error as USMError):
                    guard case .unreadable = error else { throw error }
                    try catalog.remove(entry.path)
                    try catalog.skip(
                        BundleSkip(
                            path: entry.path, kind: "file", reason: "could not be read (\(error.message)); left out",
                            unreadable: true))
                case let .failure(error):
                    throw error
                }
            }
            try catalog.setHashes(hashes)
        }
    }

    /// Puts each captured store's members into the catalog, as they are or transformed, and
    /// returns the manifest's store records and what redaction did.
    private func storeEntries(
        inventory: BundleInventory, captures: [Int: StoreCapture], status: StatusReport, catalog: BundleCatalog,
        redactor: Redactor,
        scratch: URL, phase: (String) -> Void
    ) throws -> ([BundleStore], [BundleRedaction.RedactedStore]) {
        var records: [BundleStore] = []
        var redacted: [BundleRedaction.RedactedStore] = []
        for (index, store) in inventory.stores.enumerated() {
            guard let capture = captures[index] else { continue }
            let report = status.stores.first { $0.path == store.files.main.path }
            let mainPath = store.members["main"] ?? inventory.archivePath(store.files.main) ?? store.files.fileName
            var captured = "consistent-copy"
            if options.content == .full {
                for (member, path) in store.members.sorted(by: { $0.key < $1.key }) {
                    guard let copy = capture.members[member] else { continue }
                    try catalog.replace(
                        .init(
                            path: path, kind: "file", source: store.files.member(member)?.path,
                            bytesFrom: copy.copy.path, status: copy.status,
                            size: copy.status.size, sha256: copy.sha256, linkTarget: nil, transformed: nil,
                            checkSource: false,
                            category: .storeMember(store: index, member: member)))
                }
            } else {
                for path in store.members.values { try catalog.remove(path) }
                guard let main = capture.members["main"], report?.health == .ok || report?.health == .damaged,
                    let openable = capture.openable ?? capture.members["main"]?.copy
                else {
                    // A schema refused as hostile is named as such: its text is never run, so it is not rebuilt.
                    let hostile = report?.problems.first { $0.code == .hostileSchema }
                    try catalog.skip(
                        BundleSkip(
                            path: mainPath, kind: "store",
                            reason: hostile.map {
                                "hostile-schema, so it cannot be \(options.content.rawValue); left out: \($0.message)"
                            }
                                ?? "could not be read as Core Data, so it cannot be \(options.content.rawValue); left out"
                        )
                    )
                    continue
                }
                let target = scratch.appendingPathComponent("stores/\(index)/\(options.content.rawValue).sqlite")
                do {
                    if options.content == .redacted {
                        phase("redacting store \(index + 1) of \(inventory.stores.count): \(store.files.fileName)")
                        let result = try redactor.redact(source: openable, to: target)
                        redacted.append(.init(path: mainPath, tables: result.tables, values: result.values))
                        captured = "redacted-copy"
                    } else {
                        try StoreRewrite.withoutRows(source: openable, to: target)
                        captured = "metadata-only-copy"
                    }
                } catch {
                    // Leaving a store out is safe in a redacted or metadata-only bundle; sending it as it is would not be.
                    let reason = (error as? DatabaseError).map { $0.message ?? "\($0)" } ?? "\(error)"
                    try catalog.skip(
                        BundleSkip(
                            path: mainPath, kind: "store",
                            reason: "could not be made \(options.content.rawValue) (\(reason)); left out"))
                    continue
                }
                let hashed = try FileCopy.sha256(of: target.path)
                try catalog.insert(
                    .init(
                        path: mainPath, kind: "file", source: store.files.main.path, bytesFrom: target.path,
                        status: main.status,
                        size: hashed.bytes, sha256: hashed.sha256, linkTarget: nil,
                        transformed: options.content.rawValue,
                        checkSource: false, category: .storeMember(store: index, member: "main")))
                for (member, path) in store.members.sorted(by: { $0.key < $1.key }) where member != "main" {
                    try catalog.skip(
                        BundleSkip(
                            path: path, kind: "file",
                            reason: "-\(member) folded into the \(options.content.rawValue) store"))
                }
            }
            if let report {
                records.append(
                    BundleStore(
                        path: mainPath, role: store.role, uuid: store.uuid, storeUUID: report.storeUUID,
                        health: report.health.rawValue,
                        objects: report.objects,
                        rows: Dictionary(report.entities.map { ($0.name, $0.rows) }, uniquingKeysWith: +),
                        captured: captured))
            }
        }
        return (records, redacted)
    }

    /// For redacted and metadata-only bundles: transaction logs left out, external data left out
    /// or replaced by its digest, preferences reduced to `USMCloudEnabledKey`.
    /// What `transformOthers` found: transaction logs left out, external-data files and
    /// preferences files replaced.
    struct OtherTransforms { var logs = 0, externalData = 0, preferences = 0 }

    @discardableResult
    private func transformOthers(catalog: BundleCatalog, redactor: Redactor, scratch: URL) throws -> OtherTransforms {
        var found = OtherTransforms()
        // Below a name that is not valid UTF-8 discovery read nothing (`undecodable-name`): what
        // is there cannot be known to be free of personal data (a store, say), so it is left out.
        try catalog.forEach(where: "category IN ('other', 'marker')") { page in
            for entry in page where FileSystemPath.isUndecodable(entry.path) {
                try catalog.remove(entry.path)
                try catalog.skip(
                    BundleSkip(
                        path: entry.path, kind: entry.kind,
                        reason:
                            "below a name that is not valid UTF-8, not read as part of the layout: left out of a \(options.content.rawValue) bundle"
                    ))
            }
        }
        var made = 0
        try catalog.forEach(where: "kind = 'file' AND category IN ('log', 'external', 'preferences')") { page in
            for entry in page {
                switch (options.content, entry.category) {
                case (_, .transactionLog):
                    found.logs += 1
                    try catalog.remove(entry.path)
                    try catalog.skip(
                        BundleSkip(
                            path: entry.path, kind: "file",
                            reason: "transaction log left out of a \(options.content.rawValue) bundle"))
                case (.metadataOnly, .externalData):
                    try catalog.remove(entry.path)
                    try catalog.skip(
                        BundleSkip(
                            path: entry.path, kind: "file", reason: "external data left out of a metadata-only bundle"))
                case (_, .externalData):
                    found.externalData += 1
                    made += 1
                    let stand = scratch.appendingPathComponent("external-\(made)")
                    let digest: Data
                    do { digest = try redactor.redactFile(at: entry.source ?? "") } catch let error as USMError {
                        guard case .unreadable = error else { throw error }
                        try catalog.remove(entry.path)
                        try catalog.skip(
                            BundleSkip(
                                path: entry.path, kind: "file",
                                reason: "could not be read (\(error.message)); left out", unreadable: true))
                        continue
                    }
                    try digest.write(to: stand)
                    var replaced = entry
                    replaced.bytesFrom = stand.path
                    replaced.size = Int64(digest.count)
                    replaced.sha256 = try FileCopy.sha256(of: stand.path).sha256
                    replaced.transformed = "redacted"
                    replaced.checkSource = false
                    try catalog.replace(replaced)
                case (_, .preferences):
                    found.preferences += 1
                    made += 1
                    let stand = scratch.appendingPathComponent("preferences-\(made).plist")
                    let kept = try Self.reducedPreferences(URL(fileURLWithPath: entry.source ?? ""), to: stand)
                    let hashed = try FileCopy.sha256(of: stand.path)
                    var replaced = entry
                    replaced.bytesFrom = stand.path
                    replaced.size = hashed.bytes
                    replaced.sha256 = hashed.sha256
                    replaced.transformed = "only \(kept.joined(separator: ", ")) kept"
                    replaced.checkSource = false
                    try catalog.replace(replaced)
                default:
                    continue
                }
            }
        }
        return found
    }

    /// Writes the manifest file then every catalog entry, in path order, to `output` (through a
    /// partial file beside it, a scratch item renamed at the end) and the `.sha256` sidecar;
    /// re-checks that no source changed while it was read.
    static func write(
        catalog: BundleCatalog, manifest: URL, output: URL, format: ArchiveFormat, maxSize: Int64?,
        overwrite: Bool, contentBytes: Int64, progress: Progress, zstdLevel: Int32 = 3,
        beside: (_ sha256: String) throws -> [URL] = { _ in [] }
    ) throws -> (bytes: Int64, sha256: String) {
        let folder = output.deletingLastPathComponent()
        let name = output.lastPathComponent
        let scratch = Scratch.current
        let (partial, fd) = try scratch.makeFile(in: folder, name: ".\(name).partial-\(UUID().uuidString.prefix(8))")
        var done: Int64 = 0
        let written: (bytes: Int64, sha256: String)
        do {
            let writer = try ArchiveWriter(
                fd: fd, path: partial.path, format: format, limit: maxSize,
                threads: ProcessInfo.processInfo.activeProcessorCount, zstdLevel: zstdLevel)
            let manifestSize = FileStatus.lookup(manifest.path)?.size ?? 0
            try writer.addFile(
                BundleManifest.entryName, source: manifest.path, size: manifestSize, mode: 0o644, mtime: FileTime.now,
                hashing: false)
            try catalog.forEach { page in
                for p in page {
                    switch p.kind {
                    case "directory": try writer.addDirectory(p.path, mode: p.status.mode, mtime: p.status.mtime)
                    case "symlink": try writer.addSymlink(p.path, target: p.linkTarget ?? "", mtime: p.status.mtime)
                    default:
                        // The hash in the manifest was taken before; a user's file that changed since
                        // (size, mtime, ctime or inode differ) is an error, as in tar. Private copies cannot change.
                        let from = p.readPath ?? ""
                        try writer.addFile(
                            p.path, source: from, size: p.size, mode: p.status.mode, mtime: p.status.mtime,
                            hashing: false
                        ) { n in
                            done += n
                            progress(done, contentBytes)
                        }
                        if p.checkSource, !(FileStatus.lookup(from)?.sameContent(as: p.status) ?? false) {
                            throw USMError.changedWhileReading(path: p.source ?? from)
                        }
                    }
                }
            }
            written = try writer.finish()
        } catch {
            // A limit passed while writing arrives as `tooLarge` from the writer itself.
            scratch.release(partial)
            throw USMError.wrap(error)
        }
        // The files that go beside the bundle (the `.sha256` sidecar in sha256sum's format, the
        // redaction map) are put in place first and the bundle's own rename comes last: a bundle is
        // never there without them. A failure before that rename removes them again.
        var placed: [URL] = []
        do {
            let (sidecarPartial, sidecarFD) = try scratch.makeFile(
                in: folder, name: ".\(name).sha256.partial-\(UUID().uuidString.prefix(8))")
            do {
                let line = Data("\(written.sha256)  \(FileSystemPath.lastComponent(output.path))\n".utf8)
                try line.withUnsafeBytes { try FileSync.writeAll(sidecarFD, $0, path: sidecarPartial.path) }
                _ = fsync(sidecarFD)
                close(sidecarFD)
                let sidecar = URL(fileURLWithPath: output.path + ".sha256")
                try AtomicRename.replace(sidecar, with: sidecarPartial.url, overwrite: true)
                placed.append(sidecar)
            } catch {
                scratch.release(sidecarPartial)
                throw error
            }
            scratch.forget(sidecarPartial)
            placed += try beside(written.sha256)
            try AtomicRename.replace(output, with: partial.url, overwrite: overwrite)
        } catch {
            scratch.release(partial)
            for file in placed { _ = unlink(file.path) }
            throw error
        }
        scratch.forget(partial)
        FileSync.directory(folder)
        return written
    }

    // MARK: - Helpers

    /// The zstd level of a `tar.zst` bundle: 3 (zstd's default, as `bsdtar --zstd`), except for a
    /// redacted or metadata-only bundle (the one that is sent) of at most `smallContent` bytes,
    /// which takes 19: its manifest describes the redaction, and on a tiny store those few hundred
    /// bytes would make it larger than the full bundle of the same store (issue 31; checked on
    /// every corpus store). At that size level 19 costs well under a second.
    static func zstdLevel(content: ArchiveOptions.Content, contentBytes: Int64) -> Int32 {
        content != .full && contentBytes <= smallContent ? 19 : 3
    }

    /// The content size up to which a bundle that is sent is compressed at zstd's level 19.
    static let smallContent: Int64 = 16 << 20

    private func resolveOutput(inventory: BundleInventory) throws -> URL {
        let output =
            (options.output
            ?? options.currentDirectory
            .appendingPathComponent("usm-bundle-\(FileTime.now.stamp)\(options.format.fileExtension)"))
            .standardizedFileURL
        let parent = output.deletingLastPathComponent().resolvingSymlinksInPath()
        guard FileStatus.resolve(parent.path)?.kind == .directory else {
            throw USMError.notFound(path: parent.path, what: "folder for --output")
        }
        let resolved = parent.appendingPathComponent(output.lastPathComponent)
        if let store = options.layout.store {
            // A single store is its file set: the bundle may sit beside it, never replace a member.
            let files = StoreFileSet(
                main: store.deletingLastPathComponent().resolvingSymlinksInPath().appendingPathComponent(
                    store.lastPathComponent))
            for member in files.allMembers where BundleInventory.isInside(resolved, member) {
                throw USMError.usage(
                    "--output \(output.path) would replace part of the store's file set (\(member.lastPathComponent)); a bundle never writes over what it reads"
                )
            }
        } else {
            for root in inventory.roots where BundleInventory.isInside(resolved, root.url.resolvingSymlinksInPath()) {
                throw USMError.usage(
                    "--output \(output.path) is inside \(root.url.path); a bundle never writes into the folders it reads"
                )
            }
        }
        if let status = FileStatus.lookup(output.path) {
            guard options.overwrite, status.kind == .file else {
                throw USMError.confirmationRequired("\(output.path) exists; pass --overwrite to replace it")
            }
        }
        return output
    }

    /// A plist holding only `USMCloudEnabledKey`, in the original's format. Returns the keys kept.
    static func reducedPreferences(_ source: URL, to destination: URL) throws -> [String] {
        let found = try? Preferences.lookUpCloudKey(source)
        var kept: [String: Any] = [:]
        switch found?.value ?? nil {
        case let .bool(value)?: kept[Preferences.cloudEnabledKey] = value
        case let .integer(value)?: kept[Preferences.cloudEnabledKey] = NSNumber(value: value)
        default: break
        }
        try PropertyListSerialization.data(
            fromPropertyList: kept, format: found?.xml == true ? .xml : .binary, options: 0
        ).write(to: destination)
        return kept.keys.sorted()
    }

    static var host: [String: String] {
        let info = ProcessInfo.processInfo
        return [
            "name": info.hostName, "os": info.operatingSystemVersionString,
            "processors": String(info.activeProcessorCount),
        ]
    }
}
