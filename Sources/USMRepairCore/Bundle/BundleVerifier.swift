import Crypto
import Foundation

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
    public let mismatches: [BundleMismatch]
    /// The `.sha256` sidecar: `ok`, `mismatch` or `absent`.
    public let sidecar: String
    /// True when every entry matches and the sidecar (if any) matches.
    public let ok: Bool
    /// 0 when everything matches, 1 otherwise.
    public let exitCode: Int32
    /// The exit code's name (`ok`, `problems-found`).
    public let exitStatus: String

    init(archive: String, archiveFormat: String?, content: String?, entries: Int, matched: Int,
         mismatches: [BundleMismatch], sidecar: String) {
        self.archive = archive
        self.archiveFormat = archiveFormat
        self.content = content
        self.entries = entries
        self.matched = matched
        self.mismatches = mismatches
        self.sidecar = sidecar
        ok = mismatches.isEmpty
        let status: ExitStatus = ok ? .ok : .problemsFound
        exitCode = status.rawValue
        exitStatus = status.name
    }
}

/// Checks every entry of a bundle against its manifest: type, size, SHA-256, mode and time.
public enum BundleVerifier {
    /// Verifies `archive`.
    /// - Throws: `notFound`, `brokenArchive` (truncated, corrupt), `notABundle`, `hostileArchive`.
    public static func verify(_ archive: URL) throws -> VerificationReport {
        var mismatches: [BundleMismatch] = []
        var matched = 0
        let scanner = BundleScanner(archive: archive)
        var outcome = try scanner.scan { entry, record, reader, manifest in
            guard let record else { return }
            let zip = manifest.archiveFormat == ArchiveFormat.zip.rawValue
            let before = mismatches.count
            mismatches += compare(entry, record, reader: reader, zip: zip, archive: archive)
            if mismatches.count == before { matched += 1 }
        }
        outcome.mismatches += mismatches
        let sidecar = try checkSidecar(archive)
        if sidecar == "mismatch" {
            outcome.mismatches.append(BundleMismatch(path: archive.lastPathComponent + ".sha256", problem: "the archive's SHA-256 differs from its sidecar"))
        }
        return VerificationReport(
            archive: archive.path, archiveFormat: outcome.manifest.archiveFormat, content: outcome.manifest.content,
            entries: outcome.entries, matched: matched, mismatches: outcome.mismatches.sorted { $0.path < $1.path }, sidecar: sidecar)
    }

    /// Differences of one entry from its record; reads the entry's data.
    static func compare(_ entry: ArchiveReader.Entry, _ record: BundleFile, reader: ArchiveReader, zip: Bool, archive: URL) -> [BundleMismatch] {
        var found: [BundleMismatch] = []
        func note(_ text: String) { found.append(BundleMismatch(path: record.path, problem: text)) }
        let kind = entry.kind == .file ? "file" : entry.kind == .directory ? "directory" : entry.kind == .symlink ? "symlink" : entry.kind.rawValue
        guard kind == record.kind else {
            note("is a \(kind), the manifest says \(record.kind)")
            return found
        }
        switch entry.kind {
        case .file:
            var hasher = SHA256()
            do {
                let size = try reader.readData(limit: record.size) { hasher.update(bufferPointer: $0) }
                if size != record.size { note("holds \(size) bytes, the manifest says \(record.size)") }
                let digest = hasher.finalize().hex
                if digest != record.sha256 { note("SHA-256 \(digest) differs from the manifest's \(record.sha256 ?? "none")") }
            } catch let error as USMError {
                note(error.message)
            } catch {
                note("\(error)")
            }
        case .symlink:
            if entry.linkTarget != record.linkTarget { note("points at \(entry.linkTarget ?? "nothing"), the manifest says \(record.linkTarget ?? "nothing")") }
        default:
            break
        }
        if entry.kind != .symlink, entry.mode & 0o7777 != record.modeBits & 0o7777 {
            note(String(format: "mode %04o differs from the manifest's %@", entry.mode & 0o7777, record.mode))
        }
        // zip keeps times to the second (DOS times to two); tar keeps at least whole seconds.
        let delta = abs(entry.mtime.seconds - record.fileTime.seconds)
        if delta > (zip ? 2 : 0) { note("modified time \(entry.mtime.iso8601) differs from the manifest's \(record.mtime)") }
        return found
    }

    /// `ok`, `mismatch` or `absent` for `ARCHIVE.sha256`.
    static func checkSidecar(_ archive: URL) throws -> String {
        let sidecar = archive.path + ".sha256"
        guard FileStatus.resolve(sidecar)?.kind == .file, let text = try? String(contentsOfFile: sidecar, encoding: .utf8) else { return "absent" }
        let expected = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).first.map(String.init)?.lowercased() ?? ""
        return try FileCopy.sha256(of: archive.path).sha256 == expected ? "ok" : "mismatch"
    }
}
