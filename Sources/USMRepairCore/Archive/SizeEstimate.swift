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

/// Estimates a bundle's compressed size before writing it: the first MiB of up to eight of the
/// largest files is compressed with the bundle's own codec, and the ratio applied to the whole.
enum SizeEstimate {
    static let sampleBytes = 1 << 20
    static let samples = 8
    /// Archive headers and padding, per entry.
    static let perEntry: Int64 = 1024

    static func estimate(files: [(URL, Int64)], total: Int64, entries: Int, format: ArchiveFormat, scratch: URL) throws -> Int64 {
        let chosen = files.sorted { $0.1 > $1.1 }.prefix(samples).filter { $0.1 > 0 }
        var ratio = 1.0
        if !chosen.isEmpty {
            let sample = scratch.appendingPathComponent("estimate-\(UUID().uuidString)\(format.fileExtension)")
            defer { try? FileManager.default.removeItem(at: sample) }
            let writer = try ArchiveWriter(path: sample.path, format: format, limit: nil, threads: 1)
            var sampled: Int64 = 0
            for (i, (url, size)) in chosen.enumerated() {
                let take = min(size, Int64(sampleBytes))
                let handle = try FileHandle(forReadingFrom: url)
                let data = try handle.read(upToCount: Int(take)) ?? Data()
                try handle.close()
                try writer.addData("sample\(i)", data, mode: 0o644, mtime: FileTime(seconds: 0, nanoseconds: 0))
                sampled += Int64(data.count)
            }
            let written = try writer.finish()
            if sampled > 0 { ratio = min(1.05, Double(written.bytes) / Double(sampled)) }
        }
        return Int64(Double(total) * ratio) + Int64(entries) * perEntry + 64 * 1024
    }
}
