import Foundation

/// Where an app's UbiquityStoreManager data lies, as the user named it on the command line.
/// Every read-only and destructive command takes the same options.
public struct LayoutOptions: Sendable, Equatable {
    /// The app container folder (`Library/Application Support` on iOS): the local store and `CloudStore/`.
    public var appDirectory: URL?
    /// The ubiquity container: `CloudLogs/` and, for cloud version 0, `CloudStore.nosync/`.
    public var cloudDirectory: URL?
    /// The content name, i.e. the local store's name without `.sqlite` (USM default `UbiquityStore`).
    public var storeName: String
    /// The app's preferences plist holding `USMCloudEnabledKey`.
    public var preferences: URL?
    /// An app container download (an Xcode `.xcappdata`, a sandbox, a Mac data folder) to search.
    public var container: URL?
    /// A single store to inspect instead of a layout.
    public var store: URL?
    /// A UIManagedDocument package to inspect instead of a layout.
    public var document: URL?
    /// A Mac app's bundle ID (`--mac-app`): its folders are found in place below `home`.
    public var macApp: String?
    /// The home folder a Mac app's data is found below (`--home`); nil for the process's own.
    public var home: URL?

    /// The default content name of UbiquityStoreManager.
    public static let defaultStoreName = "UbiquityStore"

    /// Creates options; at least one location must be given (see `validate`).
    public init(
        appDirectory: URL? = nil, cloudDirectory: URL? = nil, storeName: String = LayoutOptions.defaultStoreName,
        preferences: URL? = nil, container: URL? = nil, store: URL? = nil, document: URL? = nil,
        macApp: String? = nil, home: URL? = nil
    ) {
        self.appDirectory = appDirectory
        self.cloudDirectory = cloudDirectory
        self.storeName = storeName
        self.preferences = preferences
        self.container = container
        self.store = store
        self.document = document
        self.macApp = macApp
        self.home = home
    }

    /// The home folder a Mac app's data is found below: `--home`, else the process's own.
    public var homeFolder: URL {
        home ?? URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true)
    }

    /// Checks that the options name something coherent.
    public func validate() throws {
        if store != nil, document != nil {
            throw USMError.usage("--store and --document each name one thing to inspect; give one of them")
        }
        if store != nil || document != nil, appDirectory != nil || cloudDirectory != nil || container != nil {
            throw USMError.usage(
                "--\(store != nil ? "store" : "document") inspects one \(store != nil ? "store" : "document"); it cannot be combined with --app-dir, --cloud-dir or --container"
            )
        }
        if let macApp {
            guard MacApp.isValidBundleID(macApp) else {
                throw USMError.usage(
                    "--mac-app takes a bundle ID such as com.example.notes (letters, digits, '.', '-', '_'), not '\(macApp)'"
                )
            }
            if store != nil || document != nil || container != nil {
                throw USMError.usage(
                    "--mac-app finds the app's folders in place; it cannot be combined with --container, --store or --document"
                )
            }
        } else if home != nil {
            throw USMError.usage("--home goes with --mac-app")
        }
        if store == nil, document == nil, appDirectory == nil, cloudDirectory == nil, container == nil, macApp == nil {
            throw USMError.usage(
                "name what to inspect: --container DIR, --mac-app BUNDLE_ID, --app-dir DIR and/or --cloud-dir DIR, --store FILE or --document DIR"
            )
        }
        if storeName.isEmpty || storeName.contains("/") || storeName.hasPrefix(".") {
            throw USMError.usage("--store-name must be a plain file name without .sqlite (got '\(storeName)')")
        }
    }
}

extension LayoutOptions {
    /// The flags that name this layout again, for advice such as "run usm-repair check <flags>".
    public var commandLineFlags: String {
        func quoted(_ url: URL) -> String { ShellWords.quote(url.path) }
        var parts: [String] = []
        if let store { parts.append("--store \(quoted(store))") }
        if let document { parts.append("--document \(quoted(document))") }
        if let container { parts.append("--container \(quoted(container))") }
        if let macApp { parts.append("--mac-app \(ShellWords.quote(macApp))") }
        if let home { parts.append("--home \(quoted(home))") }
        if let appDirectory { parts.append("--app-dir \(quoted(appDirectory))") }
        if let cloudDirectory { parts.append("--cloud-dir \(quoted(cloudDirectory))") }
        if let preferences { parts.append("--prefs \(quoted(preferences))") }
        if storeName != LayoutOptions.defaultStoreName { parts.append("--store-name \(ShellWords.quote(storeName))") }
        return parts.joined(separator: " ")
    }
}
