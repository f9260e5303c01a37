import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file time with nanoseconds, as archives, snapshots and the manifest keep it.
public struct FileTime: Sendable, Codable, Equatable, Hashable {
    public let seconds: Int64
    public let nanoseconds: Int32

    public init(seconds: Int64, nanoseconds: Int32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// The time as ISO 8601 UTC with nanoseconds, for people reading the manifest.
    /// (Built by hand from `gmtime_r`: a manifest formats one per file, and a date formatter per
    /// call costs more than the rest of the entry.)
    public var iso8601: String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(seconds).\(nanoseconds)" }
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(abs(value))
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(Int(parts.tm_year) + 1900, 4) + "-" + digits(Int(parts.tm_mon) + 1, 2) + "-"
            + digits(Int(parts.tm_mday), 2)
            + "T" + digits(Int(parts.tm_hour), 2) + ":" + digits(Int(parts.tm_min), 2) + ":"
            + digits(Int(parts.tm_sec), 2)
            + "." + digits(Int(nanoseconds), 9) + "Z"
    }

    /// Nanoseconds since 1970, exact.
    public var totalNanoseconds: Int64 { seconds * 1_000_000_000 + Int64(nanoseconds) }

    /// The time `nanos` nanoseconds after 1970 (negative values round towards the past).
    public init(totalNanoseconds nanos: Int64) {
        self.init(seconds: nanos.floorDiv(1_000_000_000), nanoseconds: Int32(nanos.floorMod(1_000_000_000)))
    }

    /// The current time.
    public static var now: FileTime {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return FileTime(seconds: Int64(spec.tv_sec), nanoseconds: Int32(spec.tv_nsec))
    }

    /// The UTC time as `yyyyMMdd'T'HHmmss'Z'`, for file names (bundles, snapshots).
    public var stamp: String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return f.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}

extension Int64 {
    /// Division rounding towards negative infinity.
    func floorDiv(_ d: Int64) -> Int64 { self >= 0 ? self / d : -((-self + d - 1) / d) }
    /// The remainder that goes with `floorDiv`, always in 0..<d.
    func floorMod(_ d: Int64) -> Int64 { self - floorDiv(d) * d }
}
