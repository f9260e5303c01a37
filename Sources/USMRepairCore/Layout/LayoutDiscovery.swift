import Foundation

extension Layout {
    /// Finds the layout the options describe. Lists folders and reads markers and preferences; never writes.
    /// - Throws: `usage` for incoherent options, `notFound` when a named folder or file does not exist,
    ///   `wrongKind` when it is the wrong kind of thing.
    public static func discover(_ options: LayoutOptions) throws -> Layout {
        try options.validate()
        var problems: [Problem] = []
        var status = ExitStatus.ok

        if let store = options.store {
            guard FileStatus.lookup(store.path) != nil else { throw USMError.notFound(path: store.path, what: "store") }
            let files = StoreFileSet(main: store)
            return Layout(
                options: options, appDirectory: nil, cloudDirectory: nil, preferencesPath: nil,
                stores: [StoreEntry(files: files, role: .store, uuid: nil, cloudVersion: nil, root: files.directory)],
                cloudContent: [], markers: [], preferences: nil, leftovers: [], problems: [], exitStatus: .ok)
        }

        var appDir = try options.appDirectory.map { try requireDirectory($0, flag: "--app-dir") }
        var cloudDir = try options.cloudDirectory.map { try requireDirectory($0, flag: "--cloud-dir") }
        var prefsURL = options.preferences
        var containerRoot: URL?
        if let container = options.container {
            let root = try requireDirectory(container, flag: "--container")
            containerRoot = root
            let found = ContainerSearch(root: root, storeName: options.storeName)
            appDir = appDir ?? found.appDirectory()
            cloudDir = cloudDir ?? found.cloudDirectory()
            prefsURL = prefsURL ?? found.preferences()
            for (path, reason) in found.unreadable.items {
                problems.append(Problem(.unreadable, "cannot search \(path) for the app's data: \(reason)", subject: path))
                status = status.worst(.ioError)
            }
            if appDir == nil, cloudDir == nil {
                problems.append(Problem(.layoutNotFound, "no UbiquityStoreManager data found in \(root.path): no \(options.storeName).sqlite, CloudStore/ or CloudLogs/",
                    subject: root.path))
            }
        }
        let appRoot = containerRoot ?? appDir
        let cloudRoot = containerRoot ?? cloudDir

        // Preferences.
        var preferences: Preferences?
        if let prefsURL {
            do {
                if let root = containerRoot { try Confinement(root: root).check(prefsURL) }
                preferences = try Preferences.read(prefsURL)
            } catch let error as USMError {
                if case .notFound = error, options.preferences == nil {
                    // A container without preferences is normal.
                } else if case .notFound = error {
                    throw error
                } else {
                    problems.append(Problem(
                        error.exitStatus == .refused ? .symlinkEscapes : .preferencesMalformed, error.message, subject: prefsURL.path))
                    status = status.worst(error.exitStatus)
                }
            }
        }

        // Markers.
        var markers: [Marker] = []
        let logs = cloudDir?.appendingPathComponent("CloudLogs", isDirectory: true)
        if let logs, let cloudRoot {
            for version in Marker.versions {
                for kind in [Marker.Kind.storeUUID, .corruptedUUID] {
                    let url = logs.appendingPathComponent(Marker.fileName(kind, version: version))
                    guard FileStatus.lookup(url.path) != nil else { continue }
                    do {
                        try Confinement(root: cloudRoot).check(url)
                        guard let marker = try Marker.read(url, kind: kind, version: version) else { continue }
                        markers.append(marker)
                        if !marker.valid {
                            let dangling = FileStatus.lookup(url.path)?.kind == .symlink && FileStatus.resolve(url.path) == nil
                            let message = dangling
                                ? "\(url.lastPathComponent) is a symlink that resolves to nothing (it points to itself, loops, or its target is missing); UbiquityStoreManager cannot read it"
                                : "\(url.lastPathComponent) does not hold a store UUID; UbiquityStoreManager would misread it"
                            problems.append(Problem(.markerMalformed, message, subject: url.path))
                            status = status.worst(.badInput)
                        }
                    } catch let error as USMError {
                        problems.append(Problem(error.problemCode, error.message, subject: url.path))
                        status = status.worst(error.exitStatus)
                    }
                }
            }
            let storeMarkers = markers.filter { $0.kind == .storeUUID && $0.valid }
            if storeMarkers.count > 1 {
                problems.append(Problem(.staleMarker, "both \(storeMarkers.map(\.name).joined(separator: " and ")) exist; UbiquityStoreManager uses the highest version and removes the others when it writes one",
                    subject: logs.path))
            }
        }

        // Cloud content per UUID.
        var content: [CloudContent] = []
        // A folder that cannot be listed is reported and makes the status 74: never taken for an empty one.
        let unreadable = UnreadableFolders()
        if let logs, let cloudRoot, FileStatus.lookup(logs.path)?.kind == .directory {
            let confinement = Confinement(root: cloudRoot)
            for name in unreadable.children(logs) {
                let dir = logs.appendingPathComponent(name, isDirectory: true)
                guard let kind = FileStatus.lookup(dir.path)?.kind else { continue }
                if kind == .symlink, !confinement.contains(dir) {
                    let error = USMError.symlinkEscapes(path: dir.path, target: dir.resolvingSymlinksInPath().path, root: cloudRoot.path)
                    problems.append(Problem(.symlinkEscapes, error.message, subject: dir.path))
                    status = status.worst(.refused)
                    continue
                }
                guard kind == .directory else { continue }
                let walk = TreeWalk(dir, confinement: confinement)
                for escape in walk.escapes {
                    problems.append(Problem(.symlinkEscapes, "refusing to follow \(escape): a symlink leaving \(cloudRoot.path)", subject: escape))
                    status = status.worst(.refused)
                }
                for (path, reason) in walk.unreadable { unreadable.note(path, reason) }
                let peers = (try? TreeWalk.children(dir)) ?? []
                let contentNames = Set(peers.flatMap { (try? TreeWalk.children(dir.appendingPathComponent($0))) ?? [] }).sorted()
                content.append(CloudContent(
                    uuid: name, path: dir.path, peers: peers, contentNames: contentNames, files: walk.files, bytes: walk.bytes))
            }
        }

        // Stores.
        var stores: [StoreEntry] = []
        var leftovers: [Leftover] = []
        if let appDir, let appRoot {
            let local = StoreFileSet(main: appDir.appendingPathComponent(options.storeName + ".sqlite"))
            stores.append(StoreEntry(files: local, role: .local, uuid: nil, cloudVersion: nil, root: appRoot))
            leftovers += findLeftovers(in: appDir)
        }
        var cloudDirs: [(URL, Int, URL)] = []
        if let appDir, let appRoot { cloudDirs.append((appDir.appendingPathComponent("CloudStore", isDirectory: true), 1, appRoot)) }
        if let cloudDir, let cloudRoot { cloudDirs.append((cloudDir.appendingPathComponent("CloudStore.nosync", isDirectory: true), 0, cloudRoot)) }
        var seen: Set<String> = []
        for (dir, version, root) in cloudDirs {
            leftovers += findLeftovers(in: dir)
            for file in sqliteFiles(in: dir, unreadable: unreadable) where !temporaryStoreNames.contains(file) {
                let files = StoreFileSet(main: dir.appendingPathComponent(file))
                seen.insert("\(version)/\(files.baseName)")
                stores.append(StoreEntry(files: files, role: .cloud, uuid: files.baseName, cloudVersion: version, root: root))
            }
        }
        // A UUID that has cloud content or is active but no store file still is a cloud store
        // (UbiquityStoreManager's enumerateCloudStores maps each CloudLogs/<UUID> to a store URL).
        var expected: [(String, Int)] = content.map { entry in
            (entry.uuid, entry.contentNames.contains(options.storeName) && !entry.contentNames.contains(entry.uuid) ? 0 : 1)
        }
        if let active = activeMarker(in: markers) { expected.append((active.value!, active.cloudVersion)) }
        for (uuid, version) in expected where !seen.contains("\(version)/\(uuid)") {
            guard let (dir, _, root) = cloudDirs.first(where: { $0.1 == version }) else { continue }
            seen.insert("\(version)/\(uuid)")
            stores.append(StoreEntry(
                files: StoreFileSet(main: dir.appendingPathComponent(uuid + ".sqlite")), role: .cloud, uuid: uuid,
                cloudVersion: version, root: root))
        }
        for (path, reason) in unreadable.items {
            problems.append(Problem(.unreadable, "\(reason); what it holds cannot be seen (not taken for empty)", subject: path))
            status = status.worst(.ioError)
        }
        for leftover in leftovers {
            problems.append(Problem(.leftoverTempStore, "\(leftover.kind).sqlite was left behind by an interrupted UbiquityStoreManager migration",
                subject: leftover.path))
        }

        let local = stores.filter { $0.role == .local }
        // Highest cloud version first (the one USM prefers), then by UUID.
        let cloud = stores.filter { $0.role == .cloud }.sorted {
            ($0.cloudVersion ?? 0) != ($1.cloudVersion ?? 0)
                ? ($0.cloudVersion ?? 0) > ($1.cloudVersion ?? 0) : ($0.uuid ?? "") < ($1.uuid ?? "")
        }
        return Layout(
            options: options, appDirectory: appDir, cloudDirectory: cloudDir, preferencesPath: prefsURL,
            stores: local + cloud, cloudContent: content, markers: markers, preferences: preferences,
            leftovers: leftovers, problems: problems, exitStatus: status)
    }

    private static func requireDirectory(_ url: URL, flag: String) throws -> URL {
        guard let status = FileStatus.resolve(url.path) else {
            throw USMError.notFound(path: url.path, what: "folder given with \(flag)")
        }
        guard status.kind == .directory else { throw USMError.wrongKind(path: url.path, expected: "a folder (\(flag))") }
        guard FileManager.default.isReadableFile(atPath: url.path), FileManager.default.isExecutableFile(atPath: url.path) else {
            throw USMError.unreadable(path: url.path, reason: "permission denied")
        }
        return url.standardizedFileURL
    }

    private static func sqliteFiles(in dir: URL, unreadable: UnreadableFolders) -> [String] {
        guard FileStatus.resolve(dir.path)?.kind == .directory else { return [] }
        do {
            return try DirectoryListing.names(dir.path).filter { $0.hasSuffix(".sqlite") && !$0.hasPrefix(".") }
        } catch let error as USMError {
            unreadable.note(dir.path, error.message)
            return []
        } catch {
            return []
        }
    }

    private static func findLeftovers(in dir: URL) -> [Leftover] {
        temporaryStoreNames.compactMap { name in
            let url = dir.appendingPathComponent(name)
            guard FileStatus.lookup(url.path) != nil else { return nil }
            return Leftover(kind: String(name.dropLast(".sqlite".count)), path: url.path)
        }
    }
}
