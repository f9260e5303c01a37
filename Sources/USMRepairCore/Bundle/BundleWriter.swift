import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `archive` is asked to do.
public struct ArchiveOptions: Sendable {
    /// What goes in.
    public enum Content: String, Sendable, Codable {
        /// Every byte as it is (personal data).
        case full
        /// Text and blob values replaced by keyed hashes, transaction logs left out.
        case redacted
        /// Schema, metadata and row counts; no rows, no logs, no external data.
        case metadataOnly = "metadata-only"
    }

    public var layout: LayoutOptions
    /// The archive to write; nil for `usm-bundle-<UTC time>.<ext>` in the current folder.
    public var output: URL?
    public var format: ArchiveFormat
    public var content: Content
    /// Refuse (before writing, from an estimate) a bundle larger than this many bytes.
    public var maxSize: Int64?
    /// Replace an existing output file.
    public var overwrite: Bool
    /// Recorded in the manifest.
    public var commandLine: [String]

    public init(layout: LayoutOptions, output: URL? = nil, format: ArchiveFormat = .tarZstd, content: Content = .full,
                maxSize: Int64? = nil, overwrite: Bool = false, commandLine: [String] = CommandLine.arguments) {
        self.layout = layout
        self.output = output
        self.format = format
        self.content = content
        self.maxSize = maxSize
        self.overwrite = overwrite
        self.commandLine = commandLine
    }
}

/// What `archive` did; its JSON is the `archive --json` report.
public struct ArchiveResult: Sendable, Encodable {
    public let schemaVersion = 1
    public let command = "archive"
    public let output: String
    /// The `.sha256` sidecar beside the archive.
    public let sidecar: String
    public let sha256: String
    public let bytes: Int64
    public let format: String
    public let content: String
    public let personalData: Bool
    /// Entries in the archive besides the manifest, and the bytes of their content.
    public let entries: Int
    public let contentBytes: Int64
    public let stores: Int
    public let skipped: [BundleSkip]
    public let exitCode = 0
    public let exitStatus = "ok"
}

/// Writes a bundle: one archive of everything a layout holds, `manifest.json` first.
///
/// Steps, in this order because each needs the one before:
/// 1. plan what goes in (lstat and listings only);
/// 2. capture every store's file set consistently into a private folder, hashing as it copies;
/// 3. hash every other file (the manifest, written first, carries every hash);
/// 4. run `status` on the captured copies, so the manifest describes exactly the archived bytes;
/// 5. redact or reduce, when asked, into further private copies;
/// 6. estimate the size against `--max-size`, before writing anything;
/// 7. write the archive beside its final name, re-checking that no source changed, fsync, rename;
/// 8. write the `.sha256` sidecar the same way.
public struct BundleWriter {
    public let options: ArchiveOptions

    public init(options: ArchiveOptions) { self.options = options }

    /// Progress: (bytes done, bytes in all).
    public typealias Progress = (Int64, Int64) -> Void

    /// A file bound for the archive, with where its bytes come from.
    struct Planned {
        let path: String
        let kind: String
        let source: URL?
        let status: FileStatus
        var bytesFrom: URL?
        var size: Int64
        var sha256: String?
        var linkTarget: String?
        var transformed: String?
        /// Re-checked against the source when written (false for private copies).
        var checkSource: Bool
    }

    /// Writes the bundle and returns what was written.
    public func run(progress: Progress = { _, _ in }) throws -> ArchiveResult {
        let layout = try Layout.discover(options.layout)
        let inventory = BundleInventory.forLayout(layout)
        let output = try resolveOutput(inventory: inventory)
        let scratch = try TemporaryDirectory(prefix: "usm-repair-bundle")
        defer { scratch.remove() }

        // 2. Stores, captured consistently.
        var planned: [Planned] = []
        let captures = try StoreCapture.captureAll(
            inventory.stores.map { ($0.files, Array($0.members.keys).sorted()) }, into: scratch.url.appendingPathComponent("stores"))
        var privateCopies: [String: URL] = [:]
        for (index, store) in inventory.stores.enumerated() {
            if let openable = captures[index]?.openable { privateCopies[store.files.main.path] = openable }
        }

        // 4. The status report, on the captured bytes, in the background while 3. hashes the other files.
        let inspection = Inspection(options: options.layout, depth: .status, ignoredCodes: [], privateCopies: privateCopies)
        let pendingStatus = Background { try inspection.run(layout: layout) }
        let toHash = inventory.files.values.filter { file in
            switch (options.content, file.category) {
            case (.full, _), (_, .marker), (_, .other), (_, .storeMember): true
            default: false
            }
        }.map(\.url.path)
        let hashes = try ParallelHash.hash(toHash)
        let status = try pendingStatus.value()
        Memory.releaseFreed()

        // 3 and 5. Every entry, with its hash and any transformation.
        var skipped = inventory.skipped
        var storeRecords: [BundleStore] = []
        var redactedStores: [BundleRedaction.RedactedStore] = []
        let redactor = Redactor()
        for (index, store) in inventory.stores.enumerated() {
            guard let capture = captures[index] else { continue }
            let report = status.stores.first { $0.path == store.files.main.path }
            let mainPath = store.members["main"] ?? inventory.archivePath(store.files.main) ?? store.files.fileName
            var captured = "consistent-copy"
            if options.content == .full {
                for (member, path) in store.members.sorted(by: { $0.key < $1.key }) {
                    guard let copy = capture.members[member] else { continue }
                    planned.append(Planned(
                        path: path, kind: "file", source: store.files.member(member), status: copy.status, bytesFrom: copy.copy,
                        size: copy.status.size, sha256: copy.sha256, checkSource: false))
                }
            } else {
                guard let main = capture.members["main"], report?.health == .ok || report?.health == .damaged,
                      let openable = capture.openable ?? capture.members["main"]?.copy
                else {
                    skipped.append(BundleSkip(path: mainPath, kind: "store", reason: "could not be read as Core Data, so it cannot be \(options.content.rawValue); left out"))
                    continue
                }
                let target = scratch.url.appendingPathComponent("stores/\(index)/\(options.content.rawValue).sqlite")
                do {
                    if options.content == .redacted {
                        let result = try redactor.redact(source: openable, to: target)
                        redactedStores.append(.init(path: mainPath, tables: result.tables, values: result.values))
                        captured = "redacted-copy"
                    } else {
                        try StoreRewrite.withoutRows(source: openable, to: target)
                        captured = "metadata-only-copy"
                    }
                } catch {
                    // Leaving a store out is safe in a redacted or metadata-only bundle; sending it as it is would not be.
                    let reason = (error as? DatabaseError).map { $0.message ?? "\($0)" } ?? "\(error)"
                    skipped.append(BundleSkip(path: mainPath, kind: "store", reason: "could not be made \(options.content.rawValue) (\(reason)); left out"))
                    continue
                }
                let hashed = try FileCopy.sha256(of: target.path)
                planned.append(Planned(
                    path: mainPath, kind: "file", source: store.files.main, status: main.status, bytesFrom: target,
                    size: hashed.bytes, sha256: hashed.sha256, transformed: options.content.rawValue, checkSource: false))
                for (member, path) in store.members where member != "main" {
                    skipped.append(BundleSkip(path: path, kind: "file", reason: "-\(member) folded into the \(options.content.rawValue) store"))
                }
            }
            if let report {
                storeRecords.append(BundleStore(
                    path: mainPath, role: store.role, uuid: store.uuid, storeUUID: report.storeUUID, health: report.health.rawValue,
                    objects: report.objects,
                    rows: Dictionary(report.entities.map { ($0.name, $0.rows) }, uniquingKeysWith: +), captured: captured))
            }
        }

        for (path, directory) in inventory.directories {
            planned.append(Planned(path: path, kind: "directory", source: directory.url, status: directory.status, size: 0, checkSource: false))
        }
        for (path, link) in inventory.symlinks {
            planned.append(Planned(path: path, kind: "symlink", source: link.url, status: link.status, size: 0, linkTarget: link.target, checkSource: false))
        }
        for (path, file) in inventory.files {
            switch (options.content, file.category) {
            case (.full, _), (_, .marker), (_, .other), (_, .storeMember):
                guard let hashed = hashes[file.url.path], hashed.bytes == file.status.size else {
                    throw USMError.changedWhileReading(path: file.url.path)
                }
                planned.append(Planned(path: path, kind: "file", source: file.url, status: file.status, size: hashed.bytes, sha256: hashed.sha256, checkSource: true))
            case (_, .transactionLog):
                skipped.append(BundleSkip(path: path, kind: "file", reason: "transaction log left out of a \(options.content.rawValue) bundle"))
            case (.metadataOnly, .externalData):
                skipped.append(BundleSkip(path: path, kind: "file", reason: "external data left out of a metadata-only bundle"))
            case (_, .externalData):
                let stand = scratch.url.appendingPathComponent("external-\(planned.count)")
                try redactor.redactFile(at: file.url.path).write(to: stand)
                let hashed = try FileCopy.sha256(of: stand.path)
                planned.append(Planned(path: path, kind: "file", source: file.url, status: file.status, bytesFrom: stand, size: hashed.bytes, sha256: hashed.sha256, transformed: "redacted", checkSource: false))
            case (_, .preferences):
                let stand = scratch.url.appendingPathComponent("preferences-\(planned.count).plist")
                let kept = try Self.reducedPreferences(file.url, to: stand)
                let hashed = try FileCopy.sha256(of: stand.path)
                planned.append(Planned(
                    path: path, kind: "file", source: file.url, status: file.status, bytesFrom: stand, size: hashed.bytes,
                    sha256: hashed.sha256, transformed: "only \(kept.joined(separator: ", ")) kept", checkSource: false))
            }
        }
        planned.sort { $0.path < $1.path }

        // 6. Size, before writing.
        let contentBytes = planned.reduce(0) { $0 + $1.size }
        if let limit = options.maxSize {
            let estimate = try SizeEstimate.estimate(
                files: planned.compactMap { p in p.kind == "file" ? ((p.bytesFrom ?? p.source)!, p.size) : nil },
                total: contentBytes, entries: planned.count, format: options.format, scratch: scratch.url)
            if estimate > limit {
                throw USMError.tooLarge(estimate: estimate, limit: limit, detail: "\(contentBytes) bytes of content in \(planned.count) entries")
            }
        }

        // The manifest.
        let files = planned.map { p in
            BundleFile(
                kind: p.kind, path: p.path, size: p.size, mode: p.status.mode, mtime: p.status.mtime, sha256: p.sha256,
                linkTarget: p.linkTarget, source: p.source?.path, transformed: p.transformed)
        }
        let redaction = options.content == .redacted ? BundleRedaction(
            method: Redactor.method, stores: redactedStores,
            excluded: ["CloudLogs transaction logs (their content cannot be redacted)"],
            externalData: "each file's content replaced by its keyed digest (32 bytes); names kept",
            preferences: "only USMCloudEnabledKey kept") : nil
        let manifest = BundleManifest(
            tool: ["name": "usm-repair", "version": USMRepair.version, "libarchive": ArchiveVersion.text],
            commandLine: options.commandLine, createdAt: FileTime.now.iso8601, host: Self.host,
            archiveFormat: options.format.rawValue, content: options.content.rawValue,
            personalData: options.content == .full, roots: inventory.roots.map { BundleRoot(name: $0.name, source: $0.url.path) },
            status: status, stores: storeRecords, files: files, skipped: skipped, redaction: redaction,
            totals: ["entries": Int64(files.count), "contentBytes": contentBytes])

        // 7 and 8. The archive beside its final name, then its sidecar.
        let written = try Self.write(
            planned: planned, manifest: manifest, output: output, format: options.format, maxSize: options.maxSize,
            overwrite: options.overwrite, contentBytes: contentBytes, progress: progress)
        let sidecar = URL(fileURLWithPath: output.path + ".sha256")

        return ArchiveResult(
            output: output.path, sidecar: sidecar.path, sha256: written.sha256, bytes: written.bytes, format: options.format.rawValue,
            content: options.content.rawValue, personalData: options.content == .full, entries: files.count,
            contentBytes: contentBytes, stores: storeRecords.count, skipped: skipped)
    }

    /// Writes `manifest` then every planned entry to `output` (through a partial file renamed at
    /// the end) and the `.sha256` sidecar; re-checks that no source changed while it was read.
    static func write(
        planned: [Planned], manifest: BundleManifest, output: URL, format: ArchiveFormat, maxSize: Int64?,
        overwrite: Bool, contentBytes: Int64, progress: Progress
    ) throws -> (bytes: Int64, sha256: String) {
        let partial = output.deletingLastPathComponent().appendingPathComponent(".\(output.lastPathComponent).partial-\(UUID().uuidString)")
        var done: Int64 = 0
        let written: (bytes: Int64, sha256: String)
        do {
            let writer = try ArchiveWriter(
                path: partial.path, format: format, limit: maxSize,
                threads: ProcessInfo.processInfo.activeProcessorCount)
            try writer.addData(BundleManifest.entryName, try JSONOutput.data(manifest), mode: 0o644, mtime: FileTime.now)
            for p in planned {
                switch p.kind {
                case "directory": try writer.addDirectory(p.path, mode: p.status.mode, mtime: p.status.mtime)
                case "symlink": try writer.addSymlink(p.path, target: p.linkTarget ?? "", mtime: p.status.mtime)
                default:
                    // The hash in the manifest was taken before; a user's file that changed since
                    // (size, mtime, ctime or inode differ) is an error, as in tar. Private copies cannot change.
                    let from = (p.bytesFrom ?? p.source)!
                    try writer.addFile(
                        p.path, source: from.path, size: p.size, mode: p.status.mode, mtime: p.status.mtime, hashing: false
                    ) { n in
                        done += n
                        progress(done, contentBytes)
                    }
                    if p.checkSource, !(FileStatus.lookup(from.path)?.sameContent(as: p.status) ?? false) {
                        throw USMError.changedWhileReading(path: (p.source ?? from).path)
                    }
                }
            }
            written = try writer.finish()
        } catch {
            try? FileManager.default.removeItem(at: partial)
            if case let USMError.archive(_, _, message) = error, message.contains("--max-size"), let limit = maxSize {
                throw USMError.tooLarge(estimate: limit + 1, limit: limit, detail: "the compressed bundle passed the limit while being written")
            }
            throw error
        }
        try AtomicRename.replace(output, with: partial, overwrite: overwrite)
        // The sidecar, in sha256sum's format.
        let sidecar = URL(fileURLWithPath: output.path + ".sha256")
        let sidecarPartial = URL(fileURLWithPath: partial.path + ".sha256")
        try Data("\(written.sha256)  \(output.lastPathComponent)\n".utf8).write(to: sidecarPartial)
        try AtomicRename.replace(sidecar, with: sidecarPartial, overwrite: true)
        return written
    }

    // MARK: - Helpers

    private func resolveOutput(inventory: BundleInventory) throws -> URL {
        let output = (options.output ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent("usm-bundle-\(FileTime.now.stamp)\(options.format.fileExtension)")).standardizedFileURL
        let parent = output.deletingLastPathComponent().resolvingSymlinksInPath()
        guard FileStatus.resolve(parent.path)?.kind == .directory else {
            throw USMError.notFound(path: parent.path, what: "folder for --output")
        }
        let resolved = parent.appendingPathComponent(output.lastPathComponent)
        for root in inventory.roots where BundleInventory.isInside(resolved, root.url.resolvingSymlinksInPath()) {
            throw USMError.usage("--output \(output.path) is inside \(root.url.path); a bundle never writes into the folders it reads")
        }
        // An archive run killed mid-way leaves its partial file behind: it is not a bundle, so it goes.
        let partialPrefix = ".\(output.lastPathComponent).partial-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? [] where name.hasPrefix(partialPrefix) {
            try? FileManager.default.removeItem(at: parent.appendingPathComponent(name))
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
        let data = try Data(contentsOf: source)
        var format = PropertyListSerialization.PropertyListFormat.binary
        let dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: &format)) as? [String: Any] ?? [:]
        var kept: [String: Any] = [:]
        if let value = dict[Preferences.cloudEnabledKey] { kept[Preferences.cloudEnabledKey] = value }
        try PropertyListSerialization.data(fromPropertyList: kept, format: format == .xml ? .xml : .binary, options: 0).write(to: destination)
        return kept.keys.sorted()
    }

    static var host: [String: String] {
        let info = ProcessInfo.processInfo
        return ["name": info.hostName, "os": info.operatingSystemVersionString, "processors": String(info.activeProcessorCount)]
    }
}
