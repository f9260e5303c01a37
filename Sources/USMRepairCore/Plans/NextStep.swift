import Foundation

/// What the user does after a changing command: which folder goes back to the device and how,
/// and which part (the ubiquity container) must be changed on the customer's Mac instead. Ends
/// every operation's report (`nextStep` in JSON).
///
/// A container reaches usm-repair in one of four ways, and goes back the same way:
/// - an Xcode download (`.xcappdata`): Xcode's Devices window, "Replace Container…", which works
///   for development-signed builds only; Core Data's copies live in the peer folder of the build
///   that made them, so the same kind of build must open them;
/// - a device backup extracted with a backup tool (`AppDomain-<bundle ID>` folders): put back into
///   the backup with that tool, and the backup restored to the device;
/// - an app's own diagnostics export, or any other folder: returned the way it came;
/// - a Mac app in place (`--mac-app`): nothing to send; the app reads the files at its next launch.
/// The ubiquity container never travels with the app's folder: it lies outside the sandbox and
/// iCloud syncs it. A change made to a copy of it reaches no device; it must be made on a Mac
/// signed in to the customer's account, where iCloud uploads it to every device.
public enum NextStep {
    /// How the data reached usm-repair, as far as the folders tell.
    public enum Arrival: String, Sendable, Codable {
        /// `--mac-app`: the app's folders in place on this Mac.
        case macApp = "mac-app"
        /// An Xcode download (`.xcappdata`, or a folder holding `AppData/`).
        case xcode
        /// A device backup extracted with a backup tool (a folder named `AppDomain-<bundle ID>`).
        case backup
        /// Any other folder: an app's diagnostics export, a copy.
        case folder
    }

    /// The way back for each way a container arrives (`usm-repair help next-steps`).
    public static let guide = """
        Returning the fix to the device. Every changing command ends its report with the next step
        (nextStep in JSON); how the folder goes back depends on how it came:

          Xcode download (.xcappdata): Xcode, Window > Devices and Simulators, the device, the app,
            then Replace Container... with the repaired .xcappdata. Development-signed builds only
            (an App Store or TestFlight build's container cannot be replaced). Core Data keeps its
            copies of the cloud stores in the peer folder of the build that made them
            (CloudStore/CoreDataUbiquitySupport/<peer>/): open them with the same kind of build.
          Device backup extracted with a backup tool (AppDomain-<bundle id>): put the folder back
            into the backup with that tool, then restore the backup to the device.
          An app's own diagnostics export, or any other copy: back the way it came (the app's
            import, if it has one); otherwise the fix applies to this copy only.
          A Mac app in place (--mac-app): nothing to send; quit the app before the change, start it
            after. iCloud uploads what changed in ~/Library/Mobile Documents to every device.

        The ubiquity container (Mobile Documents/<TEAM>~<bundle~id>) never travels with the app's
        folder: it lies outside the sandbox and iCloud syncs it, so a change to a copy of it reaches
        no device. Make that change on a Mac signed in to the customer's iCloud account, with the
        app quit: usm-repair <command> --mac-app <bundle id> --yes. A deletion there reaches every
        device (that is how delete container acts everywhere).
        """

    /// The folders a plan works in, as layout options (for a plan made from a snapshot, whose
    /// roots are the only record of where the data lies).
    public static func options(of plan: Plan) -> LayoutOptions {
        func root(_ name: String) -> URL? {
            plan.roots.first { $0.name == name }.map { URL(fileURLWithPath: $0.path, isDirectory: true) }
        }
        let app = root("app") ?? root("preferences") ?? root("container")
        // The download the snapshot's folders lie in (`.xcappdata`, a backup's `AppDomain-...`):
        // what goes back to the device, not the deepest folder the plan works in.
        var container = root("container")
        if container == nil, let app {
            var folder = app.standardizedFileURL
            while folder.pathComponents.count > 1 {
                let name = folder.lastPathComponent
                if name.hasSuffix(".xcappdata") || name.hasPrefix("AppDomain-") {
                    container = folder
                    break
                }
                folder = folder.deletingLastPathComponent()
            }
        }
        return LayoutOptions(appDirectory: app, cloudDirectory: root("cloud"), container: container)
    }

    /// How the layout's data arrived.
    public static func arrival(_ options: LayoutOptions, home: String = NSHomeDirectory()) -> Arrival {
        if options.macApp != nil { return .macApp }
        let folders = [options.container, options.appDirectory, options.preferences].compactMap { $0 }
        // A Mac app's own folders, named with --app-dir: `~/Library/Application Support/...` or
        // a sandbox's `~/Library/Containers/...`.
        let library = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent("Library").path
        if !folders.isEmpty,
            folders.allSatisfy({ path in
                ["Application Support", "Containers", "Preferences"].contains {
                    Confinement.isInside(path.path, library + "/" + $0)
                }
            })
        {
            return .macApp
        }
        if folders.contains(where: { $0.pathComponents.contains { $0.hasPrefix("AppDomain-") } }) { return .backup }
        if let container = options.container,
            container.pathExtension == "xcappdata"
                || FileStatus.lookup(container.appendingPathComponent("AppData").path)?.kind == .directory
        {
            return .xcode
        }
        if folders.contains(where: { $0.pathComponents.contains { $0.hasSuffix(".xcappdata") } }) { return .xcode }
        return .folder
    }

    /// The next step after `plan` ran (or, in a dry run, would run) on the layout `options` names.
    public static func describe(_ plan: Plan, options: LayoutOptions, preferencesPath: URL?, dryRun: Bool) -> String {
        if plan.isNoOp { return "Nothing was changed, so nothing needs to go back to the device." }
        var touched: Set<String> = []
        for step in plan.steps {
            switch step.action {
            case let .install(_, path, _), let .retire(path, _):
                if let root = plan.root(of: path) { touched.insert(root.name) }
            default: break
            }
        }
        let local = touched.contains("app") || touched.contains("preferences")
        let cloud = touched.contains("cloud")
        let cloudFolder = plan.roots.first { $0.name == "cloud" }?.path ?? "the ubiquity container"
        var sentences: [String] = []
        let arrival = arrival(options)
        let folder = (options.container ?? options.appDirectory ?? options.preferences?.deletingLastPathComponent())?
            .path
        switch arrival {
        case .macApp:
            sentences.append(
                "Nothing to send back: the app reads the repaired files at its next launch on this Mac (start it once usm-repair has finished)."
            )
            if cloud {
                sentences.append(
                    "iCloud uploads what changed in \(cloudFolder) to every device signed in to the account, so the change reaches them all."
                )
            }
        case .xcode where local:
            sentences.append(
                "Send \(folder ?? "the download") back to the device with Xcode: Window > Devices and Simulators, select the app, then Replace Container… and choose it. This works for development-signed builds only, and Core Data's copies of the cloud stores live in the peer folder of the build that made them: open it with the same kind of build."
            )
        case .backup where local:
            sentences.append(
                "Put \(folder ?? "the folder") back into the device backup with the backup tool it was extracted with, then restore that backup to the device."
            )
        case .folder where local:
            sentences.append(
                "Return \(folder ?? "the folders") the way they came (an app's own diagnostics export goes back through the app's import, if it has one; otherwise the change applies only to this copy)."
            )
        default:
            break
        }
        if cloud, arrival != .macApp {
            let bundleID =
                options.preferences?.deletingPathExtension().lastPathComponent
                ?? preferencesPath?.deletingPathExtension().lastPathComponent ?? "BUNDLE_ID"
            let how =
                plan.operation == "restore"
                ? "put back there what the change had changed, with the app quit"
                : "quit the app there and run usm-repair \(plan.operation) --mac-app \(bundleID) --yes"
            sentences.append(
                "The ubiquity container \(cloudFolder) was changed here, but it does not travel with the app's folder: iCloud syncs it, and a copy reaches no device. Make the same change on the customer's Mac, signed in to their iCloud account: \(how); iCloud then uploads it to every device."
            )
        }
        if sentences.isEmpty { sentences.append("Return the changed folders the way they came.") }
        return (dryRun ? "After running it: " : "") + sentences.joined(separator: " ")
    }
}
