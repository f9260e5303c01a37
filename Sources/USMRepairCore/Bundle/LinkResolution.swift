/// Where a symlink really leads, judged the way the kernel will follow it: component by
/// component from the link's folder, every symlink met on the way replaced by its own target (so
/// `e -> d/../../x` with `d -> ../..` is seen to leave, where reading the text alone would not).
/// `archive` resolves against the real tree, `restore` and `bundle verify` against the bundle's own
/// entries, before anything is created.
enum LinkResolution {
    /// What a link's resolution found.
    enum Outcome: Equatable {
        /// It stays inside the root (it may name something that does not exist).
        case inside
        /// It leaves the root, is absolute, or is empty.
        case outside
        /// It passes through more than `maxHops` links (a loop, or a chain too long to trust).
        case tooManyLinks
    }

    /// Links followed before giving up (Linux's own limit is 40).
    static let maxHops = 40

    /// Resolves the link at `link` (path components below the root, the link's own name last)
    /// whose text is `target`. `readLink` returns the target text of the item at the given
    /// components below the root when that item is a symlink, nil otherwise.
    static func resolve(link: [String], target: String, readLink: ([String]) -> String?) -> Outcome {
        guard !target.isEmpty, !FileSystemPath.isAbsolute(target) else { return .outside }
        var resolved = Array(link.dropLast())
        var pending = Array(components(target).reversed())
        var hops = 0
        while let part = pending.popLast() {
            if part == "." { continue }
            if part == ".." {
                if resolved.isEmpty { return .outside }
                resolved.removeLast()
                continue
            }
            resolved.append(part)
            if let next = readLink(resolved) {
                hops += 1
                guard hops <= maxHops else { return .tooManyLinks }
                guard !next.isEmpty, !FileSystemPath.isAbsolute(next) else { return .outside }
                resolved.removeLast()
                pending += components(next).reversed()
            }
        }
        return .inside
    }

    static func components(_ path: String) -> [String] {
        FileSystemPath.components(path)
    }
}
