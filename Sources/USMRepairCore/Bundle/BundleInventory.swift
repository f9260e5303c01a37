import Foundation

/// What a bundle will hold, decided before anything is read: every directory, file, symlink and
/// store file set of a layout (or of chosen items), each with its path inside the archive, plus
/// what is left out and why, written into a `BundleCatalog`. The inventory touches nothing but
/// `lstat`, `readlink` and directory listings; a folder or file it cannot look at is a listed skip
/// marked unreadable, never an absence.
struct BundleInventory {
    typealias Category = BundleCatalog.Category

    /// A store captured as one consistent file set.
    struct Store {
        let files: StoreFileSet
        let role: String
        let uuid: String?
        let cloudVersion: Int?
        let root: URL
        /// Archive path of each regular-file member that exists, by member name (`main`, `wal`, `shm`, `journal`).
        var members: [String: String]
    }

    let catalog: BundleCatalog
    private(set) var roots: [(name: String, url: URL)] = []
    private(set) var stores: [Store] = []
    /// Entries waiting to be written to the catalog in one transaction, by path bytes.
    private var pending: [[UInt8]: BundleCatalog.Entry] = [:]
    /// Folders already added (a cache that saves re-adding every file's parents).
    private var knownDirectories: Set<[UInt8]> = []

    private init(catalog: BundleCatalog) { self.catalog = catalog }

    /// The inventory of everything a layout holds.
    static func forLayout(_ layout: Layout, catalog: BundleCatalog) throws -> BundleInventory {
        var inventory = BundleInventory(catalog: catalog)
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
            try inventory.addStore(
                entry.files, role: entry.role.rawValue, uuid: entry.uuid, cloudVersion: entry.cloudVersion,
                root: entry.root)
        }
        for leftover in layout.leftovers {
            let files = StoreFileSet(main: URL(fileURLWithPath: leftover.path))
            try inventory.addStore(files, role: "leftover", uuid: nil, cloudVersion: nil, root: files.directory)
        }
        if let cloud = layout.cloudDirectory {
            try inventory.walk(cloud.appendingPathComponent("CloudLogs").path, category: .other)
            try inventory.walk(cloud.appendingPathComponent("CloudStore.nosync").path, category: .other)
        }
        if let app = layout.appDirectory {
            try inventory.walk(app.appendingPathComponent("CloudStore").path, category: .other)
        }
        // The other layouts: whole document packages (metadata, additional content) and the
        // account folders of Apple's own ubiquity copies (their container/ beside store/).
        for document in layout.documents {
            try inventory.walk(
                URL(fileURLWithPath: document.path, isDirectory: true).standardizedFileURL.path, category: .other)
        }
        for store in layout.stores where store.location == .ubiquity {
            if let copy = store.copy {
                try inventory.walk(
                    URL(fileURLWithPath: copy.storeFolder).deletingLastPathComponent().standardizedFileURL.path,
                    category: .other)
            }
        }
        if let prefs = layout.preferencesPath, FileStatus.lookup(prefs.path) != nil {
            try inventory.addSingle(prefs.path, category: .preferences)
        }
        try inventory.flush()
        return inventory
    }

    /// The inventory of chosen items (files, symlinks, whole folders) under named roots: what a
    /// snapshot holds. Items that do not exist are returned apart, by archive path.
    static func forItems(roots: [(name: String, url: URL)], items: [URL], catalog: BundleCatalog) throws
        -> (inventory: BundleInventory, absent: [String])
    {
        var inventory = BundleInventory(catalog: catalog)
        for (name, url) in roots { inventory.addRoot(name, url) }
        var absent: [String] = []
        for item in items {
            if FileStatus.lookup(item.path) == nil {
                if let path = inventory.archivePath(item.path) { absent.append(path) }
                continue
            }
            try inventory.walk(item.standardizedFileURL.path, category: .other)
        }
        try inventory.flush()
        return (inventory, absent.sorted { $0.pathKey.lexicographicallyPrecedes($1.pathKey) })
    }

    // MARK: - Roots and paths

    private mutating func addRoot(_ name: String, _ url: URL) {
        let url = url.standardizedFileURL
        guard !roots.contains(where: { Self.isInside(url, $0.url) }) else { return }
        // A new root that contains earlier ones replaces them.
        roots.removeAll { Self.isInside($0.url, url) }
        roots.append((name, url))
    }

    /// The archive path of `url`, under the innermost root holding it.
    func archivePath(_ url: URL) -> String? { archivePath(url.standardizedFileURL.path) }

    /// The archive path of an absolute, standardized path.
    func archivePath(_ path: String) -> String? {
        guard let root = root(of: path) else { return nil }
        if path.utf8.count == root.url.path.utf8.count { return root.name }
        let below = path.utf8.dropFirst(root.url.path.utf8.count).drop { $0 == UInt8(ascii: "/") }
        return root.name + "/" + String(decoding: below, as: UTF8.self)
    }

    private func root(of path: String) -> (name: String, url: URL)? {
        roots.first { FileSystemPath.isInside(path, $0.url.path) }
    }

    static func isInside(_ url: URL, _ root: URL) -> Bool { FileSystemPath.isInside(url.path, root.path) }

    // MARK: - Building

    private mutating func addStore(_ files: StoreFileSet, role: String, uuid: String?, cloudVersion: Int?, root: URL)
        throws
    {
        if let main = archivePath(files.main), main.utf8.contains(UInt8(ascii: "\\")),
            FileStatus.lookup(files.main.path) != nil
        {
            try catalog.skip(BundleSkip(path: main, kind: "store", reason: Self.backslashReason))
            return
        }
        let index = stores.count
        var members: [String: String] = [:]
        for member in ["main", "wal", "shm", "journal"] {
            guard let url = files.member(member), let path = archivePath(url) else { continue }
            let status: FileStatus
            do {
                guard let found = try FileStatus.examine(url.path) else { continue }
                status = found
            } catch let error as USMError {
                try catalog.skip(
                    BundleSkip(
                        path: path, kind: "file", reason: "could not be read (\(error.message)); left out",
                        unreadable: true))
                continue
            }
            guard try !isClaimed(path) else { continue }
            if status.kind == .file {
                members[member] = path
                // Claimed now, filled in from the store's consistent capture.
                try add(url.path, status: status, category: .storeMember(store: index, member: member))
            } else {
                try add(url.path, status: status, category: .storeMember(store: index, member: member))
            }
        }
        stores.append(
            Store(files: files, role: role, uuid: uuid, cloudVersion: cloudVersion, root: root, members: members))
        try walk(files.supportDirectory.path, category: .externalData(store: index))
    }

    private mutating func addSingle(_ path: String, category: Category) throws {
        guard let archive = archivePath(path), try !isClaimed(archive) else { return }
        do {
            guard let status = try FileStatus.examine(path) else { return }
            try add(path, status: status, category: category)
        } catch let error as USMError {
            try catalog.skip(
                BundleSkip(
                    path: archive, kind: "file", reason: "could not be read (\(error.message)); left out",
                    unreadable: true))
        }
    }

    /// Adds `top` and, for a folder, everything below it (links never followed), streaming each
    /// folder's listing; a folder that cannot be listed is skipped as unreadable.
    private mutating func walk(_ top: String, category: Category) throws {
        var stack = [top]
        var first = true
        while let path = stack.popLast() {
            let status: FileStatus
            let archive = archivePath(path)
            do {
                guard let found = try FileStatus.examine(path) else {
                    if !first, let archive {
                        try catalog.skip(
                            BundleSkip(path: archive, kind: "file", reason: "vanished while it was listed"))
                    }
                    first = false
                    continue
                }
                status = found
            } catch let error as USMError {
                if let archive {
                    try catalog.skip(
                        BundleSkip(
                            path: archive, kind: "file", reason: "could not be read (\(error.message)); left out",
                            unreadable: true))
                }
                first = false
                continue
            }
            first = false
            if let archive, try leftOutForItsName(archive, kind: status.kind) { continue }
            // A folder already listed (as the parent of a store member, say) is still walked: only
            // what it holds decides what is left to add.
            if let archive, try isClaimed(archive) {
                guard status.kind == .directory else { continue }
            } else {
                try add(path, status: status, category: categorize(path, default: category))
            }
            guard status.kind == .directory else { continue }
            do {
                var children: [String] = []
                try DirectoryListing.forEach(path) { children.append(path + "/" + $0) }
                stack += children
            } catch let error as USMError {
                if let archive {
                    try catalog.skip(
                        BundleSkip(
                            path: archive, kind: "directory",
                            reason: "its content could not be read (\(error.message)); left out", unreadable: true))
                }
            }
        }
    }

    private func categorize(_ path: String, default category: Category) -> Category {
        let parts = FileSystemPath.components(path)
        if let i = parts.lastIndex(of: "CloudLogs") {
            return parts.count == i + 2 ? .marker : .transactionLog
        }
        return category
    }

    private func isClaimed(_ archivePath: String) throws -> Bool {
        if pending[archivePath.pathKey] != nil { return true }
        return try catalog.contains(archivePath)
    }

    /// Why a name holding a backslash is left out: the reader refuses such an entry, since an
    /// extractor on Windows takes it for a folder separator (a name like `..\\..\\x` would leave the
    /// folder there). APFS, HFS+ and ext4 allow the character, so a container may hold one.
    static let backslashReason =
        "its name holds a backslash, which a bundle cannot carry (an extractor on Windows reads it as a folder "
        + "separator); left out with what it holds"

    /// True when `archive` names a backslash and was left out (with what is below it).
    private func leftOutForItsName(_ archive: String, kind: FileStatus.Kind) throws -> Bool {
        guard archive.utf8.contains(UInt8(ascii: "\\")) else { return false }
        try catalog.skip(
            BundleSkip(
                path: archive, kind: kind == .directory ? "directory" : kind.rawValue, reason: Self.backslashReason))
        return true
    }

    private mutating func add(_ path: String, status: FileStatus, category: Category) throws {
        guard let archive = archivePath(path) else {
            try catalog.skip(
                BundleSkip(path: path, kind: status.kind.rawValue, reason: "outside every folder of the layout"))
            return
        }
        if try leftOutForItsName(archive, kind: status.kind) { return }
        try addParents(of: path)
        var entry = BundleCatalog.Entry(
            path: archive, kind: "file", source: path, bytesFrom: nil, status: status, size: 0, sha256: nil,
            linkTarget: nil,
            transformed: nil, checkSource: false, category: category)
        switch status.kind {
        case .directory:
            entry.kind = "directory"
            knownDirectories.insert(archive.pathKey)
        case .file:
            entry.size = status.size
            entry.checkSource = true
        case .symlink:
            let target: String
            do { target = try DirectoryListing.linkTarget(path) } catch let error as USMError {
                try catalog.skip(
                    BundleSkip(
                        path: archive, kind: "symlink", reason: "could not be read (\(error.message)); left out",
                        unreadable: true))
                return
            }
            switch resolveLink(path, target: target) {
            case .inside:
                entry.kind = "symlink"
                entry.linkTarget = target
            case .outside:
                try catalog.skip(
                    BundleSkip(
                        path: archive, kind: "symlink",
                        reason: "points outside the folder (\(target)); not followed, not stored"))
                return
            case .tooManyLinks:
                try catalog.skip(
                    BundleSkip(
                        path: archive, kind: "symlink",
                        reason:
                            "does not resolve within \(LinkResolution.maxHops) links (\(target)); not followed, not stored"
                    ))
                return
            }
        case .fifo, .socket, .characterDevice, .blockDevice, .other:
            try catalog.skip(
                BundleSkip(path: archive, kind: status.kind.rawValue, reason: "not a regular file, folder or symlink"))
            return
        }
        pending[archive.pathKey] = entry
        if pending.count >= 512 { try flush() }
    }

    /// Adds every folder between the item's root and the item, once.
    private mutating func addParents(of path: String) throws {
        guard let root = root(of: path) else { return }
        var dir = FileSystemPath.parent(path)
        while FileSystemPath.isInside(dir, root.url.path) {
            if let archive = archivePath(dir) {
                if knownDirectories.contains(archive.pathKey) { return }
                if knownDirectories.count > 50_000 { knownDirectories.removeAll() }
                knownDirectories.insert(archive.pathKey)
                if try !isClaimed(archive), let status = FileStatus.lookup(dir), status.kind == .directory {
                    pending[archive.pathKey] = BundleCatalog.Entry(
                        path: archive, kind: "directory", source: dir, bytesFrom: nil, status: status, size: 0,
                        sha256: nil,
                        linkTarget: nil, transformed: nil, checkSource: false, category: .other)
                }
            }
            if dir == root.url.path || dir == "/" { break }
            dir = FileSystemPath.parent(dir)
        }
    }

    /// Where the link at `path` leads in the real tree, following the links on the way, judged
    /// against the root holding it.
    private func resolveLink(_ path: String, target: String) -> LinkResolution.Outcome {
        guard let root = root(of: path) else { return .outside }
        let base = root.url.path
        let below = FileSystemPath.components(String(decoding: path.utf8.dropFirst(base.utf8.count), as: UTF8.self))
        return LinkResolution.resolve(link: below, target: target) { components in
            let candidate = base + "/" + components.joined(separator: "/")
            guard FileStatus.lookup(candidate)?.kind == .symlink else { return nil }
            return try? DirectoryListing.linkTarget(candidate)
        }
    }

    /// Writes the pending entries to the catalog.
    mutating func flush() throws {
        guard !pending.isEmpty else { return }
        try catalog.insert(Array(pending.values))
        pending.removeAll(keepingCapacity: true)
    }
}
