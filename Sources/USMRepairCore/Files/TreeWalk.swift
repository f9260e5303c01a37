import Foundation

/// Walks a folder without following symlinks, counting files and noting links that leave the root.
struct TreeWalk {
    private(set) var files = 0
    private(set) var bytes: Int64 = 0
    private(set) var escapes: [String] = []

    init(_ dir: URL, confinement: Confinement) {
        var stack = [dir]
        while let next = stack.popLast() {
            for name in TreeWalk.children(next, includeHidden: true) {
                let url = next.appendingPathComponent(name)
                guard let status = FileStatus.lookup(url.path) else { continue }
                switch status.kind {
                case .directory: stack.append(url)
                case .file:
                    files += 1
                    bytes += status.size
                case .symlink where !confinement.contains(url): escapes.append(url.path)
                default: continue
                }
            }
        }
    }

    /// Sorted entry names of a folder (hidden ones skipped unless asked, as USM's enumeration does).
    static func children(_ dir: URL, includeHidden: Bool = false) -> [String] {
        guard FileStatus.lookup(dir.path)?.kind == .directory,
              let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path)
        else { return [] }
        return names.filter { includeHidden || !$0.hasPrefix(".") }.sorted()
    }
}
