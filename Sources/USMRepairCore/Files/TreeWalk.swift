import Foundation

/// Walks a folder without following symlinks, counting files, noting links that leave the root
/// and the folders that could not be listed (an unreadable folder is reported, never taken for an
/// empty one).
struct TreeWalk {
    private(set) var files = 0
    private(set) var bytes: Int64 = 0
    private(set) var escapes: [String] = []
    /// What could not be listed or looked at, with the reason.
    private(set) var unreadable: [(path: String, reason: String)] = []

    init(_ dir: URL, confinement: Confinement) {
        var files = 0
        var bytes: Int64 = 0
        var escapes: [String] = []
        var unreadable: [(path: String, reason: String)] = []
        var stack = [dir.path]
        while let next = stack.popLast() {
            do {
                try DirectoryListing.forEach(next) { name in
                    let path = next + "/" + name
                    let status: FileStatus
                    do {
                        guard let found = try FileStatus.examine(path) else { return }
                        status = found
                    } catch let error as USMError {
                        unreadable.append((path, error.message))
                        return
                    }
                    switch status.kind {
                    case .directory: stack.append(path)
                    case .file:
                        files += 1
                        bytes += status.size
                    case .symlink where !confinement.contains(URL(fileURLWithPath: path)): escapes.append(path)
                    default: return
                    }
                }
            } catch let error as USMError {
                unreadable.append((next, error.message))
            } catch {
                unreadable.append((next, "\(error)"))
            }
        }
        self.files = files
        self.bytes = bytes
        self.escapes = escapes
        self.unreadable = unreadable
    }

    /// Sorted entry names of a folder (hidden ones skipped unless asked, as USM's enumeration
    /// does, and names that are not their bytes, which no URL can address); none when it is not a
    /// folder.
    /// - Throws: `unreadable` when it is a folder that cannot be listed.
    static func children(_ dir: URL, includeHidden: Bool = false) throws -> [String] {
        try children(dir, includeHidden: includeHidden, undecodable: { _ in })
    }

    /// `children`, calling `undecodable` with the path of each name left out for not being its bytes.
    static func children(_ dir: URL, includeHidden: Bool, undecodable: (String) -> Void) throws -> [String] {
        guard FileStatus.lookup(dir.path)?.kind == .directory else { return [] }
        return try DirectoryListing.names(dir.path).filter { name in
            guard includeHidden || !name.hasPrefix(".") else { return false }
            guard FileSystemPath.isUndecodable(name) else { return true }
            undecodable(dir.path + "/" + name)
            return false
        }
    }
}

/// Folders a search could not list, collected to be reported with the layout.
final class UnreadableFolders {
    private(set) var items: [(path: String, reason: String)] = []
    /// Names left out for not being their bytes (`FileSystemPath.isUndecodable`), by path.
    private(set) var undecodable: [String] = []

    /// The folder's children, or none (noted) when it cannot be listed.
    func children(_ dir: URL, includeHidden: Bool = false) -> [String] {
        do {
            return try TreeWalk.children(dir, includeHidden: includeHidden) { self.undecodable.append($0) }
        } catch let error as USMError {
            items.append((dir.path, error.message))
        } catch {
            items.append((dir.path, "\(error)"))
        }
        return []
    }

    func note(_ path: String, _ reason: String) { items.append((path, reason)) }
}
