import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The owner and group of a file system object, and the rule every file usm-repair installs
/// follows: it belongs to whoever owned what it replaces, or (a new item) whoever owns the folder
/// it goes into. Run with `sudo` on a user's folders, usm-repair would otherwise leave root-owned
/// stores, preferences and markers the app, running as the user, cannot open.
public struct Ownership: Sendable, Equatable {
    public let uid: UInt32
    public let gid: UInt32

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
    }

    /// The owner of `path` itself (a symlink's own, not its target's); nil when nothing is there.
    public static func of(_ path: String) -> Ownership? {
        var st = stat()
        guard FileSystemPath.withCString(path, { lstat($0, &st) }) == 0 else { return nil }
        return Ownership(uid: UInt32(st.st_uid), gid: UInt32(st.st_gid))
    }

    /// Gives `path` and, for a folder, everything below it (links themselves, never followed) this
    /// owner. Only a privileged process can give a file away; an unprivileged one can at most change
    /// the group to one it belongs to, and its files stay its own (the same user as the app's):
    /// a refusal then is not an error. A privileged run that cannot (a file system without owners)
    /// leaves the items as they are.
    /// - Returns: the items whose owner could not be set, when the process is privileged.
    @discardableResult
    public func apply(toTree path: String) -> [String] {
        var failed: [String] = []
        var stack = [path]
        while let next = stack.popLast() {
            guard let status = FileStatus.lookup(next) else { continue }
            if let current = Ownership.of(next), current != self {
                let changed = FileSystemPath.withCString(next) { lchown($0, uid_t(uid), gid_t(gid)) }
                if changed != 0, geteuid() == 0 { failed.append(next) }
            }
            if status.kind == .directory {
                for name in (try? DirectoryListing.names(next)) ?? [] { stack.append(next + "/" + name) }
            }
        }
        return failed
    }
}
