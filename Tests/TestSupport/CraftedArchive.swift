import CArchive
import Crypto
import Foundation

/// Writes archives by hand, hostile ones included, to prove `restore` and `bundle verify` refuse
/// them: any path, kind, link target, declared size and manifest the test asks for.
public enum CraftedArchive {
    /// One entry to write.
    public struct Entry {
        public enum Kind { case file, directory, symlink, hardlink, characterDevice, fifo }
        public var path: String
        public var kind: Kind
        public var data: Data
        public var linkTarget: String?
        /// The size the header declares, when it should differ from the data.
        public var declaredSize: Int64?
        public var mode: UInt32
        public var mtime: Int64
        public var mtimeNanoseconds: Int

        public init(
            _ path: String, _ kind: Kind = .file, data: Data = Data(), linkTarget: String? = nil,
            declaredSize: Int64? = nil, mode: UInt32 = 0o644, mtime: Int64 = 1_700_000_000, mtimeNanoseconds: Int = 0
        ) {
            self.path = path
            self.kind = kind
            self.data = data
            self.linkTarget = linkTarget
            self.declaredSize = declaredSize
            self.mode = mode
            self.mtime = mtime
            self.mtimeNanoseconds = mtimeNanoseconds
        }
    }

    /// A manifest listing `entries` as a bundle would (roots from their first path component).
    public static func manifest(
        for entries: [Entry], roots: [String]? = nil, format: String = "usm-repair-bundle",
        sizeOverride: [String: Int64] = [:]
    ) -> Data {
        let files: [[String: Any]] = entries.map { e in
            var record: [String: Any] = [
                "kind": e.kind == .directory ? "directory" : e.kind == .symlink ? "symlink" : "file",
                "path": e.path.hasSuffix("/") ? String(e.path.dropLast()) : e.path,
                "size": sizeOverride[e.path] ?? Int64(e.kind == .file ? e.data.count : 0),
                "mode": String(format: "%04o", e.mode), "mtime": "x", "mtimeNanos": e.mtime * 1_000_000_000,
            ]
            if e.kind == .file {
                record["sha256"] = SHA256.hash(data: e.data).map { String(format: "%02x", $0) }.joined()
            }
            if let t = e.linkTarget { record["linkTarget"] = t }
            return record
        }
        let rootNames =
            roots ?? Array(Set(entries.compactMap { $0.path.split(separator: "/").first.map(String.init) })).sorted()
        let manifest: [String: Any] = [
            "format": format, "formatVersion": 1, "archiveFormat": "tar.gz", "content": "full",
            "roots": rootNames.map { ["name": $0, "source": "/somewhere/\($0)"] }, "files": files,
        ]
        return try! JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys])
    }

    /// Writes a pax tar holding `entries` in order (the manifest is just another entry), gzip'd,
    /// or zstd'd as bundles are.
    public static func write(_ entries: [Entry], to url: URL, zstd: Bool = false) throws {
        guard let a = archive_write_new() else { throw CocoaError(.fileWriteUnknown) }
        defer { archive_write_free(a) }
        archive_write_set_format_pax_restricted(a)
        // Names as raw bytes (no locale conversion), so tests can write any name.
        archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY")
        if zstd { archive_write_add_filter_zstd(a) } else { archive_write_add_filter_gzip(a) }
        guard archive_write_open_filename(a, url.path) == ARCHIVE_OK else { throw CocoaError(.fileWriteUnknown) }
        for e in entries {
            let entry = archive_entry_new()
            defer { archive_entry_free(entry) }
            archive_entry_set_pathname(entry, e.path)
            archive_entry_set_mtime(entry, time_t(e.mtime), e.mtimeNanoseconds)
            archive_entry_set_perm(entry, mode_t(e.mode))
            switch e.kind {
            case .file:
                archive_entry_set_filetype(entry, USM_AE_IFREG)
                archive_entry_set_size(entry, la_int64_t(e.declaredSize ?? Int64(e.data.count)))
            case .directory:
                archive_entry_set_filetype(entry, USM_AE_IFDIR)
            case .symlink:
                archive_entry_set_filetype(entry, USM_AE_IFLNK)
                archive_entry_set_symlink(entry, e.linkTarget)
            case .hardlink:
                archive_entry_set_filetype(entry, USM_AE_IFREG)
                archive_entry_set_hardlink(entry, e.linkTarget)
                archive_entry_set_size(entry, 0)
            case .characterDevice:
                archive_entry_set_filetype(entry, 0o020000)
                archive_entry_set_rdev(entry, 0x0501)
            case .fifo:
                archive_entry_set_filetype(entry, 0o010000)
            }
            archive_write_header(a, entry)
            if e.kind == .file, !e.data.isEmpty {
                e.data.withUnsafeBytes { raw in _ = archive_write_data(a, raw.baseAddress, raw.count) }
            }
        }
        archive_write_close(a)
    }
}
