import Foundation

/// Finds the UbiquityStoreManager folders inside an app container download: an Xcode `.xcappdata`
/// (`AppData/Library/...`), an iOS sandbox, a Mac sandbox (`Data/Library/...`) or a plain folder.
/// Searches never follow symlinks and never leave the container.
struct ContainerSearch {
    let root: URL
    let storeName: String
    /// Folders the search could not list: reported with the layout, not taken for empty.
    let unreadable = UnreadableFolders()

    /// How deep the search for `CloudLogs` goes below the container.
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

    /// The ubiquity container: the folder holding `CloudLogs/` or `CloudStore.nosync/`.
    func cloudDirectory() -> URL? {
        var queue: [(URL, Int)] = [(root, 0)]
        while !queue.isEmpty {
            let (dir, depth) = queue.removeFirst()
            let names = unreadable.children(dir)
            if names.contains("CloudLogs") || names.contains("CloudStore.nosync") { return dir }
            guard depth < Self.maxDepth else { continue }
            for name in names where name != "CloudStore" {
                let child = dir.appendingPathComponent(name, isDirectory: true)
                if FileStatus.lookup(child.path)?.kind == .directory { queue.append((child, depth + 1)) }
            }
        }
        return nil
    }

    /// The preferences plist holding `USMCloudEnabledKey`, else the only app plist there is.
    func preferences() -> URL? {
        var plists: [URL] = []
        for base in bases {
            let dir = base.appendingPathComponent("Library/Preferences", isDirectory: true)
            plists += unreadable.children(dir).filter { $0.hasSuffix(".plist") }.map { dir.appendingPathComponent($0) }
        }
        plists = plists.filter { FileStatus.lookup($0.path)?.kind == .file }
        if let withKey = plists.first(where: Preferences.holdsCloudKey) { return withKey }
        let appPlists = plists.filter { !$0.lastPathComponent.hasPrefix("com.apple.") }
        return appPlists.count == 1 ? appPlists[0] : nil
    }

    private func holdsStores(_ dir: URL) -> Bool {
        FileStatus.lookup(dir.appendingPathComponent(storeName + ".sqlite").path) != nil
            || FileStatus.lookup(dir.appendingPathComponent("CloudStore").path)?.kind == .directory
    }
}
