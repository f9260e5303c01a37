import Foundation

/// Keeps every path we touch inside the folder the user named. A symlink may live in a container
/// (we report it), but following one out of the container is refused.
public struct Confinement: Sendable {
    /// The folder everything must stay inside, with symlinks resolved.
    public let root: URL

    /// Confines to `root` (resolved once; a root that is itself a symlink is the user's choice).
    public init(root: URL) {
        self.root = root.standardizedFileURL.resolvingSymlinksInPath()
    }

    /// True when `url`, with every symlink resolved, still lies inside the root.
    public func contains(_ url: URL) -> Bool {
        Confinement.isInside(url.standardizedFileURL.resolvingSymlinksInPath().path, root.path)
    }

    /// True when `path` is `base` or lies below it, component-wise (no symlinks resolved).
    public static func isInside(_ path: String, _ base: String) -> Bool {
        FileSystemPath.isInside(path, base)
    }

    /// Throws `symlinkEscapes` when a path inside the root resolves to somewhere outside it.
    public func check(_ url: URL) throws {
        guard !contains(url) else { return }
        let target = url.standardizedFileURL.resolvingSymlinksInPath().path
        throw USMError.symlinkEscapes(path: url.path, target: target, root: root.path)
    }
}
