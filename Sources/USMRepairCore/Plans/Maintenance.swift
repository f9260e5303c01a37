import Foundation

/// What the user asked for: one of UbiquityStoreManager's maintenance operations, done offline.
/// `Planner` turns it into a `Plan` whose end state is the one usm-behaviour.md §5 fixes.
public enum Maintenance: Sendable, Codable, Equatable {
    /// Everything in the ubiquity container removed, and this device's copies of its stores and the
    /// cached StoreUUIDs (`localOnly`: only this device's copies and the cache; the container stays).
    case deleteContainer(localOnly: Bool)
    /// One cloud store removed: its logs, markers naming it, copies, the cache (`localOnly`: only
    /// this device's copy, so Core Data rebuilds it from the logs).
    case deleteCloudStore(uuid: String?, localOnly: Bool, copy: CopyChoice, withOlderMarkers: Bool)
    /// The local store's whole file set removed.
    case deleteLocalStore
    /// The active cloud store's data into the local store (replaced, or merged with `merge`); iCloud off.
    /// `salvage`: a damaged copy is read by salvage's reader instead of being refused (`--salvage`).
    case migrateCloudToLocal(
        uuid: String?, strategy: StrategyChoice, merge: Bool, copy: CopyChoice, salvage: SalvageChoice? = nil)
    /// The state in which the app seeds a new cloud store from the local store at its next launch
    /// (`rebuild --from local`, or `migrate local-to-cloud` when `asMigrate`). `salvage`: a damaged
    /// local store is replaced by its salvaged copy instead of being refused (`--salvage`).
    case rebuildFromLocal(
        keepOld: Bool, withOlderMarkers: Bool, asMigrate: Bool = false, salvage: SalvageChoice? = nil)
    /// The active cloud store's data into the local store, then as `rebuildFromLocal`.
    case rebuildFromCloud(
        strategy: StrategyChoice, copy: CopyChoice, keepOld: Bool, withOlderMarkers: Bool, merge: Bool = false)
    /// The active store marked corrupt so that the app rebuilds it from its own copy 30 s after launch.
    case rebuildInApp(copy: CopyChoice)
    /// Another cloud store made active.
    case switchActive(uuid: String)
    /// iCloud on or off (`USMCloudEnabledKey`).
    case setCloud(enabled: Bool)
    /// `CorruptedUUID` written (default: the active store).
    case markCorruption(uuid: String?)
    /// Every `CorruptedUUID` marker removed.
    case clearCorruption

    /// The command's path, without flags (`delete container`, `rebuild`): the JSON `command`.
    public var commandPath: String {
        switch self {
        case .deleteContainer: "delete container"
        case .deleteCloudStore: "delete cloud-store"
        case .deleteLocalStore: "delete local-store"
        case .migrateCloudToLocal: "migrate cloud-to-local"
        case let .rebuildFromLocal(_, _, asMigrate, _): asMigrate ? "migrate local-to-cloud" : "rebuild"
        case .rebuildFromCloud, .rebuildInApp: "rebuild"
        case .switchActive: "switch"
        case let .setCloud(enabled): "cloud \(enabled ? "enable" : "disable")"
        case .markCorruption: "corruption mark"
        case .clearCorruption: "corruption clear"
        }
    }

    /// True for the operations whose purpose is the state in which the app seeds a new cloud store
    /// from the local store: they clear what would spoil that seeding even when nothing else is left to do.
    public var preparesSeeding: Bool {
        switch self {
        case .rebuildFromLocal, .rebuildFromCloud: true
        default: false
        }
    }

    /// The command as typed (with the flags that choose what it does), for reports, journals and snapshots.
    public var command: String {
        switch self {
        case let .deleteContainer(localOnly): "delete container" + (localOnly ? " --local-only" : "")
        case let .deleteCloudStore(_, localOnly, _, _): "delete cloud-store" + (localOnly ? " --local-only" : "")
        case .deleteLocalStore: "delete local-store"
        case let .migrateCloudToLocal(_, _, merge, _, salvage):
            "migrate cloud-to-local" + (merge ? " --merge" : "") + (salvage != nil ? " --salvage" : "")
        case let .rebuildFromLocal(_, _, asMigrate, salvage):
            (asMigrate ? "migrate local-to-cloud" : "rebuild --from local") + (salvage != nil ? " --salvage" : "")
        case let .rebuildFromCloud(_, _, _, _, merge): "rebuild --from cloud" + (merge ? " --merge" : "")
        case .rebuildInApp: "rebuild --from cloud --in-app"
        case .switchActive: "switch"
        case let .setCloud(enabled): "cloud \(enabled ? "enable" : "disable")"
        case .markCorruption: "corruption mark"
        case .clearCorruption: "corruption clear"
        }
    }
}

/// A migration strategy as the user chose it (`--strategy`, `--recipe`, `--plugin`, `--param`,
/// `--on-conflict`, `--plugin-timeout`), and, once `StrategyRegistry.resolve` has checked it at
/// planning, as the plan's build step runs it.
public struct StrategyChoice: Sendable, Codable, Equatable {
    /// The strategy; nil until resolved: the one the app's UbiquityStoreManager uses by default
    /// (`appDefault(for:merge:)`) for an operation, `manual` when a recipe or plugin is named.
    public var id: String?
    /// `--recipe NAME|PATH` (manual).
    public var recipe: String?
    /// `--plugin NAME|PATH` (manual).
    public var plugin: String?
    /// `--param KEY=VALUE`.
    public var parameters: [String: String]
    /// `--on-conflict` for merges.
    public var onConflict: ConflictPolicy
    /// `--plugin-timeout`: seconds an external plugin, or one statement of a recipe, may take.
    public var timeout: Double
    /// `--drop-cloudkit`: CloudKit mirroring rows that cannot be carried may be left out (nil: no).
    public var dropCloudKit: Bool?
    /// `--allow-duplicates`: a merge copies objects the destination already holds (nil: no).
    public var allowDuplicates: Bool?

    public init(
        id: String? = nil, recipe: String? = nil, plugin: String? = nil, parameters: [String: String] = [:],
        onConflict: ConflictPolicy = .refuse, timeout: Double = 600, dropCloudKit: Bool = false
    ) {
        self.id = id
        self.recipe = recipe
        self.plugin = plugin
        self.parameters = parameters
        self.onConflict = onConflict
        self.timeout = timeout
        self.dropCloudKit = dropCloudKit ? true : nil
    }

    /// The strategy UbiquityStoreManager picks when the app sets none (usm-behaviour.md §2,
    /// `.m:210-211`): `ios` (a whole-store `migratePersistentStore:`) on an iOS 7+ device (cloud
    /// version 1: the store is a Core Data copy under `CoreDataUbiquitySupport`), `copy-entities` on
    /// an iOS 6 device (version 0, `CloudStore.nosync`), and for a merge, which `ios` cannot do.
    public static func appDefault(for source: Layout.StoreEntry, merge: Bool) -> String {
        merge || source.location == .nosync ? "copy-entities" : "ios"
    }

    /// The strategy this choice runs: its own id, else `manual` when it names a recipe or plugin,
    /// else `defaultID`. The one place a strategy left unnamed is decided: at planning
    /// (`StrategyRegistry.resolve`, with the command's default), for `migrate-store`'s request
    /// and in a build step (`StoreBuilder`).
    public func resolvedID(default defaultID: String = StrategyRegistry.defaultID) -> String {
        id ?? (recipe != nil || plugin != nil ? "manual" : defaultID)
    }

    /// `migrate-store`'s default in words, for its help and `strategies`.
    public static let migrateStoreDefaultRule = "\(StrategyRegistry.defaultID), into a new store or with --into"

    /// `appDefault` in words, for help and `strategies`.
    public static let appDefaultRule =
        "the strategy the app's UbiquityStoreManager uses when it sets none: ios from an iOS 7+ copy (cloud version 1), copy-entities from an iOS 6 store (CloudStore.nosync) and with --merge"

    /// The options the migration engine runs the strategy with.
    public func options(
        keepUbiquityMetadata: Bool, recipeSearchPath: [URL], environment: [String: String],
        operation: String = "migrate-store"
    ) -> MigrationOptions {
        var options = MigrationOptions(
            recipe: recipe, plugin: plugin, parameters: parameters, onConflict: onConflict,
            keepUbiquityMetadata: keepUbiquityMetadata,
            pluginTimeout: timeout, recipeSearchPath: recipeSearchPath, environment: environment)
        options.operation = operation
        options.dropCloudKit = dropCloudKit ?? false
        options.allowDuplicates = allowDuplicates ?? false
        return options
    }
}

/// What the user allows an operation to do to the data, beyond what its command says: every loss or
/// duplication a plan would cause needs one of these, named in the refusal (`--replace`,
/// `--discard-cloud`, `--allow-duplicates`).
public struct DataConsent: Sendable, Codable, Equatable {
    /// Replace a local store that holds objects the incoming data lacks (or that cannot be compared).
    public var replace: Bool
    /// Abandon an active cloud store that holds objects the local store lacks (the app seeds a new one from the local store).
    public var discardCloud: Bool
    /// Merge objects the destination already holds.
    public var allowDuplicates: Bool

    public init(replace: Bool = false, discardCloud: Bool = false, allowDuplicates: Bool = false) {
        self.replace = replace
        self.discardCloud = discardCloud
        self.allowDuplicates = allowDuplicates
    }
}

/// `--salvage` (and `--schema-from`): a damaged store the operation reads is read by salvage's own
/// reader into a private store, and the operation builds from that copy instead of refusing.
public struct SalvageChoice: Sendable, Codable, Equatable {
    /// A healthy store of the same model (`--schema-from`): the tables, entities and metadata the
    /// damaged store lost.
    public var schemaFrom: String?

    public init(schemaFrom: String? = nil) {
        self.schemaFrom = schemaFrom
    }
}

/// Which copy of a cloud store, when this device holds several (`--peer`, `--account`).
public struct CopyChoice: Sendable, Codable, Equatable {
    public var peer: String?
    public var account: String?

    public init(peer: String? = nil, account: String? = nil) {
        self.peer = peer
        self.account = account
    }
}

extension Maintenance {
    /// The words to type for this request, without the layout flags (`rebuild --from local
    /// --keep-old`, `switch <UUID>`), with `consent`'s flags: what the advice prints and verifies.
    public func commandLine(consent: DataConsent = DataConsent()) -> String {
        var words: [String]
        func copyFlags(_ copy: CopyChoice) {
            if let peer = copy.peer { words += ["--peer", peer] }
            if let account = copy.account { words += ["--account", account] }
        }
        func strategyFlags(_ strategy: StrategyChoice) {
            if let id = strategy.id { words += ["--strategy", id] }
            if let recipe = strategy.recipe { words += ["--recipe", recipe] }
            if let plugin = strategy.plugin { words += ["--plugin", plugin] }
        }
        func salvageFlags(_ salvage: SalvageChoice?) {
            guard let salvage else { return }
            words.append("--salvage")
            if let schemaFrom = salvage.schemaFrom { words += ["--schema-from", schemaFrom] }
        }
        switch self {
        case let .deleteContainer(localOnly):
            words = ["delete", "container"] + (localOnly ? ["--local-only"] : [])
        case let .deleteCloudStore(uuid, localOnly, copy, older):
            words = ["delete", "cloud-store"]
            if let uuid { words += ["--uuid", uuid] }
            if localOnly { words.append("--local-only") }
            copyFlags(copy)
            if older { words.append("--with-older-markers") }
        case .deleteLocalStore:
            words = ["delete", "local-store"]
        case let .migrateCloudToLocal(uuid, strategy, merge, copy, salvage):
            words = ["migrate", "cloud-to-local"] + (merge ? ["--merge"] : [])
            if let uuid { words += ["--uuid", uuid] }
            copyFlags(copy)
            strategyFlags(strategy)
            salvageFlags(salvage)
        case let .rebuildFromLocal(keepOld, older, asMigrate, salvage):
            words = asMigrate ? ["migrate", "local-to-cloud"] : ["rebuild", "--from", "local"]
            if keepOld { words.append("--keep-old") }
            if older { words.append("--with-older-markers") }
            salvageFlags(salvage)
        case let .rebuildFromCloud(strategy, copy, keepOld, older, merge):
            words = ["rebuild", "--from", "cloud"] + (merge ? ["--merge"] : [])
            copyFlags(copy)
            strategyFlags(strategy)
            if keepOld { words.append("--keep-old") }
            if older { words.append("--with-older-markers") }
        case let .rebuildInApp(copy):
            words = ["rebuild", "--from", "cloud", "--in-app"]
            copyFlags(copy)
        case let .switchActive(uuid):
            words = ["switch", uuid]
        case let .setCloud(enabled):
            words = ["cloud", enabled ? "enable" : "disable"]
        case let .markCorruption(uuid):
            words = ["corruption", "mark"] + (uuid.map { [$0] } ?? [])
        case .clearCorruption:
            words = ["corruption", "clear"]
        }
        if consent.replace { words.append("--replace") }
        if consent.discardCloud { words.append("--discard-cloud") }
        if consent.allowDuplicates { words.append("--allow-duplicates") }
        return words.map(ShellWords.quote).joined(separator: " ")
    }
}

/// Words of a command line as a POSIX shell reads them.
public enum ShellWords {
    /// `word` as one shell word: as it is when nothing in it is special, else in single quotes.
    public static func quote(_ word: String) -> String {
        guard word.isEmpty || word.hasPrefix("~") || word.rangeOfCharacter(from: special) != nil else { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static let special = CharacterSet(charactersIn: " \t\n'\"$`\\!*?&;|<>()[]{}#")

    /// The words of `line` as a POSIX shell splits them (single and double quotes, backslashes);
    /// nil when a quote is left open or the line holds what a shell would read as more than words
    /// (`;`, `|`, `&`, `<`, `>`, `$`, a backquote, outside quotes).
    public static func split(_ line: String) -> [String]? {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for c in line {
            if escaped {
                word.append(c)
                escaped = false
                continue
            }
            switch quote {
            case "'":
                if c == "'" { quote = nil } else { word.append(c) }
                continue
            case "\"":
                if c == "\"" { quote = nil } else if c == "\\" { escaped = true } else { word.append(c) }
                continue
            default:
                break
            }
            switch c {
            case " ", "\t", "\n":
                if inWord { words.append(word) }
                word = ""
                inWord = false
            case "'", "\"":
                quote = c
                inWord = true
            case "\\":
                escaped = true
                inWord = true
            case ";", "|", "&", "<", ">", "$", "`":
                return nil
            default:
                word.append(c)
                inWord = true
            }
        }
        guard quote == nil, !escaped else { return nil }
        if inWord { words.append(word) }
        return words
    }
}
