import Foundation

extension Layout {
    /// Finds the layout the options describe. Lists folders and reads markers and preferences; never writes.
    /// - Throws: `usage` for incoherent options, `notFound` when a named folder or file does not exist,
    ///   `wrongKind` when it is the wrong kind of thing.
    /// `records`: this machine's record of the operations it wrote, so that a pending operation
    /// folder it did not write is reported as such.
    public static func discover(_ options: LayoutOptions, records: OperationRecords = OperationRecords()) throws
        -> Layout
    {
        try options.validate()
        var discovery = Discovery(options: options, records: records)
        return try discovery.run()
    }
}

/// The state of one discovery: what was found so far and the problems met on the way.
struct Discovery {
    let options: LayoutOptions
    let records: OperationRecords
    var problems: [Problem] = []
    var status = ExitStatus.ok
    /// Why the preferences file is not usable, when it is not.
    var preferencesError: USMError?
    /// The app's `CoreDataUbiquitySupport/<peer>/<content>` folders listed on the way.
    var copyFolders: [URL] = []
    /// The names met that are not their bytes (`undecodable-name`), each reported once.
    var undecodable: Set<[UInt8]> = []

    init(options: LayoutOptions, records: OperationRecords) {
        self.options = options
        self.records = records
    }

    mutating func run() throws -> Layout {
        if let store = options.store {
            let files = StoreFileSet(main: store)
            // A store an interrupted operation moved aside is not "not found": its operation is pending.
            guard
                FileStatus.lookup(store.path) != nil || !PlanExecutor.pending(in: Layout.roots(ofStore: store)).isEmpty
            else {
                throw USMError.notFound(path: store.path, what: "store")
            }
            let single = layout(stores: [
                .init(
                    files: files, role: .store, location: .file, uuid: nil, cloudVersion: nil, root: files.directory,
                    copy: nil,
                    opens: nil, document: nil)
            ])
            reportPending(in: Layout.roots(ofStore: store))
            return layout(stores: single.stores)
        }
        if let document = options.document {
            let root = try Self.requireDirectory(document, flag: "--document")
            var documents: [Layout.Document] = []
            var stores: [Layout.StoreEntry] = []
            guard findDocument(root, root: root, documents: &documents, stores: &stores) else {
                throw USMError.wrongKind(
                    path: root.path,
                    expected: "a UIManagedDocument package (a folder holding StoreContent/ or StoreContent.nosync/)")
            }
            return layout(stores: stores, documents: documents)
        }

        var appDir = try options.appDirectory.map { try Self.requireDirectory($0, flag: "--app-dir") }
        var cloudDir = try options.cloudDirectory.map { try Self.requireDirectory($0, flag: "--cloud-dir") }
        var prefsURL = options.preferences
        var prefsFolder = options.preferences?.deletingLastPathComponent()
        var containerRoot: URL?
        if let container = options.container {
            let root = try Self.requireDirectory(container, flag: "--container")
            containerRoot = root
            let found = ContainerSearch(root: root, storeName: options.storeName)
            appDir = appDir ?? found.appDirectory()
            prefsURL = prefsURL ?? found.preferences()
            prefsFolder = prefsURL?.deletingLastPathComponent() ?? found.preferencesFolder()
            cloudDir =
                cloudDir
                ?? found.cloudDirectory(bundleID: prefsURL.map { $0.deletingPathExtension().lastPathComponent })
            for (path, reason) in found.unreadable.items {
                problems.append(
                    Problem(.unreadable, "cannot search \(path) for the app's data: \(reason)", subject: path))
                status = status.worst(.ioError)
            }
            for path in found.unreadable.undecodable { reportUndecodable(path) }
            if appDir == nil, cloudDir == nil {
                problems.append(
                    Problem(
                        .layoutNotFound,
                        "no UbiquityStoreManager data found in \(root.path): no \(options.storeName).sqlite, CloudStore/ or CloudLogs/",
                        subject: root.path))
            }
        }
        var macApp: MacApp?
        if let bundleID = options.macApp {
            let found = try findMacApp(bundleID)
            macApp = found
            appDir = appDir ?? found.appFolder.path.map { URL(fileURLWithPath: $0, isDirectory: true) }
            prefsURL = prefsURL ?? found.preferences.path.map { URL(fileURLWithPath: $0) }
            prefsFolder =
                prefsURL?.deletingLastPathComponent()
                ?? found.preferencesFolder.map { URL(fileURLWithPath: $0, isDirectory: true) }
            cloudDir = cloudDir ?? found.cloudFolder.path.map { URL(fileURLWithPath: $0, isDirectory: true) }
        }
        let appRoot = containerRoot ?? appDir
        // A ubiquity container found beside a download is its own root.
        let cloudRoot = cloudDir.flatMap { dir in
            containerRoot.map { Confinement.isInside(dir.path, $0.path) ? $0 : dir } ?? dir
        }

        let preferences = readPreferences(prefsURL, containerRoot: containerRoot)
        var markers: [Marker] = []
        var content: [Layout.CloudContent] = []
        if let cloudDir, let cloudRoot {
            markers = readMarkers(cloudDir.appendingPathComponent("CloudLogs", isDirectory: true), root: cloudRoot)
            content = readCloudContent(cloudDir.appendingPathComponent("CloudLogs", isDirectory: true), root: cloudRoot)
        }

        var stores: [Layout.StoreEntry] = []
        var leftovers: [Layout.Leftover] = []
        var documents: [Layout.Document] = []
        if let appDir, let appRoot {
            let local = StoreFileSet(main: appDir.appendingPathComponent(options.storeName + ".sqlite"))
            stores.append(
                .init(
                    files: local, role: .local, location: .local, uuid: nil, cloudVersion: nil, root: appRoot,
                    copy: nil, opens: nil,
                    document: nil))
            leftovers += findLeftovers(in: appDir)
            let cloudStore = appDir.appendingPathComponent("CloudStore", isDirectory: true)
            leftovers += findLeftovers(in: cloudStore)
            for file in sqliteFiles(in: cloudStore) where !Layout.temporaryStoreNames.contains(file) {
                let files = StoreFileSet(main: cloudStore.appendingPathComponent(file))
                let version = content.first { $0.uuid == files.baseName }.map { versionOf($0) } ?? Marker.desiredVersion
                stores.append(
                    .init(
                        files: files, role: .cloud, location: .nominal, uuid: files.baseName, cloudVersion: version,
                        root: appRoot,
                        copy: nil, opens: false, document: nil))
            }
            stores += ubiquityCopies(in: cloudStore, root: appRoot, preferences: preferences, usm: true)
        }
        let cloudEntries = cloudDir.map { list($0, hidden: true) } ?? []
        if let cloudDir, let cloudRoot {
            let nosync = cloudDir.appendingPathComponent("CloudStore.nosync", isDirectory: true)
            linkedFolder(nosync, root: cloudRoot)
            expectFolder(nosync)
            leftovers += findLeftovers(in: nosync)
            for file in sqliteFiles(in: nosync) where !Layout.temporaryStoreNames.contains(file) {
                let files = StoreFileSet(main: nosync.appendingPathComponent(file))
                stores.append(
                    .init(
                        files: files, role: .cloud, location: .nosync, uuid: files.baseName, cloudVersion: 0,
                        root: cloudRoot,
                        copy: nil, opens: nil, document: nil))
            }
        }
        // The two other layouts of the seeds: UIManagedDocument packages and Apple's own ubiquity
        // folders, anywhere in the download or the ubiquity container (not in the USM folders).
        var searched: [(URL, URL)] = []
        if let containerRoot { searched.append((containerRoot, containerRoot)) }
        if let cloudDir, let cloudRoot, !searched.contains(where: { Confinement.isInside(cloudDir.path, $0.0.path) }) {
            searched.append((cloudDir, cloudRoot))
        }
        for (top, root) in searched {
            searchOtherLayouts(top, root: root, preferences: preferences, stores: &stores, documents: &documents)
        }

        chooseOpenedCopies(&stores, preferences: preferences)
        // An operation a kill interrupted: its journal waits in a private folder of ours (the
        // preferences folder's too, also when the plist itself is what it moved aside).
        let candidateRoots = Layout(
            options: options, appDirectory: appDir, cloudDirectory: cloudDir, cloudSource: nil,
            preferencesPath: prefsURL, preferencesFolder: prefsFolder,
            preferencesError: nil, stores: [], cloudStores: [], cloudContent: [], markers: [], preferences: nil,
            leftovers: [],
            documents: [], problems: [], exitStatus: .ok
        ).planRoots
        reportPending(in: candidateRoots)
        let cloudStores = collectCloudStores(
            stores: stores, content: content, markers: markers, preferences: preferences)
        // A ubiquity container found beside a download is used only when it shares something with
        // it: it may be another customer's of the same app (two downloads in one folder).
        var cloudSource: Layout.CloudSource?
        if let cloudDir {
            cloudSource =
                options.cloudDirectory != nil
                ? .given
                : macApp != nil
                    ? .macApp
                    : containerRoot.map { Confinement.isInside(cloudDir.path, $0.path) } == true ? .inside : .beside
            // An empty container (no logs, markers or iOS 6 files: one just emptied, or never
            // used) holds nothing of anyone to confirm or to harm.
            let empty = content.isEmpty && markers.isEmpty && !stores.contains { $0.location == .nosync }
            let shared =
                empty || Self.corroborates(stores: stores, content: content, markers: markers, preferences: preferences)
            if !shared, cloudSource == .beside {
                cloudSource = .besideUnconfirmed
                problems.append(
                    Problem(
                        .cloudContainerUnconfirmed,
                        "the ubiquity container found beside the download, \(cloudDir.path), shares nothing with it (no peer folder of this device in its logs, no store UUID both name): it may be another customer's; changing commands refuse it until --cloud-dir names it",
                        subject: cloudDir.path))
            } else if !shared, cloudSource == .given, !(stores.isEmpty && preferences == nil) {
                problems.append(
                    Problem(
                        .cloudContainerUnconfirmed,
                        "the ubiquity container given with --cloud-dir, \(cloudDir.path), shares nothing with the app's folders (no peer folder of this device in its logs, no store UUID both name): make sure it is this customer's",
                        subject: cloudDir.path))
            }
        }
        for leftover in leftovers {
            problems.append(
                Problem(
                    .leftoverTempStore,
                    "\(leftover.kind).sqlite (\(leftover.files.count) file(s) of its file set) was left behind by an interrupted UbiquityStoreManager migration",
                    subject: leftover.path))
        }
        let local = stores.filter { $0.role == .local }
        // Highest cloud version first (the one USM prefers), then by UUID and path.
        let cloud = stores.filter { $0.role == .cloud }.sorted { a, b in
            let (va, vb) = (a.cloudVersion ?? 0, b.cloudVersion ?? 0)
            if va != vb { return va > vb }
            return (a.uuid ?? "", a.files.main.path) < (b.uuid ?? "", b.files.main.path)
        }
        let others = stores.filter { $0.role != .local && $0.role != .cloud }
        var layout = Layout(
            options: options, appDirectory: appDir, cloudDirectory: cloudDir, cloudSource: cloudSource,
            preferencesPath: prefsURL,
            preferencesFolder: prefsFolder, preferencesError: preferencesError, stores: local + cloud + others,
            cloudStores: cloudStores, cloudContent: content, markers: markers, preferences: preferences,
            leftovers: leftovers,
            documents: documents, problems: problems, exitStatus: status, macApp: macApp)
        layout.copyFolders = copyFolders
        layout.cloudEntries = cloudEntries
        return layout
    }

    /// Reports the operation folders pending in `roots`: interrupted operations of this machine's,
    /// and folders it did not write (left alone).
    private mutating func reportPending(in roots: [Plan.Root]) {
        for folder in PlanExecutor.pending(in: roots) {
            do {
                let pending = try PendingOperation.load(folder, allowed: roots, records: records)
                problems.append(
                    Problem(
                        .interruptedOperation,
                        "an interrupted \(pending.plan.operation) is pending (\(folder.path)): run usm-repair recover with the same folder flags to finish or undo it",
                        subject: folder.path))
            } catch USMError.cloudContainerRequired(let operation, let why) {
                problems.append(
                    Problem(
                        .interruptedOperation, "\(operation) needs the ubiquity container: \(why)", subject: folder.path
                    ))
            } catch {
                problems.append(
                    Problem(.untrustedOperation, USMError.wrap(error, path: folder.path).message, subject: folder.path))
            }
        }
    }

    private func layout(stores: [Layout.StoreEntry], documents: [Layout.Document] = []) -> Layout {
        Layout(
            options: options, appDirectory: nil, cloudDirectory: nil, cloudSource: nil, preferencesPath: nil,
            preferencesFolder: nil, preferencesError: nil,
            stores: stores, cloudStores: [],
            cloudContent: [], markers: [], preferences: nil, leftovers: [], documents: documents, problems: problems,
            exitStatus: status)
    }

    // MARK: - Small files

    private mutating func readPreferences(_ url: URL?, containerRoot: URL?) -> Preferences? {
        guard let url else { return nil }
        do {
            // Preferences found in the container stay inside it; an explicit --prefs wins over the
            // search (README): outside the container it is confined to its own folder, a link
            // leading out of that folder still refused.
            if let root = containerRoot,
                options.preferences == nil || Confinement.isInside(url.standardizedFileURL.path, root.path)
            {
                try Confinement(root: root).check(url)
            } else if options.preferences != nil {
                try Confinement(root: url.deletingLastPathComponent()).check(url)
            }
            return try Preferences.read(url)
        } catch let error as USMError {
            // A download without preferences is normal.
            if case .notFound = error, options.preferences == nil { return nil }
            preferencesError = error
            problems.append(
                Problem(
                    error.exitStatus == .refused
                        ? .symlinkEscapes : error.exitStatus == .notFound ? .notFound : .preferencesMalformed,
                    error.message, subject: url.path))
            status = status.worst(error.exitStatus)
            return nil
        } catch {
            preferencesError = USMError.wrap(error, path: url.path)
            return nil
        }
    }

    /// A folder discovery walks that is a symlink: never followed. One leading out of `root` is
    /// reported (`symlink-escapes`, exit 3): the layout cannot be read through it, and no
    /// operation may change anything there.
    private mutating func linkedFolder(_ dir: URL, root: URL) {
        guard FileStatus.lookup(dir.path)?.kind == .symlink, !Confinement(root: root).contains(dir) else { return }
        let error = USMError.symlinkEscapes(path: dir.path, target: dir.resolvingSymlinksInPath().path, root: root.path)
        problems.append(Problem(.symlinkEscapes, error.message, subject: dir.path))
        status = status.worst(.refused)
    }

    /// A folder of the layout (`CloudStore/`, `CoreDataUbiquitySupport/`, `CloudLogs/`...) that is
    /// there but is not a folder (a regular file, a FIFO...): never taken for an absent folder,
    /// which would change the prediction without a word; bad input (README: wrong-kind, exit 2).
    private mutating func expectFolder(_ dir: URL) {
        guard FileStatus.lookup(dir.path) != nil, let found = FileStatus.resolve(dir.path), found.kind != .directory
        else { return }
        let error = USMError.wrongKind(
            path: dir.path,
            expected: "a folder (the layout's \(dir.lastPathComponent)/): it is a \(found.kind.description)")
        problems.append(Problem(.wrongKind, error.message, subject: dir.path))
        status = status.worst(.badInput)
    }

    private mutating func readMarkers(_ logs: URL, root: URL) -> [Marker] {
        linkedFolder(logs, root: root)
        expectFolder(logs)
        var markers: [Marker] = []
        for name in list(logs, hidden: false) {
            guard let (kind, version) = Marker.parse(fileName: name) else { continue }
            let url = logs.appendingPathComponent(name)
            do {
                try Confinement(root: root).check(url)
                if let marker = try Marker.read(url, kind: kind, version: version) { markers.append(marker) }
            } catch {
                let error = USMError.wrap(error, path: url.path)
                problems.append(Problem(error.problemCode, error.message, subject: url.path))
                status = status.worst(error.exitStatus)
            }
        }
        return markers.sorted { ($0.kind.rawValue, -$0.cloudVersion) < ($1.kind.rawValue, -$1.cloudVersion) }
    }

    private mutating func readCloudContent(_ logs: URL, root: URL) -> [Layout.CloudContent] {
        var content: [Layout.CloudContent] = []
        let confinement = Confinement(root: root)
        for name in list(logs, hidden: false) where Marker.parse(fileName: name) == nil {
            let dir = logs.appendingPathComponent(name, isDirectory: true)
            guard let kind = FileStatus.lookup(dir.path)?.kind else { continue }
            if kind == .symlink, !confinement.contains(dir) {
                let error = USMError.symlinkEscapes(
                    path: dir.path, target: dir.resolvingSymlinksInPath().path, root: root.path)
                problems.append(Problem(.symlinkEscapes, error.message, subject: dir.path))
                status = status.worst(.refused)
                continue
            }
            guard kind == .directory else { continue }
            let walk = TreeWalk(dir, confinement: confinement)
            for escape in walk.escapes {
                problems.append(
                    Problem(
                        .symlinkEscapes, "refusing to follow \(escape): a symlink leaving \(root.path)", subject: escape
                    ))
                status = status.worst(.refused)
            }
            // A folder below that cannot be listed: its logs are not counted, and that is said.
            for (path, reason) in walk.unreadable {
                problems.append(
                    Problem(.unreadable, "\(reason); the transaction logs in it are not counted", subject: path))
                status = status.worst(.ioError)
            }
            let peers = list(dir, hidden: false)
            let contentNames = Set(peers.flatMap { list(dir.appendingPathComponent($0), hidden: false, quiet: true) })
                .sorted()
            content.append(
                .init(
                    uuid: name, path: dir.path, peers: peers, contentNames: contentNames, files: walk.files,
                    bytes: walk.bytes))
        }
        return content
    }

    /// 0 when the logs are those of an iOS 6 store (content name = the store name), else 1.
    private func versionOf(_ content: Layout.CloudContent) -> Int {
        content.contentNames.contains(options.storeName) && !content.contentNames.contains(content.uuid) ? 0 : 1
    }

    // MARK: - Core Data's ubiquity folders

    /// The copies under `<base>/CoreDataUbiquitySupport/<peer>/<content>/<cid>/store/`. With `usm`,
    /// they are UbiquityStoreManager's cloud stores: content = the UUID (version 1) or the store
    /// name (version 0, file `<UUID>.sqlite`).
    private mutating func ubiquityCopies(in base: URL, root: URL, preferences: Preferences?, usm: Bool) -> [Layout
        .StoreEntry]
    {
        let support = base.appendingPathComponent(Layout.ubiquitySupportFolder, isDirectory: true)
        var found: [Layout.StoreEntry] = []
        linkedFolder(base, root: root)
        linkedFolder(support, root: root)
        if usm {
            expectFolder(base)
            expectFolder(support)
        }
        for peer in list(support, hidden: false) {
            let peerDir = support.appendingPathComponent(peer, isDirectory: true)
            linkedFolder(peerDir, root: root)
            for contentName in list(peerDir, hidden: false) {
                let contentDir = peerDir.appendingPathComponent(contentName, isDirectory: true)
                linkedFolder(contentDir, root: root)
                if usm { copyFolders.append(contentDir) }
                let listed = preferences?.accountMaps.first { $0.contentName == contentName }?.containerIDs
                for account in list(contentDir, hidden: false) {
                    let accountDir = contentDir.appendingPathComponent(account, isDirectory: true)
                    let storeDir = accountDir.appendingPathComponent("store", isDirectory: true)
                    linkedFolder(accountDir, root: root)
                    linkedFolder(storeDir, root: root)
                    let containerDir = accountDir.appendingPathComponent("container", isDirectory: true)
                    let copy = Layout.UbiquityCopy(
                        peer: peer, contentName: contentName, account: account,
                        accountListed: listed.map { $0.contains(account) },
                        storeFolder: storeDir.path,
                        containerFolder: FileStatus.lookup(containerDir.path)?.kind == .directory
                            ? containerDir.path : nil)
                    for file in storeFiles(in: storeDir) {
                        let files = StoreFileSet(main: storeDir.appendingPathComponent(file))
                        if usm, Marker.isValidUUID(contentName), files.baseName == contentName {
                            found.append(
                                .init(
                                    files: files, role: .cloud, location: .coreDataCopy, uuid: contentName,
                                    cloudVersion: 1, root: root,
                                    copy: copy, opens: nil, document: nil))
                        } else if usm, contentName == options.storeName, Marker.isValidUUID(files.baseName) {
                            found.append(
                                .init(
                                    files: files, role: .cloud, location: .coreDataCopy, uuid: files.baseName,
                                    cloudVersion: 0, root: root,
                                    copy: copy, opens: nil, document: nil))
                        } else {
                            found.append(
                                .init(
                                    files: files, role: .ubiquity, location: .ubiquity, uuid: nil, cloudVersion: nil,
                                    root: root,
                                    copy: copy, opens: nil, document: nil))
                        }
                    }
                }
            }
        }
        return found
    }

    /// The main files in a `store/` folder: every regular file or link that is not a sidecar.
    private mutating func storeFiles(in dir: URL) -> [String] {
        list(dir, hidden: false).filter { name in
            !name.hasSuffix("-wal") && !name.hasSuffix("-shm") && !name.hasSuffix("-journal")
                && FileStatus.lookup(dir.appendingPathComponent(name).path)?.kind != .directory
        }
    }

    /// Marks, per cloud store, the copy the app opens: the only copy, or the only one in an account
    /// folder the preferences' map lists. Several candidates: unknown (nil), never a guess.
    private func chooseOpenedCopies(_ stores: inout [Layout.StoreEntry], preferences: Preferences?) {
        let uuids = Set(stores.compactMap { $0.location == .coreDataCopy ? $0.uuid : nil })
        for uuid in uuids {
            let indices = stores.indices.filter { stores[$0].location == .coreDataCopy && stores[$0].uuid == uuid }
            var candidates = indices
            let listed = candidates.filter { stores[$0].copy?.accountListed == true }
            if !listed.isEmpty { candidates = listed }
            for i in indices {
                stores[i].opens = candidates.count == 1 ? candidates[0] == i : (candidates.contains(i) ? nil : false)
            }
        }
    }

    private func collectCloudStores(
        stores: [Layout.StoreEntry], content: [Layout.CloudContent], markers: [Marker], preferences: Preferences?
    ) -> [Layout.CloudStore] {
        var versions: [String: Int] = [:]
        for store in stores where store.role == .cloud {
            if let uuid = store.uuid, let version = store.cloudVersion, store.location != .nominal {
                versions[uuid] = max(versions[uuid] ?? 0, version)
            }
        }
        for entry in content where versions[entry.uuid] == nil { versions[entry.uuid] = versionOf(entry) }
        for marker in markers where marker.kind == .storeUUID {
            if let uuid = marker.value, versions[uuid] == nil {
                versions[uuid] = min(marker.cloudVersion, Marker.desiredVersion)
            }
        }
        for cached in preferences?.cachedStoreUUIDs ?? [] {
            if let uuid = cached.value, cached.valid, versions[uuid] == nil {
                versions[uuid] = min(cached.cloudVersion, Marker.desiredVersion)
            }
        }
        return versions.keys.sorted().map { uuid in
            Layout.CloudStore(
                uuid: uuid, cloudVersion: versions[uuid] ?? 1,
                copies: stores.filter { $0.uuid == uuid && ($0.location == .coreDataCopy || $0.location == .nosync) }
                    .map(\.files.main.path),
                content: content.contains { $0.uuid == uuid },
                markers: markers.filter { $0.value == uuid }.map(\.name),
                cached: preferences?.cachedStoreUUIDs.contains { $0.value == uuid } ?? false)
        }
    }

    // MARK: - Documents and Apple's own layout

    /// Searches below `top` (never following links, not inside USM's own folders) for
    /// UIManagedDocument packages and `CoreDataUbiquitySupport` folders of apps without USM.
    private mutating func searchOtherLayouts(
        _ top: URL, root: URL, preferences: Preferences?, stores: inout [Layout.StoreEntry],
        documents: inout [Layout.Document]
    ) {
        var queue: [(URL, Int)] = [(top, 0)]
        let known = Set(stores.map { $0.files.directory.path })
        while !queue.isEmpty {
            let (dir, depth) = queue.removeFirst()
            if findDocument(dir, root: root, documents: &documents, stores: &stores) { continue }
            let names = list(dir, hidden: false, quiet: true)
            if names.contains(Layout.ubiquitySupportFolder), dir.lastPathComponent != "CloudStore" {
                for entry in ubiquityCopies(in: dir, root: root, preferences: preferences, usm: false)
                where !known.contains(entry.files.directory.path) {
                    stores.append(entry)
                }
            }
            guard depth < ContainerSearch.maxDepth else { continue }
            for name in names
            where !["CloudStore", "CloudLogs", "CloudStore.nosync", Layout.ubiquitySupportFolder].contains(name) {
                let child = dir.appendingPathComponent(name, isDirectory: true)
                if FileStatus.lookup(child.path)?.kind == .directory { queue.append((child, depth + 1)) }
            }
        }
    }

    /// When `dir` is a UIManagedDocument package, records it and its stores; returns whether it is one.
    @discardableResult
    private mutating func findDocument(
        _ dir: URL, root: URL, documents: inout [Layout.Document], stores: inout [Layout.StoreEntry]
    ) -> Bool {
        for contentFolder in ["StoreContent", "StoreContent.nosync"] {
            let storeContent = dir.appendingPathComponent(contentFolder, isDirectory: true)
            guard FileStatus.lookup(storeContent.path)?.kind == .directory else { continue }
            let metadata = dir.appendingPathComponent("DocumentMetadata.plist")
            var contentName: String?
            if FileStatus.resolve(metadata.path)?.kind == .file,
                (FileStatus.resolve(metadata.path)?.size ?? 0) < 1 << 20,
                let data = try? Data(contentsOf: metadata),
                let dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: nil))
                    as? [String: Any]
            {
                contentName = dict["NSPersistentStoreUbiquitousContentNameKey"] as? String
            }
            documents.append(
                .init(
                    path: dir.path, storeContent: contentFolder, metadata: FileStatus.lookup(metadata.path) != nil,
                    contentName: contentName,
                    additionalContent: FileStatus.lookup(dir.appendingPathComponent("AdditionalContent").path)?.kind
                        == .directory))
            for file in storeFiles(in: storeContent) {
                stores.append(
                    .init(
                        files: StoreFileSet(main: storeContent.appendingPathComponent(file)), role: .document,
                        location: .document,
                        uuid: nil, cloudVersion: nil, root: root, copy: nil, opens: nil, document: dir.path))
            }
            for entry in ubiquityCopies(in: storeContent, root: root, preferences: nil, usm: false) {
                stores.append(
                    .init(
                        files: entry.files, role: .document, location: .ubiquity, uuid: nil, cloudVersion: nil,
                        root: root,
                        copy: entry.copy, opens: nil, document: dir.path))
            }
            return true
        }
        return false
    }

    // MARK: - Folders

    /// Sorted entry names of a folder; an existing folder that cannot be listed is a problem
    /// (never silently an empty folder). `quiet` lists without reporting (optional searches).
    private mutating func list(_ dir: URL, hidden: Bool, quiet: Bool = false) -> [String] {
        guard FileStatus.lookup(dir.path)?.kind == .directory else { return [] }
        do {
            // A name that is not valid UTF-8 is never used: every call taking the path as
            // UTF-8 would address another file. It is reported, and nothing below it is read.
            return try DirectoryListing.names(dir.path).filter { name in
                guard hidden || !name.hasPrefix(".") else { return false }
                guard FileSystemPath.isUndecodable(name) else { return true }
                reportUndecodable(dir.path + "/" + name)
                return false
            }
        } catch {
            if !quiet {
                let error = USMError.unreadable(
                    path: dir.path, reason: "the folder cannot be listed (\(USMError.wrap(error).message))")
                problems.append(Problem(.unreadable, error.message, subject: dir.path))
                status = status.worst(.ioError)
            }
            return []
        }
    }

    /// Reports a path whose last name is not its bytes (bad input, exit 2), once.
    private mutating func reportUndecodable(_ path: String) {
        guard undecodable.insert(path.pathKey).inserted else { return }
        problems.append(
            Problem(
                .undecodableName, "\(path) has a name that \(FileSystemPath.undecodableDefect(path))", subject: path))
        status = status.worst(.badInput)
    }

    static func requireDirectory(_ url: URL, flag: String) throws -> URL {
        guard let status = FileStatus.resolve(url.path) else {
            throw USMError.notFound(path: url.path, what: "folder given with \(flag)")
        }
        guard status.kind == .directory else {
            throw USMError.wrongKind(path: url.path, expected: "a folder (\(flag))")
        }
        guard FileManager.default.isReadableFile(atPath: url.path),
            FileManager.default.isExecutableFile(atPath: url.path)
        else {
            throw USMError.unreadable(path: url.path, reason: "permission denied")
        }
        return url.standardizedFileURL
    }

    private mutating func sqliteFiles(in dir: URL) -> [String] {
        list(dir, hidden: false).filter { $0.hasSuffix(".sqlite") }
    }

    /// True when the app's folders and the ubiquity container name something in common: a peer
    /// folder of this device in the container's logs (`mobile~<id>` copies, `mobile.<id>` logs), or
    /// a store UUID the device side names (its cache, its copies, its account maps) and the
    /// container names too (its markers, its logs, its iOS 6 files).
    static func corroborates(
        stores: [Layout.StoreEntry], content: [Layout.CloudContent], markers: [Marker], preferences: Preferences?
    ) -> Bool {
        func device(_ peer: String) -> String? {
            guard let cut = peer.firstIndex(where: { $0 == "~" || $0 == "." }) else { return nil }
            let id = peer[peer.index(after: cut)...].uppercased()
            return id.isEmpty ? nil : id
        }
        let ownPeers = Set(stores.compactMap { $0.copy?.peer }.compactMap(device))
        let logPeers = Set(content.flatMap(\.peers).compactMap(device))
        if !ownPeers.isDisjoint(with: logPeers) { return true }
        var named = Set(stores.filter { $0.location == .coreDataCopy }.compactMap(\.uuid))
        named.formUnion(preferences?.cachedStoreUUIDs.compactMap(\.value) ?? [])
        named.formUnion(preferences?.accountMaps.map(\.contentName) ?? [])
        var theirs = Set(content.map(\.uuid))
        theirs.formUnion(markers.compactMap(\.raw))
        theirs.formUnion(stores.filter { $0.location == .nosync }.compactMap(\.uuid))
        return !named.isDisjoint(with: theirs)
    }

    private func findLeftovers(in dir: URL) -> [Layout.Leftover] {
        Layout.temporaryStoreNames.compactMap { name in
            let files = StoreFileSet(main: dir.appendingPathComponent(name))
            let present = files.existingMembers()
            guard !present.isEmpty else { return nil }
            return Layout.Leftover(
                kind: String(name.dropLast(".sqlite".count)), path: files.main.path, files: present.map(\.path))
        }
    }
}
