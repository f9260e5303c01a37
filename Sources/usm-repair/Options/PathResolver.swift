import Foundation

/// Turns a path as typed into a URL the way a shell user means it: `~` is the context's `HOME`, a
/// relative path lies in the context's current folder. Commands resolve every path flag through
/// the context's resolver, never through the process's current folder or home, so a command run
/// in process (tests) sees exactly the world it was given.
struct PathResolver {
    /// The folder relative paths start from.
    let currentDirectory: URL
    /// The home folder `~` stands for (nil: the process's).
    let home: String?

    /// The process's current folder and `HOME`.
    static func live(environment: [String: String]) -> PathResolver {
        PathResolver(
            currentDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true),
            home: environment["HOME"])
    }

    /// `path` expanded (`~`, `~/x`; not when `tilde` is false) and made absolute.
    func url(_ path: String, directory: Bool = false, tilde: Bool = true) -> URL {
        var expanded = path
        if !tilde || !path.hasPrefix("~") {
            // Taken as typed.
        } else if let home, path == "~" || path.hasPrefix("~/") {
            expanded = home + path.dropFirst()
        } else {
            expanded = (path as NSString).expandingTildeInPath
        }
        return URL(fileURLWithPath: expanded, isDirectory: directory, relativeTo: currentDirectory).absoluteURL
    }
}
