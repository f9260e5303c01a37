import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `bundle verify` found; its JSON is the `bundle verify --json` report.
public struct VerificationReport: Sendable, Encodable {
    public let schemaVersion = 1
    public let command = "bundle verify"
    public let archive: String
    /// `tar.zst`, `zip`, ... as the manifest records it.
    @NullEncoded public var archiveFormat: String?
    /// `full`, `redacted`, `metadata-only` or `snapshot`.
    @NullEncoded public var content: String?
    /// Entries after the manifest, and how many matched it exactly.
    public let entries: Int
    public let matched: Int
    /// The differences: the first `MismatchList.limit` of `mismatchCount`.
    public let mismatches: [BundleMismatch]
    /// How many differences there are in all.
    public let mismatchCount: Int
    /// Stores whose `Z_UUID` and rows per entity were compared with the manifest.
    public let storesChecked: Int
    /// The `.sha256` sidecar: `ok`, `mismatch`, `absent` or `unreadable` (there, not a readable sidecar).
    public let sidecar: String
    /// True when every entry matches and the sidecar (if any) matches.
    public let ok: Bool
    /// 0 when everything matches, 1 otherwise.
    public let exitCode: Int32
    /// The exit code's name (`ok`, `problems-found`).
    public let exitStatus: String

    init(
        archive: String, archiveFormat: String?, content: String?, entries: Int, matched: Int,
        mismatches: MismatchList, storesChecked: Int, sidecar: String
    ) {
        self.archive = archive
        self.archiveFormat = archiveFormat
        self.content = content
        self.entries = entries
        self.matched = matched
        self.mismatches = mismatches.items.sorted { $0.path.pathKey.lexicographicallyPrecedes($1.path.pathKey) }
        mismatchCount = mismatches.count
        self.storesChecked = storesChecked
        self.sidecar = sidecar
        ok = mismatches.isEmpty
        let status: ExitStatus = ok ? .ok : .problemsFound
        exitCode = status.rawValue
        exitStatus = status.name
    }
}

/// Checks every entry of a bundle against its manifest: type, size, SHA-256, mode and time; then
/// opens each store it holds (a private copy, read-only) and compares its `Z_UUID` and rows per
/// entity with the manifest's `stores` list.
public enum BundleVerifier {
    /// Called for each entry checked: its path and the differences found (none when it matches).
    public typealias EntryHandler = (String, [String]) -> Void

    /// Verifies `archive`.
    /// - Throws: `notFound`, `brokenArchive` (truncated, corrupt), `notABundle`, `hostileArchive`.
    public static func verify(_ archive: URL, onEntry: EntryHandler? = nil) throws -> VerificationReport {
        let scratch = try TemporaryDirectory(prefix: "usm-repair-verify")
        defer { scratch.remove() }
        return try verify(archive, scratch: scratch.url, onEntry: onEntry).report
    }

    /// Verifies `archive` using `scratch` for the manifest index and store copies; returns the
    /// scan's outcome and index too, for a restore's second pass.
    static func verify(_ archive: URL, scratch: URL, onEntry: EntryHandler? = nil) throws
        -> (report: VerificationReport, outcome: BundleScanner.Outcome, index: ManifestIndex)
    {
        let index = try ManifestIndex(folder: scratch)
        var mismatches = MismatchList()
        var matched = 0
        let stores = StoreCopies(folder: scratch.appendingPathComponent("stores", isDirectory: true))
        let scanner = BundleScanner(archive: archive, index: index, scratch: scratch)
        var outcome = try scanner.scan { entry, record, reader, manifest in
            guard let record else {
                onEntry?(entry.path, ["not in the manifest"])
                return
            }
            let zip = manifest.archiveFormat == ArchiveFormat.zip.rawValue
            let copy = try stores.destination(for: record.path, manifest: manifest)
            let found = try compare(entry, record, reader: reader, zip: zip, copyTo: copy)
            for problem in found { mismatches.append(BundleMismatch(path: record.path, problem: problem)) }
            if found.isEmpty { matched += 1 }
            onEntry?(record.path, found)
        }
        for mismatch in outcome.mismatches.items { mismatches.append(mismatch) }
        mismatches.countMore(outcome.mismatches.count - outcome.mismatches.items.count)
        let checked = try stores.compare(with: outcome.manifest.stores) { mismatches.append($0) }
        let (sidecar, why) = try checkSidecar(archive)
        if sidecar == "mismatch" {
            mismatches.append(
                BundleMismatch(
                    path: archive.lastPathComponent + ".sha256",
                    problem: "the archive's SHA-256 differs from its sidecar"))
        } else if sidecar == "unreadable" {
            mismatches.append(
                BundleMismatch(
                    path: archive.lastPathComponent + ".sha256",
                    problem: "the sidecar is there but cannot be read as one: \(why ?? "unreadable")"))
        }
        outcome.mismatches = mismatches
        let report = VerificationReport(
            archive: archive.path, archiveFormat: outcome.manifest.archiveFormat, content: outcome.manifest.content,
            entries: outcome.entries, matched: matched, mismatches: mismatches, storesChecked: checked, sidecar: sidecar
        )
        return (report, outcome, index)
    }

    /// Differences of one entry from its record; reads the entry's data (into `copyTo` too, when given).
    /// - Throws: a failure to write the copy (our own scratch file: an I/O error or a full disk,
    ///   never a difference of the archive's).
    static func compare(
        _ entry: ArchiveReader.Entry, _ record: BundleFile, reader: ArchiveReader, zip: Bool, copyTo: URL? = nil
    ) throws -> [String] {
        var found: [String] = []
        let kind =
            entry.kind == .file
            ? "file" : entry.kind == .directory ? "directory" : entry.kind == .symlink ? "symlink" : entry.kind.rawValue
        guard kind == record.kind else {
            return ["is a \(kind), the manifest says \(record.kind)"]
        }
        switch entry.kind {
        case .file:
            var hasher = SHA256()
            var fd: Int32 = -1
            if let copyTo {
                fd = FileSystemPath.withCString(copyTo.path) {
                    open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                }
                if fd < 0 { throw USMError.writing(copyTo.path, purpose: "a private copy of a store in the archive") }
            }
            defer { if fd >= 0 { close(fd) } }
            var copyFailure: USMError?
            do {
                let size = try reader.readData(limit: record.size) { chunk in
                    hasher.update(bufferPointer: chunk)
                    guard fd >= 0 else { return }
                    do { try FileSync.writeAll(fd, chunk, path: copyTo?.path ?? "") } catch {
                        copyFailure = USMError.wrap(error, path: copyTo?.path)
                        throw error
                    }
                }
                if size != record.size { found.append("holds \(size) bytes, the manifest says \(record.size)") }
                let digest = hasher.finalize().hex
                if digest != record.sha256 {
                    found.append("SHA-256 \(digest) differs from the manifest's \(record.sha256 ?? "none")")
                }
            } catch let error as USMError {
                if let copyFailure { throw copyFailure.diagnosingSpace() }
                found.append(error.message)
            } catch {
                if let copyFailure { throw copyFailure.diagnosingSpace() }
                found.append("\(error)")
            }
        case .symlink:
            if entry.linkTarget != record.linkTarget {
                found.append(
                    "points at \(entry.linkTarget ?? "nothing"), the manifest says \(record.linkTarget ?? "nothing")")
            }
        default:
            break
        }
        if entry.kind != .symlink, entry.mode & 0o7777 != record.modeBits & 0o7777 {
            found.append(String(format: "mode %04o differs from the manifest's %@", entry.mode & 0o7777, record.mode))
        }
        // zip keeps times to the second (DOS times to two); tar keeps at least whole seconds.
        let delta = abs(entry.mtime.seconds - record.fileTime.seconds)
        if delta > (zip ? 2 : 0) {
            found.append("modified time \(entry.mtime.iso8601) differs from the manifest's \(record.mtime)")
        }
        return found
    }

    /// Largest sidecar read: one `sha256sum` line is well under it.
    static let maxSidecar = 4096

    /// `ok`, `mismatch`, `absent` (nothing there) or `unreadable` (something there that is not a
    /// regular file of at most `maxSidecar` bytes, or cannot be read: a FIFO, a link to a device,
    /// a huge file), with why for `unreadable`. Read without blocking and bounded.
    static func checkSidecar(_ archive: URL) throws -> (String, String?) {
        let sidecar = archive.path + ".sha256"
        guard FileStatus.lookup(sidecar) != nil else { return ("absent", nil) }
        guard let status = FileStatus.resolve(sidecar) else { return ("unreadable", "a symlink to nothing") }
        guard status.kind == .file else { return ("unreadable", "it is a \(status.kind.description)") }
        guard status.size <= maxSidecar else {
            return ("unreadable", "it is \(status.size) bytes, more than a sidecar's \(maxSidecar)")
        }
        let data: [UInt8]
        do {
            let fd = try FileCopy.openRegular(URL(fileURLWithPath: sidecar).resolvingSymlinksInPath().path)
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: maxSidecar + 1)
            var count = 0
            while count < buffer.count {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
                if n < 0, errno == EINTR { continue }
                if n < 0 { throw USMError.unreadable(path: sidecar, reason: errnoDescription()) }
                if n == 0 { break }
                count += n
            }
            guard count <= maxSidecar else { return ("unreadable", "it holds more than \(maxSidecar) bytes") }
            data = Array(buffer.prefix(count))
        } catch let error as USMError {
            // Not a regular file (replaced since the look above): not a sidecar. An I/O error
            // reading one is an I/O error (74), not a difference in the bundle.
            guard case .wrongKind = error else { throw error }
            return ("unreadable", error.message)
        }
        guard let text = String(validating: data, as: UTF8.self) else { return ("unreadable", "it is not UTF-8 text") }
        let expected =
            text.split(whereSeparator: { $0 == " " || $0 == "\n" }).first.map(String.init)?.lowercased() ?? ""
        return (try FileCopy.sha256(of: archive.path).sha256 == expected ? "ok" : "mismatch", nil)
    }
}
