import Foundation

/// Finds the UbiquityStoreManager folders of an app container download: an Xcode `.xcappdata`
/// (`AppData/Library/...`), an iOS sandbox, a Mac sandbox (`Data/Library/...`) or a plain folder,
/// and the ubiquity container, which a download does not hold (it lies outside the sandbox): it is
/// looked for inside the download and beside it, as a Mac keeps it
/// (`Mobile Documents/<TEAM>~<bundle~id>/`). Searches never follow symlinks.
struct ContainerSearch {
    let root: URL
    let storeName: String
    /// Folders the search could not list: reported with the layout, not taken for empty.
    let unreadable = UnreadableFolders()

    /// How deep the searches go below a folder.
    static let maxDepth = 6

    /// Library roots in the order they are tried.
    private var bases: [URL] {
        [root.appendingPathComponent("AppData"), root.appendingPathComponent("Data"), root]
            .filter { FileStatus.lookup($0.path)?.kind == .directory }
    }

    /// The folder holding `<storeName>.sqlite` or `CloudStore/`: `Library/Application Support`,
    /// a bundle-id folder below it (macOS), or the container itself.
    func appDirectory() -> URL? {
        var candidates: [URL] = []
        for base in bases {
            let support = base.appendingPathComponent("Library/Application Support", isDirectory: true)
            candidates.append(support)
            candidates += unreadable.children(support).map { support.appendingPathComponent($0, isDirectory: true) }
            candidates.append(base)
        }
        return candidates.first(where: holdsStores)
            ?? bases.map { $0.appendingPathComponent("Library/Application Support", isDirectory: true) }
            .first { FileStatus.lookup($0.path)?.kind == .directory }
    }

    /// The ubiquity container: a folder holding `CloudLogs/` or `CloudStore.nosync/`, inside the
    /// download, else beside it: a sibling named `<TEAM>~<bundle~id>` (or the only sibling that is
    /// a ubiquity container), or one in a `Mobile Documents` folder next to the download or its parent.
    func cloudDirectory(bundleID: String?) -> URL? {
        if let inside = Self.search(root, depth: Self.maxDepth) { return inside }
        let parent = root.deletingLastPathComponent()
        let suffix = bundleID.map { "~" + $0.replacingOccurrences(of: ".", with: "~") }
        var places = [parent]
        for base in [parent, parent.deletingLastPathComponent()] {
            let mobile = base.appendingPathComponent("Mobile Documents", isDirectory: true)
            if FileStatus.lookup(mobile.path)?.kind == .directory { places.append(mobile) }
        }
        for place in places {
            let children = unreadable.children(place).map { place.appendingPathComponent($0, isDirectory: true) }
                .filter { $0.path != root.path && FileStatus.lookup($0.path)?.kind == .directory }
            // The app's own container by name, even emptied (after `delete container`).
            if let suffix, let named = children.first(where: { $0.lastPathComponent.hasSuffix(suffix) }) {
                return named
            }
            let containers = children.filter(Self.isUbiquityContainer)
            if containers.count == 1, suffix == nil || place.lastPathComponent != "Mobile Documents" {
                return containers[0]
            }
        }
        return nil
    }

    /// True for a folder holding `CloudLogs/` or `CloudStore.nosync/`.
    static func isUbiquityContainer(_ dir: URL) -> Bool {
        let names = (try? TreeWalk.children(dir)) ?? []
        return names.contains("CloudLogs") || names.contains("CloudStore.nosync")
    }

    /// Breadth-first search below `top` for a ubiquity container.
    private static func search(_ top: URL, depth maxDepth: Int) -> URL? {
        var queue: [(URL, Int)] = [(top, 0)]
        while !queue.isEmpty {
            let (dir, depth) = queue.removeFirst()
            if isUbiquityContainer(dir) { return dir }
            guard depth < maxDepth else { continue }
            for name in (try? TreeWalk.children(dir)) ?? [] where name != "CloudStore" {
                let child = dir.appendingPathComponent(name, isDirectory: true)
                if FileStatus.lookup(child.path)?.kind == .directory { queue.append((child, depth + 1)) }
            }
        }
        return nil
    }

    /// The preferences plist holding `USMCloudEnabledKey` (or the cached StoreUUID), else the only app plist there is.
    func preferences() -> URL? {
        var plists: [URL] = []
        for base in bases {
            let dir = base.appendingPathComponent("Library/Preferences", isDirectory: true)
            plists += unreadable.children(dir).filter { $0.hasSuffix(".plist") }.map { dir.appendingPathComponent($0) }
        }
        plists = plists.filter { FileStatus.lookup($0.path)?.kind == .file }
        if let withKey = plists.first(where: { (try? Preferences.read($0))?.holdsUbiquityKeys == true }) {
            return withKey
        }
        let appPlists = plists.filter { !$0.lastPathComponent.hasPrefix("com.apple.") }
        return appPlists.count == 1 ? appPlists[0] : nil
    }

    /// The `Library/Preferences` folder of the download, when it has one (also when the plist is
    /// not there: an interrupted operation's journal may wait in it).
    func preferencesFolder() -> URL? {
        bases.map { $0.appendingPathComponent("Library/Preferences", isDirectory: true) }
            .first { FileStatus.lookup($0.path)?.kind == .directory }
    }

    private func holdsStores(_ dir: URL) -> Bool {
        FileStatus.lookup(dir.appendingPathComponent(storeName + ".sqlite").path) != nil
            || FileStatus.lookup(dir.appendingPathComponent("CloudStore").path)?.kind == .directory
    }
}
