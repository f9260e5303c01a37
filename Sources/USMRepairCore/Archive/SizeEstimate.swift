import CArchive
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The libarchive this binary runs with.
enum ArchiveVersion {
    static var text: String { String(cString: usm_archive_version()) }
}

/// Estimates a bundle's compressed size before writing it, from three small archives written
/// with the bundle's own format and codec: the manifest (its first MiB), the headers of the first
/// entries (their real names, kinds and modes, no content), and the first MiB of up to eight of
/// the largest files. Each part's measured cost, less that of an empty archive, is scaled to the
/// whole. A small bundle is measured almost entirely, so the estimate is close; a large one is
/// extrapolated from samples.
enum SizeEstimate {
    static let sampleBytes = 1 << 20
    static let samples = 8
    /// Entries whose headers are measured.
    static let headerSamples = 256

    static func estimate(
        catalog: BundleCatalog, manifest: URL, total: Int64, entries: Int, format: ArchiveFormat, scratch: URL
    ) throws -> Int64 {
        let empty = try measure(format: format, scratch: scratch) { _ in }

        // The manifest.
        let manifestSize = FileStatus.lookup(manifest.path)?.size ?? 0
        let manifestSample = try readPrefix(manifest.path, Int(min(manifestSize, Int64(sampleBytes))))
        let manifestCost = try measure(format: format, scratch: scratch) { writer in
            try writer.addData(BundleManifest.entryName, manifestSample, mode: 0o644, mtime: FileTime.now)
        } - empty
        let manifestEstimate = manifestSample.isEmpty ? 0 : Double(manifestCost) * Double(manifestSize) / Double(manifestSample.count)

        // Headers: the first entries as they are, without content.
        var headerEntries = 0
        let headerCost = try measure(format: format, scratch: scratch) { writer in
            try catalog.forEach(pageSize: headerSamples) { page in
                guard headerEntries < headerSamples else { return }
                for entry in page.prefix(headerSamples - headerEntries) {
                    switch entry.kind {
                    case "directory": try writer.addDirectory(entry.path, mode: entry.status.mode, mtime: entry.status.mtime)
                    case "symlink": try writer.addSymlink(entry.path, target: entry.linkTarget ?? "", mtime: entry.status.mtime)
                    default: try writer.addData(entry.path, Data(), mode: entry.status.mode, mtime: entry.status.mtime)
                    }
                    headerEntries += 1
                }
            }
        } - empty
        let headerEstimate = headerEntries == 0 ? 0 : Double(headerCost) * Double(entries) / Double(headerEntries)

        // Content: the start of the largest files.
        var sampled: Int64 = 0
        let chosen = try catalog.largestFiles(samples)
        let contentCost = try measure(format: format, scratch: scratch) { writer in
            for (i, (path, size)) in chosen.enumerated() {
                let data = try readPrefix(path, Int(min(size, Int64(sampleBytes))))
                try writer.addData("sample\(i)", data, mode: 0o644, mtime: FileTime(seconds: 0, nanoseconds: 0))
                sampled += Int64(data.count)
            }
        } - empty
        // Each sample carries a header of its own, measured above per entry.
        let perHeader = headerEntries == 0 ? 0 : Double(headerCost) / Double(headerEntries)
        let contentOnly = max(0, Double(contentCost) - perHeader * Double(chosen.count))
        let contentEstimate = sampled == 0 ? 0 : min(1.05, contentOnly / Double(sampled)) * Double(total)

        return Int64(Double(empty) + manifestEstimate + headerEstimate + contentEstimate)
    }

    /// The size of an archive holding what `body` adds.
    private static func measure(format: ArchiveFormat, scratch: URL, _ body: (ArchiveWriter) throws -> Void) throws -> Int64 {
        let sample = scratch.appendingPathComponent("estimate-\(UUID().uuidString)\(format.fileExtension)")
        defer { _ = FileSystemPath.withCString(sample.path) { unlink($0) } }
        let writer = try ArchiveWriter(path: sample.path, format: format, limit: nil, threads: 1)
        try body(writer)
        return try writer.finish().bytes
    }

    private static func readPrefix(_ path: String, _ count: Int) throws -> Data {
        var data = Data()
        guard count > 0 else { return data }
        _ = try? FileCopy.readBlocks(path) { block in
            guard data.count < count else { throw CancellationError() }
            data.append(contentsOf: block.prefix(count - data.count))
        }
        return data
    }
}
