import Foundation

/// What a plan may name, checked before any of it is obeyed: a plan read back from a layout (by
/// `recover`) is outside input, and even a plan made here is checked before it runs.
///
/// 1. its `id` is a plain name (and the name of the folder it was found in);
/// 2. its folders (roots) are among the folders the user named, each with one of our private
///    folder names;
/// 3. every path a step names is absolute, has no `.`, `..` or empty component, and lies inside
///    one of those folders; what a step moves aside or stages lies inside that operation's own
///    private folder; nothing a step changes lies inside a private folder of ours;
/// 4. at run time, before each move, every folder between a root and the path is a real folder,
///    not a symlink (`linkFree`), so no move can reach through a link out of the layout.
public enum PlanCheck {
    /// The private folder names an operation may use.
    static let privateFolders: Set<String> = [".usm-repair", ".usm-repair.nosync"]

    /// True for a plan id: 1 to 64 characters of `a-z`, `0-9` and `-`, starting with a letter or digit.
    public static func isPlainID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }
    }

    /// True for an absolute path without `.`, `..` or empty components.
    static func isClean(_ path: String) -> Bool {
        guard FileSystemPath.isAbsolute(path) else { return false }
        let parts = FileSystemPath.components(path, omittingEmpty: false).dropFirst()
        return path == "/" || parts.allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }

    /// Checks `plan` (see the type's steps 1–3).
    /// - Parameters:
    ///   - folderName: the name of the operation folder it was read from, when it was read.
    ///   - allowed: the folders the user named; nil when the plan's own roots are the ones given
    ///     (a plan made in this run).
    /// - Returns: nil when the plan may be obeyed, else why not.
    public static func problem(in plan: Plan, folderName: String? = nil, allowed: [Plan.Root]?) -> String? {
        guard isPlainID(plan.id) else { return "its id \(plan.id.debugDescription) is not a plain name" }
        if let folderName, folderName != plan.id {
            return "its id \(plan.id) is not the name of its folder, \(folderName)"
        }
        guard !plan.roots.isEmpty || plan.steps.isEmpty else { return "it names no folders" }
        for root in plan.roots {
            guard isClean(root.path), root.path != "/" else {
                return "its folder \(root.path.debugDescription) is not a clean absolute path"
            }
            guard privateFolders.contains(root.privateFolder) else {
                return "its private folder \(root.privateFolder.debugDescription) is not one of usm-repair's"
            }
            if let allowed,
                !allowed.contains(where: {
                    $0.path.pathKey == root.path.pathKey && $0.privateFolder == root.privateFolder
                })
            {
                return "it works in \(root.path), which is not one of the folders given"
            }
        }
        var seen = Set<[UInt8]>()
        for root in plan.roots where !seen.insert(root.path.pathKey).inserted {
            return "it names the folder \(root.path) twice"
        }

        func inRoot(_ path: String) -> Plan.Root? {
            guard isClean(path) else { return nil }
            return plan.root(of: path)
        }
        /// A path of the user's: inside a root, not inside any private folder of ours.
        func user(_ path: String) -> String? {
            guard inRoot(path) != nil else { return "it names \(path.debugDescription), outside its folders" }
            if plan.roots.contains(where: { FileSystemPath.isInside(path, $0.privateURL.path) }) {
                return "it names \(path), inside a private folder of usm-repair"
            }
            return nil
        }
        /// A path of the operation's own: in `<root>/<private>/operations/<id>/<area>/...`.
        func own(_ path: String, _ area: String) -> String? {
            guard isClean(path),
                plan.roots.contains(where: {
                    FileSystemPath.isInside(path, $0.operationURL(plan.id).appendingPathComponent(area).path)
                        && path.pathKey != $0.operationURL(plan.id).appendingPathComponent(area).path.pathKey
                })
            else { return "it names \(path.debugDescription) as its \(area), outside the operation's own folder" }
            return nil
        }
        for step in plan.steps {
            let found: String?
            switch step.action {
            case .snapshot, .commit, .purge:
                found = nil
            case let .checkpoint(source, staged):
                found = user(source) ?? own(staged, "staging")
            case let .build(build):
                // The source is only read, through a private copy, and never by recovery.
                found =
                    (isClean(build.source)
                        ? nil : "its source \(build.source.debugDescription) is not a clean absolute path")
                    ?? build.mergeInto.flatMap(user) ?? own(build.staged, "staging")
            case let .writeMarker(_, staged):
                found = own(staged, "staging")
            case let .writePreferences(source, _, staged):
                found = user(source) ?? own(staged, "staging")
            case let .extract(archive, items, folders):
                found =
                    isClean(archive)
                    ? folders.values.compactMap { own($0, "staging") }.first
                        ?? items.first {
                            $0.isEmpty || FileSystemPath.isAbsolute($0) || FileSystemPath.components($0).contains("..")
                        }
                        .map { "it extracts \($0.debugDescription)" } : "its archive path is not clean"
            case let .retire(path, trash):
                found =
                    user(path) ?? own(trash, "trash")
                    ?? (inRoot(path)?.path.pathKey == inRoot(trash)?.path.pathKey
                        ? nil : "it moves \(path) into another folder's trash")
            case let .install(staged, path, _):
                found =
                    user(path) ?? own(staged, "staging")
                    ?? (inRoot(path)?.path.pathKey == inRoot(staged)?.path.pathKey
                        ? nil : "it installs \(path) from another folder's staging")
            }
            if let found { return found }
        }
        for path in plan.stores + (plan.snapshotRoots ?? []).map(\.path) {
            if let found = user(path) { return found }
        }
        return nil
    }

    /// Throws `symlinkEscapes` unless every folder between `root` and `path` (not `path` itself,
    /// which may be a link that is moved as a link) is a real folder or absent.
    public static func linkFree(_ path: String, under root: String) throws {
        guard FileSystemPath.isInside(path, root), path.pathKey != root.pathKey else { return }
        let rootParts = FileSystemPath.components(root)
        let parts = FileSystemPath.components(path)
        guard parts.count > rootParts.count + 1 else { return }
        var current = root
        for part in parts[rootParts.count..<(parts.count - 1)] {
            current += (current.hasSuffix("/") ? "" : "/") + part
            guard let status = FileStatus.lookup(current) else { return }
            if status.kind == .symlink {
                throw USMError.symlinkEscapes(
                    path: current, target: URL(fileURLWithPath: current).resolvingSymlinksInPath().path, root: root)
            }
            guard status.kind == .directory else { return }
        }
    }

    /// Throws `wrongKind` for the first FIFO, socket, device or other special file at or below
    /// `paths` (folders walked, links never followed): a snapshot cannot hold one, so a plan that
    /// would move or replace one could not be undone; it is refused before anything changes.
    public static func refuseSpecialFiles(_ paths: [String]) throws {
        var stack = paths.reversed() as [String]
        var seen = Set<[UInt8]>()
        while let path = stack.popLast() {
            guard seen.insert(path.pathKey).inserted, let status = try FileStatus.examine(path) else { continue }
            switch status.kind {
            case .file, .symlink:
                continue
            case .directory:
                var children: [String] = []
                try DirectoryListing.forEach(path) { children.append(path + "/" + $0) }
                stack += children.reversed()
            case .fifo, .socket, .characterDevice, .blockDevice, .other:
                throw USMError.wrongKind(
                    path: path,
                    expected:
                        "a regular file, folder or symlink: it is a \(status.kind.description), which no snapshot can hold, so this change could not be undone; remove it (nothing was changed)"
                )
            }
        }
    }
}
