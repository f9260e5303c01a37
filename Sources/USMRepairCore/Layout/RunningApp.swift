import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The processes running a Mac app, found by its bundle ID: a process whose executable lies in an
/// app bundle (`<Name>.app/Contents/MacOS/<exe>`) whose `Contents/Info.plist` names that bundle ID.
/// A changing command refuses to work on a Mac app's folders in place while it runs: the app
/// holds its stores open, rewrites its preferences and markers, and would undo or break the change.
/// Processes are listed through `/proc/<pid>/exe` on Linux and `proc_listallpids`/`proc_pidpath`
/// on macOS; processes of other users that cannot be looked at are skipped.
public enum RunningApp {
    /// One process running the app.
    public struct Process: Sendable, Equatable {
        public let pid: Int32
        /// The executable's path.
        public let executable: String
    }

    /// The processes running the app `bundleID`.
    public static func find(bundleID: String) -> [Process] {
        var found: [Process] = []
        var cache: [String: String?] = [:]
        for (pid, path) in executables() {
            guard let bundle = appBundle(ofExecutable: path) else { continue }
            let id: String?
            if let known = cache[bundle] {
                id = known
            } else {
                id = bundleIdentifier(ofApp: bundle)
                cache[bundle] = id
            }
            if id == bundleID { found.append(Process(pid: pid, executable: path)) }
        }
        return found.sorted { $0.pid < $1.pid }
    }

    /// Refuses (exit 5, store in use) while the app runs.
    /// - Throws: `storeBusy` naming the executable and the process, asking to quit the app.
    public static func refuseWhileRunning(bundleID: String) throws {
        guard let process = find(bundleID: bundleID).first else { return }
        throw USMError.storeBusy(
            path: process.executable, reason: "the app \(bundleID) is running and holds its stores and preferences",
            pid: process.pid)
    }

    /// The app bundle (`…/<Name>.app`) an executable at `path` is the main program of, if any.
    static func appBundle(ofExecutable path: String) -> String? {
        let trimmed = path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
        let url = URL(fileURLWithPath: trimmed)
        let macOS = url.deletingLastPathComponent()
        let contents = macOS.deletingLastPathComponent()
        let bundle = contents.deletingLastPathComponent()
        guard macOS.lastPathComponent == "MacOS", contents.lastPathComponent == "Contents",
            bundle.pathExtension == "app"
        else { return nil }
        return bundle.path
    }

    /// `CFBundleIdentifier` of the app bundle at `path` (binary or XML `Contents/Info.plist`).
    static func bundleIdentifier(ofApp path: String) -> String? {
        let plist = URL(fileURLWithPath: path).appendingPathComponent("Contents/Info.plist")
        // Only a regular file is opened: a FIFO planted there would block for ever.
        guard let found = FileStatus.resolve(plist.path), found.kind == .file, found.size < 4 << 20,
            let data = try? Data(contentsOf: plist),
            let dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: nil))
                as? [String: Any]
        else { return nil }
        return dict["CFBundleIdentifier"] as? String
    }

    /// Every process's executable path that can be read.
    static func executables() -> [(Int32, String)] {
        #if canImport(Darwin)
            let capacity = Int(proc_listallpids(nil, 0)) + 64
            guard capacity > 64 else { return [] }
            var pids = [pid_t](repeating: 0, count: capacity)
            let count = pids.withUnsafeMutableBytes { proc_listallpids($0.baseAddress, Int32($0.count)) }
            var result: [(Int32, String)] = []
            // PROC_PIDPATHINFO_MAXSIZE is 4 * MAXPATHLEN.
            var buffer = [CChar](repeating: 0, count: 4 * 1024)
            for pid in pids.prefix(max(0, Int(count))) where pid > 0 {
                let length = proc_pidpath(pid, &buffer, UInt32(buffer.count))
                guard length > 0 else { continue }
                result.append((pid, String(cString: buffer)))
            }
            return result
        #else
            var result: [(Int32, String)] = []
            try? DirectoryListing.forEach("/proc") { name in
                guard let pid = Int32(name), pid > 0 else { return }
                if let path = try? DirectoryListing.linkTarget("/proc/\(name)/exe") { result.append((pid, path)) }
            }
            return result
        #endif
    }
}
