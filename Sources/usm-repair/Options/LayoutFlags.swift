import ArgumentParser
import Foundation
import USMRepairCore

/// The flags that name an app's data; shared by every command that works on a layout.
struct LayoutFlags: ParsableArguments {
    @Option(
        name: .customLong("container"),
        help: ArgumentHelp(
            "An app container download (Xcode .xcappdata, sandbox or Mac data folder) to search.", valueName: "dir"),
        completion: .directory)
    var container: String?

    @Option(
        name: .customLong("mac-app"),
        help: ArgumentHelp(
            "A Mac app's bundle ID: find its app folder, preferences and ubiquity container in place in the user's Library (sandboxed or not).",
            valueName: "bundle-id"))
    var macApp: String?

    @Option(
        name: .customLong("home"),
        help: ArgumentHelp(
            "With --mac-app: the home folder whose Library is searched (default $HOME; a copied Library works too).",
            valueName: "dir"),
        completion: .directory)
    var home: String?

    @Option(
        name: .customLong("app-dir"),
        help: ArgumentHelp(
            "The app container folder holding <store-name>.sqlite and CloudStore/ (iOS: Library/Application Support).",
            valueName: "dir"), completion: .directory)
    var appDir: String?

    @Option(
        name: .customLong("cloud-dir"),
        help: ArgumentHelp(
            "The ubiquity container holding CloudLogs/ (and CloudStore.nosync/ for cloud version 0).", valueName: "dir"),
        completion: .directory)
    var cloudDir: String?

    @Option(
        name: .customLong("store-name"),
        help: ArgumentHelp(
            "The store's content name, without .sqlite.", valueName: "name"))
    var storeName: String = LayoutOptions.defaultStoreName

    @Option(
        name: .customLong("prefs"),
        help: ArgumentHelp(
            "The app's preferences plist (binary or XML) holding USMCloudEnabledKey.", valueName: "file"),
        completion: .file(extensions: ["plist"]))
    var prefs: String?

    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "Inspect a single store file instead of a layout.", valueName: "file"), completion: .file())
    var store: String?

    @Option(
        name: .customLong("document"),
        help: ArgumentHelp(
            "Inspect a UIManagedDocument package (a folder holding StoreContent/) instead of a layout.",
            valueName: "dir"),
        completion: .directory)
    var document: String?

    func validate() throws {
        do { try options(PathResolver.live(environment: [:])).validate() } catch let error as USMError {
            throw ValidationError(error.message)
        }
    }

    /// The core's view of these flags, their paths resolved by `paths`.
    func options(_ paths: PathResolver) -> LayoutOptions {
        func url(_ path: String?, directory: Bool = false) -> URL? {
            path.map { paths.url($0, directory: directory) }
        }
        return LayoutOptions(
            appDirectory: url(appDir, directory: true), cloudDirectory: url(cloudDir, directory: true),
            storeName: storeName,
            preferences: url(prefs), container: url(container, directory: true), store: url(store),
            document: url(document, directory: true), macApp: macApp,
            // `--home`, else the context's `HOME` (README: default `$HOME`), else the process's.
            home: url(home, directory: true)
                ?? (macApp == nil ? nil : paths.home.map { URL(fileURLWithPath: $0, isDirectory: true) }))
    }
}
