import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where tests put their folders, and the `TMPDIR` of the runs they start (in process or not).
///
/// `USM_TEST_TMPDIR` when set; else, on Linux, `/dev/shm` when it is a tmpfs with at least 4 GiB
/// free; else the system's temporary folder. Every changing command fsyncs what it writes (the
/// journal before each step, snapshots, installed files): on a disk the whole suite took 223 s, on
/// `/dev/shm` 197 s (2026-11-26, 2 cores), and a kill test needs no fsync (a killed process leaves
/// the page cache as it was). Tests that need a small or full file system mount their own.
public enum TestTemporary {
    public static let base: URL = {
        let environment = ProcessInfo.processInfo.environment
        if let chosen = environment["USM_TEST_TMPDIR"], !chosen.isEmpty {
            return URL(fileURLWithPath: chosen, isDirectory: true)
        }
        #if os(Linux)
            let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
            let isTmpfs = mounts.split(separator: "\n").contains {
                let fields = $0.split(separator: " ")
                return fields.count > 2 && fields[1] == "/dev/shm" && fields[2] == "tmpfs"
            }
            var info = statvfs()
            if isTmpfs, statvfs("/dev/shm", &info) == 0,
                UInt64(info.f_bavail) * UInt64(info.f_frsize) >= 4 << 30, access("/dev/shm", W_OK) == 0
            {
                return URL(fileURLWithPath: "/dev/shm", isDirectory: true)
            }
        #endif
        return FileManager.default.temporaryDirectory
    }()

    /// A new path below `base` (not created).
    public static func path(_ prefix: String) -> URL {
        base.appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
    }
}
