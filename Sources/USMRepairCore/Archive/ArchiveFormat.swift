import CArchive
import Foundation

/// The archive formats a bundle or snapshot can be written in.
public enum ArchiveFormat: String, Sendable, CaseIterable, Codable {
    /// POSIX pax tar compressed with Zstandard (the default: fast, small).
    case tarZstd = "tar.zst"
    /// pax tar with gzip, for tools without zstd.
    case tarGzip = "tar.gz"
    /// pax tar with xz, the smallest.
    case tarXz = "tar.xz"
    /// zip (deflate), for people who only have unzip.
    case zip

    /// The file-name extension, with its dot.
    public var fileExtension: String { "." + rawValue }

    /// The format whose extension `path` ends with, if any.
    public static func infer(from path: String) -> ArchiveFormat? {
        allCases.first { path.hasSuffix($0.fileExtension) }
    }

    /// Configures a libarchive write handle for this format.
    func configure(_ handle: OpaquePointer, threads: Int) -> Int32 {
        switch self {
        case .zip:
            return archive_write_set_format_zip(handle)
        case .tarZstd, .tarGzip, .tarXz:
            // pax keeps nanosecond mtimes, long paths and exact sizes; GNU tar and bsdtar both read it.
            var r = archive_write_set_format_pax_restricted(handle)
            guard r == ARCHIVE_OK else { return r }
            switch self {
            case .tarZstd:
                r = archive_write_add_filter_zstd(handle)
                if r == ARCHIVE_OK, threads > 1 {
                    // Older libarchive lacks the option; a single thread is then used (ARCHIVE_WARN/FAILED is not fatal here).
                    _ = archive_write_set_filter_option(handle, "zstd", "threads", String(threads))
                }
            case .tarGzip: r = archive_write_add_filter_gzip(handle)
            case .tarXz: r = archive_write_add_filter_xz(handle)
            case .zip: break
            }
            return r
        }
    }
}
