import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The snapshots in a folder (`usm-repair snapshots`): what each one undoes, when it was taken,
/// whose folders it holds and its size; and the choice of those to prune. Only what reads as a
/// snapshot of this tool (its manifest's `content` is `snapshot`) is ever chosen for removal.
public enum SnapshotCatalog {
    /// One snapshot file (or a file in the folder that is not one, with why).
    public struct Entry: Sendable, Encodable, Equatable {
        /// The archive's path.
        public let path: String
        /// The command whose change it undoes (`rebuild --from local`), null when unreadable.
        @NullEncoded public var command: String?
        /// When it was taken (UTC, ISO 8601), null when unreadable.
        @NullEncoded public var createdAt: String?
        /// The folders it was taken from and goes back to (`roots[].source`), by name.
        public let layout: [String: String]
        /// The archive's size in bytes.
        public let bytes: Int64
        /// Why it is not listed as a snapshot (not a usm-repair snapshot, unreadable), else null.
        @NullEncoded public var problem: String?

        /// The time it was taken: the manifest's, else the file's modification time.
        let taken: Date

        /// The container it belongs to (`--group-by container`): whose data its name says
        /// (`<command>-<whose>-<UTC time>-<random>.tar.zst`: the download's folder name, the Mac
        /// app's bundle ID, the preferences' domain, the store's name), else all its folders.
        public var container: String {
            let name = FileSystemPath.lastComponent(path)
            let slug = String((command ?? "").lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
            // Without the time and random parts (`-20261121T101500Z-1a2b3c4d.tar.zst`).
            let parts = name.split(separator: "-", omittingEmptySubsequences: false)
            if !slug.isEmpty, name.hasPrefix(slug + "-"), parts.count >= 3 {
                let stem = parts.dropLast(2).joined(separator: "-")
                if stem.count > slug.count + 1 { return String(stem.dropFirst(slug.count + 1)) }
            }
            return layout.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\n")
        }
    }

    /// The snapshots in `folder` (`*.tar.zst`), oldest first; none when the folder does not exist.
    /// - Throws: `unreadable` when the folder cannot be listed.
    public static func list(_ folder: URL) throws -> [Entry] {
        guard FileStatus.resolve(folder.path)?.kind == .directory else { return [] }
        var entries: [Entry] = []
        for name in try DirectoryListing.names(folder.path) where name.hasSuffix(".tar.zst") && !name.hasPrefix(".") {
            let path = folder.appendingPathComponent(name).path
            guard let status = FileStatus.lookup(path), status.kind == .file else { continue }
            let modified = Date(
                timeIntervalSince1970: TimeInterval(status.mtime.seconds) + TimeInterval(status.mtime.nanoseconds) / 1e9
            )
            do {
                let header = try readHeader(URL(fileURLWithPath: path))
                guard header.content == "snapshot", let command = header.command else {
                    entries.append(
                        Entry(
                            path: path, command: nil, createdAt: nil, layout: [:], bytes: status.size,
                            problem: "not a snapshot (a bundle of content \(header.content ?? "unknown"))",
                            taken: modified))
                    continue
                }
                let taken = header.createdAt.flatMap(parseDate) ?? modified
                entries.append(
                    Entry(
                        path: path, command: command, createdAt: header.createdAt, layout: header.roots,
                        bytes: status.size,
                        problem: nil, taken: taken))
            } catch {
                entries.append(
                    Entry(
                        path: path, command: nil, createdAt: nil, layout: [:], bytes: status.size,
                        problem: USMError.wrap(error, path: path).message, taken: modified))
            }
        }
        return entries.sorted { ($0.taken, $0.path) < ($1.taken, $1.path) }
    }

    /// The snapshots to prune among `entries`: those taken before `now - olderThan` (when given)
    /// and not among the newest `keep` (when given). Files that are not snapshots are never chosen.
    /// `byContainer` (`--group-by container`): `keep` counts per container (the folder a snapshot
    /// goes back to), as restic's `forget --group-by paths` does, so one busy container cannot push
    /// out the last snapshots of another.
    public static func select(
        _ entries: [Entry], olderThan: TimeInterval?, keep: Int?, byContainer: Bool = false, now: Date = Date()
    ) -> [Entry] {
        let snapshots = entries.filter { $0.problem == nil }
        var chosen = snapshots
        if let keep {
            if byContainer {
                var newest: [String: Int] = [:]
                var kept = Set<String>()
                for entry in snapshots.reversed() {
                    let count = newest[entry.container, default: 0]
                    if count < keep { kept.insert(entry.path) }
                    newest[entry.container] = count + 1
                }
                chosen = snapshots.filter { !kept.contains($0.path) }
            } else {
                chosen = Array(snapshots.dropLast(max(0, keep)))
            }
        }
        if let olderThan { chosen = chosen.filter { $0.taken < now.addingTimeInterval(-olderThan) } }
        return chosen
    }

    /// Removes the snapshot files `entries` names, each only while it is still the regular file
    /// listed (a link or another kind of item there is left alone), with its `.sha256` sidecar
    /// (when that is a regular file). Returns the paths removed.
    /// - Throws: `writeFailed` naming the first file that could not be removed (those before it are gone).
    public static func remove(_ entries: [Entry]) throws -> [String] {
        var removed: [String] = []
        for entry in entries {
            guard FileStatus.lookup(entry.path)?.kind == .file else { continue }
            // The sidecar first: a sidecar left without its archive would be a stray file; an
            // archive left without its sidecar is still listed (and pruned) the next time.
            let sidecar = entry.path + ".sha256"
            for path in [sidecar, entry.path] where FileStatus.lookup(path)?.kind == .file {
                let result = FileSystemPath.withCString(path) { unlink($0) }
                guard result == 0 else {
                    throw USMError.writeFailed(path: path, reason: "cannot remove it: \(errnoDescription())")
                }
                removed.append(path)
            }
        }
        if let folder = entries.first.map({ URL(fileURLWithPath: $0.path).deletingLastPathComponent() }) {
            FileSync.directory(folder)
        }
        return removed
    }

    /// Parses `30d`, `12h`, `2w`, `90m` (days, hours, weeks, minutes) into seconds.
    public static func duration(_ text: String) -> TimeInterval? {
        let units: [Character: TimeInterval] = ["m": 60, "h": 3600, "d": 86400, "w": 7 * 86400]
        guard let unit = text.last.flatMap({ units[$0] }), let number = Double(text.dropLast()), number >= 0,
            number.isFinite
        else { return nil }
        return number * unit
    }

    /// What the manifest says: content, the snapshot's command, when, and the roots.
    private static func readHeader(_ archive: URL) throws -> (
        content: String?, command: String?, createdAt: String?, roots: [String: String]
    ) {
        let reader = try ArchiveReader(path: archive.path)
        guard let first = try reader.next(), first.path == BundleManifest.entryName else {
            throw USMError.notABundle(path: archive.path, reason: "its first entry is not \(BundleManifest.entryName)")
        }
        let scratch = try TemporaryDirectory(prefix: "usm-repair-snapshots")
        defer { scratch.remove() }
        let file = scratch.url.appendingPathComponent(BundleManifest.entryName)
        let fd = FileSystemPath.withCString(file.path) { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw USMError.writing(file.path) }
        do {
            defer { close(fd) }
            try reader.readData(limit: BundleScanner.maxManifestSize) { try FileSync.writeAll(fd, $0, path: file.path) }
        }
        let input = FileSystemPath.withCString(file.path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard input >= 0 else { throw USMError.unreadable(path: file.path, reason: errnoDescription()) }
        defer { close(input) }
        var json = JSONStream(fd: input)
        var content: String?
        var command: String?
        var createdAt: String?
        var roots: [String: String] = [:]
        do {
            try json.beginObject()
            while let key = try json.nextKey() {
                switch key {
                case "content": content = try json.readValue(budget: 4096).string
                case "createdAt": createdAt = try json.readValue(budget: 4096).string
                case "roots":
                    for item in try json.readValue(budget: 1 << 20).array ?? [] {
                        if let name = item["name"]?.string, let source = item["source"]?.string { roots[name] = source }
                    }
                case "snapshot":
                    guard try json.peekIsObject() else {
                        try json.skipValue()
                        continue
                    }
                    try json.beginObject()
                    while let inner = try json.nextKey() {
                        if inner == "operation" {
                            command = try json.readValue(budget: 4096).string
                        } else {
                            try json.skipValue()
                        }
                    }
                default: try json.skipValue()
                }
            }
        } catch let failure as JSONStream.Failure {
            throw USMError.notABundle(path: archive.path, reason: "its manifest.json is not JSON: \(failure.message)")
        }
        return (content, command, createdAt, roots)
    }

    private static func parseDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
