import Foundation

/// A Mac app's data where it lies (`--mac-app BUNDLE_ID`, `--home DIR`), and how each folder was
/// found, for `status` to say (text and `layout.macApp` in JSON).
///
/// Where a Mac app keeps things (UbiquityStoreManager's `A` on macOS, the app's defaults domain,
/// the ubiquity container `C`):
/// - sandboxed: `~/Library/Containers/<id>/Data/Library/Application Support/<id>/` and
///   `~/Library/Containers/<id>/Data/Library/Preferences/<id>.plist`;
/// - not sandboxed: `~/Library/Application Support/<id>/` and `~/Library/Preferences/<id>.plist`;
/// - both: `~/Library/Mobile Documents/<TEAM>~<id with . as ~>/`, outside any sandbox. The
///   preferences' cached StoreUUID keys name it by its full path, so it is matched by them first
///   (the container identifier may differ from the bundle ID), then by the bundle ID.
public struct MacApp: Sendable, Encodable, Equatable {
    /// One folder or file looked for: where it was found (null when not) and how.
    public struct Found: Sendable, Encodable, Equatable {
        /// The path used, null when nothing was found.
        @NullEncoded public var path: String?
        /// How it was found, or what was looked at when it was not.
        public let how: String
    }

    /// The bundle ID given with `--mac-app`.
    public let bundleID: String
    /// The home folder searched (`--home`, default `$HOME`).
    public let home: String
    /// True when the app has a sandbox container (`~/Library/Containers/<id>/Data`).
    public let sandboxed: Bool
    /// The app folder (UbiquityStoreManager's `A`: the local store and `CloudStore/`).
    public let appFolder: Found
    /// The app's preferences plist.
    public let preferences: Found
    /// The ubiquity container in `~/Library/Mobile Documents`.
    public let cloudFolder: Found
    /// What else was seen and not used (a folder of the other kind, several candidates).
    public let notes: [String]
    /// The folder the app's preferences live in, when it exists (also when no plist is there).
    let preferencesFolder: String?

    enum CodingKeys: String, CodingKey {
        case bundleID, home, sandboxed, appFolder, preferences, cloudFolder, notes
    }

    /// True for a bundle ID the search can use as a folder name.
    public static func isValidBundleID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 255 && !id.hasPrefix(".") && !id.contains("..")
            && id.unicodeScalars.allSatisfy {
                CharacterSet.alphanumerics.contains($0) || $0 == "." || $0 == "-" || $0 == "_"
            }
    }

    /// The ubiquity container's folder name suffix for a bundle ID: `~com~example~notes`.
    static func containerSuffix(_ bundleID: String) -> String {
        "~" + bundleID.replacingOccurrences(of: ".", with: "~")
    }
}

/// Looks for a Mac app's folders below a home folder. Lists folders and reads the preferences'
/// keys; never writes, never follows a symlink out of the home folder's `Library`.
struct MacAppSearch {
    let bundleID: String
    let home: URL
    let storeName: String
    /// Folders the search could not list: reported with the layout, not taken for empty.
    let unreadable = UnreadableFolders()

    private var library: URL { home.appendingPathComponent("Library", isDirectory: true) }
    private var containerData: URL {
        library.appendingPathComponent("Containers/\(bundleID)/Data", isDirectory: true)
    }

    /// Runs the search; `readCacheKeys` gives the cached StoreUUID keys of a preferences file.
    func run(readCacheKeys: (URL) -> [String]) -> MacApp {
        var notes: [String] = []
        let sandboxed = isDirectory(containerData)
        let base = sandboxed ? containerData : home
        let plainSupport = library.appendingPathComponent("Application Support/\(bundleID)", isDirectory: true)
        if sandboxed, isDirectory(plainSupport) {
            notes.append(
                "\(plainSupport.path) also exists (from a version of the app before its sandbox?); the sandbox's folder is used"
            )
        }
        let appFolder = findAppFolder(base: base, sandboxed: sandboxed, notes: &notes)
        let preferencesFolder = base.appendingPathComponent("Library/Preferences", isDirectory: true)
        let plist = preferencesFolder.appendingPathComponent("\(bundleID).plist")
        let preferences: MacApp.Found =
            FileStatus.lookup(plist.path) != nil
            ? .init(
                path: plist.path,
                how: sandboxed
                    ? "the sandbox's preferences (Data/Library/Preferences/\(bundleID).plist)"
                    : "the user's preferences (Library/Preferences/\(bundleID).plist)")
            : .init(path: nil, how: "no \(plist.path)")
        let cacheKeys = preferences.path.map { readCacheKeys(URL(fileURLWithPath: $0)) } ?? []
        let cloudFolder = findCloudFolder(cacheKeys: cacheKeys, notes: &notes)
        return MacApp(
            bundleID: bundleID, home: home.path, sandboxed: sandboxed, appFolder: appFolder, preferences: preferences,
            cloudFolder: cloudFolder, notes: notes,
            preferencesFolder: isDirectory(preferencesFolder) ? preferencesFolder.path : nil)
    }

    /// UbiquityStoreManager's app folder on macOS: `Application Support/<bundle ID>` (in the
    /// sandbox when there is one); else, in a sandbox (which holds only this app's folders), the
    /// one folder holding the store or `CloudStore/`, or `Application Support` itself; outside a
    /// sandbox, a folder named after the bundle ID's last part holding them.
    private func findAppFolder(base: URL, sandboxed: Bool, notes: inout [String]) -> MacApp.Found {
        let support = base.appendingPathComponent("Library/Application Support", isDirectory: true)
        let named = support.appendingPathComponent(bundleID, isDirectory: true)
        let place = sandboxed ? "the sandbox's Application Support" : "Application Support"
        if holdsStores(named) {
            return .init(
                path: named.path, how: "\(place)/\(bundleID), where UbiquityStoreManager keeps its stores on macOS")
        }
        var candidates: [URL] = []
        if sandboxed {
            candidates = unreadable.children(support).map { support.appendingPathComponent($0, isDirectory: true) }
                .filter(holdsStores)
            if holdsStores(support) { candidates.append(support) }
        } else if let last = bundleID.split(separator: ".").last, String(last) != bundleID {
            let byName = support.appendingPathComponent(String(last), isDirectory: true)
            if holdsStores(byName) { candidates.append(byName) }
        }
        if candidates.count == 1 {
            return .init(
                path: candidates[0].path, how: "the only folder in \(place) holding \(storeName).sqlite or CloudStore/")
        }
        if candidates.count > 1 {
            notes.append(
                "several folders hold stores (\(candidates.map(\.lastPathComponent).joined(separator: ", "))): give the app folder with --app-dir"
            )
            return .init(path: nil, how: "several candidates in \(support.path)")
        }
        if isDirectory(named) {
            return .init(path: named.path, how: "\(place)/\(bundleID) (it holds no store yet)")
        }
        return .init(path: nil, how: "no \(named.path) holding \(storeName).sqlite or CloudStore/")
    }

    /// The ubiquity container in `~/Library/Mobile Documents`: the folder the preferences' cached
    /// StoreUUID keys name (their path before `/CloudLogs/`, on this Mac or another device), else
    /// the only folder named `<TEAM>~<bundle~id>`.
    private func findCloudFolder(cacheKeys: [String], notes: inout [String]) -> MacApp.Found {
        let mobile = library.appendingPathComponent("Mobile Documents", isDirectory: true)
        let named = Set(
            cacheKeys.compactMap { key -> String? in
                guard let range = key.range(of: Preferences.cacheKeyMarker, options: .backwards) else { return nil }
                let name = URL(fileURLWithPath: String(key[..<range.lowerBound])).lastPathComponent
                return name.isEmpty || name == "/" ? nil : name
            })
        let byKey = named.sorted().map { mobile.appendingPathComponent($0, isDirectory: true) }.filter(isDirectory)
        if byKey.count == 1 {
            return .init(
                path: byKey[0].path,
                how: "named by the cached StoreUUID key in the preferences (\(byKey[0].lastPathComponent))")
        }
        if byKey.count > 1 {
            notes.append(
                "the preferences' cached StoreUUID keys name several containers (\(byKey.map(\.lastPathComponent).joined(separator: ", "))): give one with --cloud-dir"
            )
            return .init(path: nil, how: "several containers named by the preferences")
        }
        let suffix = MacApp.containerSuffix(bundleID)
        let bySuffix = unreadable.children(mobile).filter { $0.hasSuffix(suffix) }.map {
            mobile.appendingPathComponent($0, isDirectory: true)
        }
        .filter(isDirectory)
        if !named.isEmpty {
            notes.append(
                "the preferences' cached StoreUUID keys name \(named.sorted().joined(separator: ", ")), which is not in \(mobile.path)"
            )
        }
        if bySuffix.count == 1 {
            return .init(path: bySuffix[0].path, how: "named after the bundle ID (<TEAM>\(suffix))")
        }
        if bySuffix.count > 1 {
            notes.append(
                "several containers end in \(suffix) (\(bySuffix.map(\.lastPathComponent).joined(separator: ", "))): give one with --cloud-dir"
            )
            return .init(path: nil, how: "several containers named after the bundle ID")
        }
        return .init(
            path: nil,
            how:
                "no folder in \(mobile.path) named by the preferences or ending in \(suffix) (the Mac is not signed in to iCloud, or the app never used it)"
        )
    }

    private func isDirectory(_ url: URL) -> Bool { FileStatus.lookup(url.path)?.kind == .directory }

    private func holdsStores(_ dir: URL) -> Bool {
        isDirectory(dir)
            && (FileStatus.lookup(dir.appendingPathComponent(storeName + ".sqlite").path) != nil
                || isDirectory(dir.appendingPathComponent("CloudStore", isDirectory: true)))
    }
}

extension Discovery {
    /// `--mac-app`: the app's folders below the home folder, with the problems met on the way.
    /// - Throws: `notFound`/`wrongKind` for a home folder that is not there.
    mutating func findMacApp(_ bundleID: String) throws -> MacApp {
        let home = try Self.requireDirectory(options.homeFolder, flag: "--home")
        let search = MacAppSearch(bundleID: bundleID, home: home, storeName: options.storeName)
        let found = search.run { url in (try? Preferences.read(url))?.cachedStoreUUIDs.map(\.key) ?? [] }
        for (path, reason) in search.unreadable.items {
            problems.append(Problem(.unreadable, "cannot search \(path) for the app's data: \(reason)", subject: path))
            status = status.worst(.ioError)
        }
        reportLinks(in: found, home: home)
        if found.appFolder.path == nil, found.cloudFolder.path == nil, found.preferences.path == nil,
            options.appDirectory == nil, options.cloudDirectory == nil, options.preferences == nil
        {
            problems.append(
                Problem(
                    .layoutNotFound,
                    "no data of the Mac app \(bundleID) found below \(home.path): \(found.appFolder.how); \(found.preferences.how)",
                    subject: home.path))
            // Nothing of the app named: a clear not-found (66), never a report of an empty layout.
            status = status.worst(.notFound)
        }
        return found
    }

    /// Every folder on the way from the home folder to what the search found (`Library`,
    /// `Library/Containers`, `Library/Mobile Documents`..., and the app folder, preferences and
    /// ubiquity container themselves), checked as the folders of a download are: a symlink leading
    /// out of the home folder is reported (`symlink-escapes`, exit 3; README), so that no command
    /// reads or changes another folder through it (changing commands refuse, naming it).
    private mutating func reportLinks(in found: MacApp, home: URL) {
        let confinement = Confinement(root: home)
        let homeParts = FileSystemPath.components(home.path).count
        var seen = Set<[UInt8]>()
        // What a flag names instead (`--app-dir`, `--prefs`, `--cloud-dir`) is not reached through the search.
        let targets = [
            options.appDirectory == nil ? found.appFolder.path : nil,
            options.preferences == nil ? found.preferences.path ?? found.preferencesFolder : nil,
            options.cloudDirectory == nil ? found.cloudFolder.path : nil,
        ]
        for target in targets.compactMap({ $0 }) where Confinement.isInside(target, home.path) {
            var current = home.path
            for part in FileSystemPath.components(target).dropFirst(homeParts) {
                current += (current.hasSuffix("/") ? "" : "/") + part
                guard seen.insert(current.pathKey).inserted else { continue }
                guard let item = FileStatus.lookup(current) else { break }
                guard item.kind == .symlink else { continue }
                let url = URL(fileURLWithPath: current)
                guard !confinement.contains(url) else { continue }
                let error = USMError.symlinkEscapes(
                    path: current, target: url.resolvingSymlinksInPath().path, root: home.path)
                problems.append(Problem(.symlinkEscapes, error.message, subject: current))
                status = status.worst(.refused)
                break
            }
        }
    }
}
