import Foundation

/// What a bundle will hold, decided before anything is read: every directory, file, symlink and
/// store file set of a layout (or of plain folders), each with its path inside the archive, plus
/// what is left out and why. The inventory is data: it touches nothing but `lstat` and directory listings.
struct BundleInventory {
    /// What a file is, which decides how redaction treats it.
    enum Category: Equatable {
        case storeMember(store: Int, member: String)
        case externalData(store: Int)
        case transactionLog
        case marker
        case preferences
        case other
    }

    struct Directory { let url: URL; let status: FileStatus }
    struct File { let url: URL; let status: FileStatus; let category: Category }
    struct Symlink { let url: URL; let status: FileStatus; let target: String }

    /// A store captured as one consistent file set.
    struct Store {
        let files: StoreFileSet
        let role: String
        let uuid: String?
        let cloudVersion: Int?
        let root: URL
        /// Archive path of each member that exists, by member name (`main`, `wal`, `shm`, `journal`).
        var members: [String: String]
    }

    private(set) var roots: [(name: String, url: URL)] = []
    private(set) var directories: [String: Directory] = [:]
    private(set) var files: [String: File] = [:]
    private(set) var symlinks: [String: Symlink] = [:]
    private(set) var stores: [Store] = []
    private(set) var skipped: [BundleSkip] = []
    private var claimed: Set<String> = []

    /// The inventory of everything a layout holds.
    static func forLayout(_ layout: Layout) -> BundleInventory {
        var inventory = BundleInventory()
        if let store = layout.options.store {
            inventory.addRoot("store", store.deletingLastPathComponent())
        } else if let document = layout.options.document {
            inventory.addRoot("document", document)
        } else if let container = layout.options.container {
            inventory.addRoot("container", container)
        }
        if let app = layout.appDirectory { inventory.addRoot("app", app) }
        if let cloud = layout.cloudDirectory { inventory.addRoot("cloud", cloud) }
        if let prefs = layout.preferencesPath { inventory.addRoot("preferences", prefs.deletingLastPathComponent()) }

        for entry in layout.stores where FileStatus.lookup(entry.files.main.path) != nil {
            inventory.addStore(entry.files, role: entry.role.rawValue, uuid: entry.uuid, cloudVersion: entry.cloudVersion, root: entry.root)
        }
        for leftover in layout.leftovers {
            let files = StoreFileSet(main: URL(fileURLWithPath: leftover.path))
            inventory.addStore(files, role: "leftover", uuid: nil, cloudVersion: nil, root: files.directory)
        }
        if let cloud = layout.cloudDirectory {
            inventory.addTree(cloud.appendingPathComponent("CloudLogs", isDirectory: true))
            inventory.addTree(cloud.appendingPathComponent("CloudStore.nosync", isDirectory: true))
        }
        if let app = layout.appDirectory {
            inventory.addTree(app.appendingPathComponent("CloudStore", isDirectory: true))
        }
        // The other layouts: whole document packages (metadata, additional content) and the
        // account folders of Apple's own ubiquity copies (their container/ beside store/).
        for document in layout.documents {
            inventory.addTree(URL(fileURLWithPath: document.path, isDirectory: true))
        }
        for store in layout.stores where store.location == .ubiquity {
            if let copy = store.copy { inventory.addTree(URL(fileURLWithPath: copy.storeFolder).deletingLastPathComponent()) }
        }
        if let prefs = layout.preferencesPath, FileStatus.lookup(prefs.path) != nil {
            inventory.addSingle(prefs, category: .preferences)
        }
        return inventory
    }

    /// The inventory of chosen items (files, symlinks, whole folders) under named roots: what a
    /// snapshot holds. Items that do not exist are returned apart, by archive path.
    static func forItems(roots: [(name: String, url: URL)], items: [URL]) -> (inventory: BundleInventory, absent: [String]) {
        var inventory = BundleInventory()
        for (name, url) in roots { inventory.addRoot(name, url) }
        var absent: [String] = []
        for item in items {
            if FileStatus.lookup(item.path) == nil {
                if let path = inventory.archivePath(item) { absent.append(path) }
                continue
            }
            inventory.addTree(item)
        }
        return (inventory, absent.sorted())
    }

    // MARK: - Building

    private mutating func addRoot(_ name: String, _ url: URL) {
        let url = url.standardizedFileURL
        guard !roots.contains(where: { Self.isInside(url, $0.url) }) else { return }
        // A new root that contains earlier ones replaces them.
        roots.removeAll { Self.isInside($0.url, url) }
        roots.append((name, url))
    }

    /// The archive path of `url`, under the innermost root holding it.
    func archivePath(_ url: URL) -> String? {
        let path = url.standardizedFileURL.path
        for root in roots {
            let base = root.url.path
            if path == base { return root.name }
            if Confinement.isInside(path, base) {
                return root.name + "/" + path.dropFirst(base.count).drop { $0 == "/" }
            }
        }
        return nil
    }

    private func root(of url: URL) -> URL? {
        roots.first { Self.isInside(url.standardizedFileURL, $0.url) }?.url
    }

    static func isInside(_ url: URL, _ root: URL) -> Bool { Confinement.isInside(url.path, root.path) }

    private mutating func addParents(of url: URL) {
        guard let root = root(of: url) else { return }
        var dir = url.standardizedFileURL.deletingLastPathComponent()
        while Self.isInside(dir, root) {
            if let path = archivePath(dir), directories[path] == nil, let status = FileStatus.lookup(dir.path), status.kind == .directory {
                directories[path] = Directory(url: dir, status: status)
            }
            if dir.path == root.path || dir.path == "/" { break }
            dir = dir.deletingLastPathComponent()
        }
    }

    private mutating func addStore(_ files: StoreFileSet, role: String, uuid: String?, cloudVersion: Int?, root: URL) {
        let index = stores.count
        var members: [String: String] = [:]
        for member in ["main", "wal", "shm", "journal"] {
            guard let url = files.member(member), let status = FileStatus.lookup(url.path), let path = archivePath(url), claimed.insert(url.path).inserted else { continue }
            if status.kind == .file {
                members[member] = path
                addParents(of: url)
            } else {
                add(url, status: status, category: .storeMember(store: index, member: member))
            }
        }
        stores.append(Store(files: files, role: role, uuid: uuid, cloudVersion: cloudVersion, root: root, members: members))
        walk(files.supportDirectory, category: .externalData(store: index))
    }

    private mutating func addSingle(_ url: URL, category: Category) {
        guard let status = FileStatus.lookup(url.path), claimed.insert(url.path).inserted else { return }
        add(url, status: status, category: category)
    }

    private mutating func addTree(_ url: URL) {
        walk(url, category: .other)
    }

    private mutating func walk(_ top: URL, category: Category) {
        guard FileStatus.lookup(top.path) != nil else { return }
        var stack = [top]
        while let url = stack.popLast() {
            guard claimed.insert(url.path).inserted, let status = FileStatus.lookup(url.path) else { continue }
            add(url, status: status, category: categorize(url, default: category))
            if status.kind == .directory {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
                stack += names.sorted().reversed().map { url.appendingPathComponent($0) }
            }
        }
    }

    private func categorize(_ url: URL, default category: Category) -> Category {
        let parts = url.pathComponents
        if let i = parts.lastIndex(of: "CloudLogs") {
            return parts.count == i + 2 ? .marker : .transactionLog
        }
        return category
    }

    private mutating func add(_ url: URL, status: FileStatus, category: Category) {
        guard let path = archivePath(url) else {
            skipped.append(BundleSkip(path: url.path, kind: status.kind.rawValue, reason: "outside every folder of the layout"))
            return
        }
        addParents(of: url)
        switch status.kind {
        case .directory:
            directories[path] = Directory(url: url, status: status)
        case .file:
            files[path] = File(url: url, status: status, category: category)
        case .symlink:
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) ?? ""
            if let root = root(of: url), Self.linkStaysInside(linkPath: url.path, target: target, root: root.path) {
                symlinks[path] = Symlink(url: url, status: status, target: target)
            } else {
                skipped.append(BundleSkip(
                    path: path, kind: "symlink",
                    reason: "points outside the folder (\(target)); not followed, not stored"))
            }
        case .fifo, .socket, .characterDevice, .blockDevice, .other:
            skipped.append(BundleSkip(path: path, kind: status.kind.rawValue, reason: "not a regular file, folder or symlink"))
        }
    }

    /// True when a symlink's target, taken lexically from the link's folder, stays inside `root`
    /// (the same rule `restore` applies to the links it is given).
    static func linkStaysInside(linkPath: String, target: String, root: String) -> Bool {
        guard !target.isEmpty, !target.hasPrefix("/") else { return false }
        let rel = linkPath.dropFirst(root.count).split(separator: "/").dropLast().map(String.init)
        var stack = rel
        for part in target.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                if stack.isEmpty { return false }
                stack.removeLast()
            } else {
                stack.append(String(part))
            }
        }
        return true
    }
}
