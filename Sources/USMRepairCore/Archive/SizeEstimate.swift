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

/// Estimates a bundle's compressed size before writing it, from small archives written with the
/// bundle's own format and codec: the manifest (its first MiB), the headers of the first entries
/// (their real names, kinds and modes, no content), the first MiB of the eight largest files, and
/// a spread of up to 256 other files (64 KiB of each). Each part's measured cost, less that of an
/// empty archive, is scaled to the whole. A small bundle is measured almost entirely, so the
/// estimate is close; a large one is extrapolated from samples.
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
        let manifestCost =
            try measure(format: format, scratch: scratch) { writer in
                try writer.addData(BundleManifest.entryName, manifestSample, mode: 0o644, mtime: FileTime.now)
            } - empty
        let manifestEstimate =
            manifestSample.isEmpty ? 0 : Double(manifestCost) * Double(manifestSize) / Double(manifestSample.count)

        // Headers: the first entries as they are, without content.
        var headerEntries = 0
        let headerCost =
            try measure(format: format, scratch: scratch) { writer in
                try catalog.forEach(pageSize: headerSamples) { page in
                    guard headerEntries < headerSamples else { return }
                    for entry in page.prefix(headerSamples - headerEntries) {
                        switch entry.kind {
                        case "directory":
                            try writer.addDirectory(entry.path, mode: entry.status.mode, mtime: entry.status.mtime)
                        case "symlink":
                            try writer.addSymlink(entry.path, target: entry.linkTarget ?? "", mtime: entry.status.mtime)
                        default:
                            try writer.addData(entry.path, Data(), mode: entry.status.mode, mtime: entry.status.mtime)
                        }
                        headerEntries += 1
                    }
                }
            } - empty
        let headerEstimate = headerEntries == 0 ? 0 : Double(headerCost) * Double(entries) / Double(headerEntries)

        // Content, in two classes measured apart: the largest files (the start of each), and a
        // spread of the others (whole, up to a cap), since small files (external data, logs) often
        // compress nothing like large stores do.
        let perHeader = headerEntries == 0 ? 0 : Double(headerCost) / Double(headerEntries)
        let largest = try catalog.largestFiles(samples)
        let largestTotal = largest.reduce(Int64(0)) { $0 + $1.1 }
        let largestPaths = Set(largest.map { $0.0.pathKey })
        let largeRatio = try ratio(
            of: largest.map { ($0.0, min($0.1, Int64(sampleBytes))) }, format: format, scratch: scratch,
            empty: empty, perHeader: perHeader)

        var others: [(String, Int64)] = []
        var otherCount = 0
        try catalog.forEach(where: "kind = 'file' AND size > 0") { page in
            for entry in page {
                guard let path = entry.readPath, !largestPaths.contains(path.pathKey) else { continue }
                otherCount += 1
                others.append((path, min(entry.size, Int64(smallSampleBytes))))
            }
            // Keep an even spread without holding every path: thin out when the list grows.
            if others.count > 2 * smallSamples { others = stride(from: 0, to: others.count, by: 2).map { others[$0] } }
        }
        if others.count > smallSamples {
            others = stride(from: 0, to: others.count, by: others.count / smallSamples + 1).map { others[$0] }
        }
        let smallRatio = try ratio(of: others, format: format, scratch: scratch, empty: empty, perHeader: perHeader)
        let contentEstimate = largeRatio * Double(largestTotal) + smallRatio * Double(max(0, total - largestTotal))

        // Samples compress a little better than the whole (the start of a store, independent
        // small archives): a margin keeps the estimate from falling short of the real size.
        // (xz's large window compresses the whole better than its samples: no margin there.)
        return Int64(
            (Double(empty) + manifestEstimate + headerEstimate + contentEstimate) * (format == .tarXz ? 1 : margin))
    }

    /// What the estimate adds for what samples miss.
    static let margin = 1.08

    /// Small files sampled, and the bytes taken from each.
    static let smallSamples = 256
    static let smallSampleBytes = 64 << 10

    /// Compressed bytes per content byte for the first `count` bytes of each file (headers and
    /// the empty archive taken off); 1 when nothing could be sampled.
    private static func ratio(
        of files: [(String, Int64)], format: ArchiveFormat, scratch: URL, empty: Int64, perHeader: Double
    ) throws -> Double {
        var sampled: Int64 = 0
        let cost =
            try measure(format: format, scratch: scratch) { writer in
                for (i, (path, count)) in files.enumerated() {
                    let data = try readPrefix(path, Int(count))
                    try writer.addData("sample\(i)", data, mode: 0o644, mtime: FileTime(seconds: 0, nanoseconds: 0))
                    sampled += Int64(data.count)
                }
            } - empty
        guard sampled > 0 else { return 1 }
        return min(1.05, max(0, Double(cost) - perHeader * Double(files.count)) / Double(sampled))
    }

    /// The size of an archive holding what `body` adds.
    private static func measure(format: ArchiveFormat, scratch: URL, _ body: (ArchiveWriter) throws -> Void) throws
        -> Int64
    {
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
