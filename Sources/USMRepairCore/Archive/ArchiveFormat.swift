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
        let lower = path.lowercased()
        return allCases.first { lower.hasSuffix($0.fileExtension) }
    }

    /// Extensions that name an archive or compressed file of some kind (ours or not).
    static let archiveExtensions = [
        ".tar.zst", ".tar.gz", ".tar.xz", ".tar.bz2", ".tar.lz", ".tar.lzma", ".tar.lz4", ".tzst", ".tgz", ".txz",
        ".tbz",
        ".tbz2", ".tar", ".zip", ".rar", ".7z", ".zst", ".gz", ".xz", ".bz2", ".lz", ".lzma", ".lz4", ".z", ".cpio",
        ".iso",
        ".cab", ".ar", ".jar", ".dmg", ".sit", ".sitx", ".arj", ".lha", ".lzh", ".war",
    ]

    /// The format to write: `explicit` (`--format`) or the one `output`'s name says; the default
    /// tar.zst when neither is given. A name that says another archive format than the one written
    /// (`-o x.zip --format tar.gz`, `-o foo.rar`) is refused rather than written misnamed.
    /// - Throws: `usage` with what to do.
    public static func choose(explicit: ArchiveFormat?, output: String?) throws -> ArchiveFormat {
        guard let output else { return explicit ?? .tarZstd }
        let name = (output as NSString).lastPathComponent
        let named = infer(from: name)
        let lower = name.lowercased()
        let formats = allCases.map(\.rawValue).joined(separator: ", ")
        if let named {
            if let explicit, explicit != named {
                throw USMError.usage(
                    "--output \(name) names a \(named.rawValue) archive but --format is \(explicit.rawValue); make them agree (e.g. name it \(name.dropLast(named.fileExtension.count))\(explicit.fileExtension))"
                )
            }
            return named
        }
        if let other = archiveExtensions.first(where: { lower.hasSuffix($0) }) {
            throw USMError.usage(
                "--output \(name) ends in \(other), a format usm-repair does not write; name it with one of its formats (\(formats))"
            )
        }
        guard let explicit else {
            throw USMError.usage(
                "--output \(name) does not say which format to write; end it with one of \(formats) or pass --format")
        }
        return explicit
    }

    /// Configures a libarchive write handle for this format. tar.zst is written as plain pax here:
    /// `ArchiveWriter` compresses it itself (`ParallelZstd`), on every core.
    func configure(_ handle: OpaquePointer) -> Int32 {
        guard self != .zip else { return archive_write_set_format_zip(handle) }
        // pax keeps nanosecond mtimes, long paths and exact sizes; GNU tar and bsdtar both read it.
        let r = archive_write_set_format_pax_restricted(handle)
        guard r == ARCHIVE_OK else { return r }
        switch self {
        case .tarGzip: return archive_write_add_filter_gzip(handle)
        case .tarXz: return archive_write_add_filter_xz(handle)
        case .tarZstd, .zip: return r
        }
    }
}
