import Foundation

/// macOS serves an app's preferences from `cfprefsd`, which caches each domain: a plist rewritten
/// behind its back can be overwritten by the cached copy the next time anything writes that
/// domain, and the app may be handed the old values. So on macOS, after usm-repair has installed a
/// preferences plist of a live domain (the user's `~/Library/Preferences/<id>.plist`, or a
/// sandbox's `~/Library/Containers/<id>/Data/Library/Preferences/<id>.plist`), the file's content
/// is handed to `cfprefsd` through `defaults import <domain path> <copy>`, which replaces the
/// cached domain with exactly what was installed (and writes the same keys back). The install
/// itself stays the journaled, atomic rename with its snapshot, on every system.
///
/// On Linux there is no `cfprefsd`: the file rewrite is the whole change, and nothing is run.
public enum PreferencesDaemon {
    /// True when `path` is a preferences plist `cfprefsd` serves for the user whose home is `home`.
    public static func isLive(_ path: String, home: String) -> Bool {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        guard url.pathExtension == "plist" else { return false }
        let folder = url.deletingLastPathComponent().path
        let library = URL(fileURLWithPath: home, isDirectory: true).standardizedFileURL.appendingPathComponent(
            "Library"
        ).path
        if folder == library + "/Preferences" { return true }
        // ~/Library/Containers/<id>/Data/Library/Preferences
        let parts = folder.dropFirst(library.count).split(separator: "/")
        return folder.hasPrefix(library + "/Containers/") && parts.count == 5 && parts[0] == "Containers"
            && parts[2] == "Data"
            && parts[3] == "Library" && parts[4] == "Preferences"
    }

    /// The domain `defaults` names a plist by: its path without `.plist`.
    public static func domain(of path: String) -> String {
        path.hasSuffix(".plist") ? String(path.dropLast(".plist".count)) : path
    }

    /// After a plist was installed at `path`: on macOS, when it is a live domain, hands its content
    /// to `cfprefsd`; returns a note when that could not be done (the file is right, the cache may
    /// not be). Nil when nothing had to be done or it was done.
    public static func adopt(_ path: String) -> String? {
        #if canImport(Darwin)
            guard isLive(path, home: NSHomeDirectory()) else { return nil }
            let failure =
                "the preferences file \(path) is written, but cfprefsd may still hold the old values: log out and in (or run `killall cfprefsd`) before starting the app"
            guard let scratch = try? TemporaryDirectory(prefix: "usm-repair-defaults") else { return failure }
            defer { scratch.remove() }
            let copy = scratch.url.appendingPathComponent("import.plist")
            do { try FileManager.default.copyItem(at: URL(fileURLWithPath: path), to: copy) } catch { return failure }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/defaults")
            process.arguments = ["import", domain(of: path), copy.path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do { try process.run() } catch { return failure }
            process.waitUntilExit()
            return process.terminationStatus == 0 ? nil : failure
        #else
            return nil
        #endif
    }
}
