import Foundation

/// What a changing command will do, as data: the folders it works in, the fingerprint of every
/// path it touches (re-checked before the first change), and ordered steps, each with the reason it
/// is there. `--dry-run` prints it; `PlanExecutor` runs it, journaling every step so that a kill at
/// any moment can be finished or undone (`recover`).
///
/// Steps always come in this order, because each needs the one before:
/// 1. `snapshot` — everything that will change or go is archived outside the layout first;
/// 2. `checkpoint`, `build`, `writeMarker`, `writePreferences` — new files are made in a private
///    staging folder on the same file system as their destination, and verified there;
/// 3. `retire` — what is replaced or deleted is moved aside into the operation's trash;
/// 4. `install` — staged files are renamed into place;
/// 5. `commit` — from here the change is finished, never undone;
/// 6. `purge` — trash, staging, journal and lock are removed.
public struct Plan: Sendable, Codable {
    /// A folder the plan changes things in. Its private folder (`.usm-repair`, or
    /// `.usm-repair.nosync` in the ubiquity container so that nothing of it is uploaded) holds the
    /// lock, and the operation's journal, staging and trash, removed after the run.
    public struct Root: Sendable, Codable, Equatable {
        /// `app`, `cloud` or `preferences`.
        public let name: String
        public let path: String
        /// The private folder's name inside `path`.
        public let privateFolder: String

        public init(name: String, path: String, privateFolder: String) {
            self.name = name
            self.path = path
            self.privateFolder = privateFolder
        }

        /// A plain folder an operation works in (a store's folder for `migrate-store` and
        /// `salvage`, the target of `restore --to`), named after it, with `.usm-repair` inside.
        public static func folder(_ folder: URL) -> Root {
            Root(name: folder.lastPathComponent, path: folder.path, privateFolder: ".usm-repair")
        }

        /// `<root>/<private>`.
        public var privateURL: URL {
            URL(fileURLWithPath: path, isDirectory: true).appendingPathComponent(privateFolder, isDirectory: true)
        }
        /// `<root>/<private>/operations/<id>`.
        public func operationURL(_ id: String) -> URL {
            privateURL.appendingPathComponent("operations/\(id)", isDirectory: true)
        }

        /// `<root>/<private>/operations/<id>/<kind>/<n>/<name>`: the `n`th item of the operation's
        /// `trash` or `staging`, named after what it stands for (every plan constructor's).
        func privatePath(_ id: String, _ kind: String, _ n: Int, _ name: String) -> String {
            operationURL(id).appendingPathComponent("\(kind)/\(n)/\(name)").path
        }

        /// The deepest of `roots` whose folder holds `path`; nil when none does.
        static func deepest(holding path: String, in roots: [Root]) -> Root? {
            roots.filter { FileSystemPath.isInside(path, $0.path) }.max { $0.path.count < $1.path.count }
        }
    }

    /// What a path looked like when the plan was made.
    public struct Fingerprint: Sendable, Codable, Equatable {
        /// `absent`, or the kind of the object (`file`, `directory`, `symlink`...).
        public let kind: String
        public let size: Int64
        public let mtimeNanos: Int64
        public let inode: UInt64

        /// The fingerprints of `paths` now, in one pass.
        public static func all(_ paths: [String]) -> [String: Fingerprint] {
            Dictionary(paths.map { ($0, of($0)) }, uniquingKeysWith: { a, _ in a })
        }

        /// The fingerprint of `path` now.
        public static func of(_ path: String) -> Fingerprint {
            guard let status = FileStatus.lookup(path) else {
                return Fingerprint(kind: "absent", size: 0, mtimeNanos: 0, inode: 0)
            }
            return Fingerprint(
                kind: status.kind.rawValue, size: status.kind == .directory ? 0 : status.size,
                mtimeNanos: status.kind == .directory ? 0 : status.mtime.totalNanoseconds, inode: status.inode)
        }
    }

    /// A store to make in staging from another (a strategy of the migration engine).
    public struct StoreBuild: Sendable, Codable, Equatable {
        /// The source's main file (read through a private, consistent copy of its file set).
        public let source: String
        /// The staged main file.
        public let staged: String
        /// The strategy, resolved at planning (`id` set, its recipe or plugin found).
        public let strategy: StrategyChoice
        /// Merge into a copy of this existing store instead of building a new one.
        public let mergeInto: String?
        /// Keep the source's iCloud metadata (false for a local store: it is stripped).
        public let keepUbiquityMetadata: Bool
        /// The command, recorded in the result's provenance.
        public var operation: String = "migrate-store"
        /// The source is damaged (`--salvage`): salvage's own reader reads it into a private store
        /// (SQLite never opens it), and the strategy builds from that store. Nil: the source is
        /// read through SQLite, as a healthy store.
        public var salvage: SalvageSource? = nil
    }

    /// How a build step reads a damaged source (`StoreBuild.salvage`).
    public struct SalvageSource: Sendable, Codable, Equatable {
        /// A healthy store of the same model (`--schema-from`) for what the damaged one lost.
        public var schemaFrom: String?
        /// The result keeps the damaged store's `Z_UUID` (it stands in for it: `rebuild --from
        /// local --salvage`); otherwise it is a new store to the app and gets a new one.
        public var keepIdentity: Bool

        public init(schemaFrom: String?, keepIdentity: Bool) {
            self.schemaFrom = schemaFrom
            self.keepIdentity = keepIdentity
        }
    }

    /// One thing the executor does.
    public enum Action: Sendable, Codable, Equatable {
        /// Archive `Plan.snapshotItems` into the snapshot folder.
        case snapshot
        /// Copy a store's file set into staging and merge its WAL into the main file there
        /// (the app seeds new cloud stores from the main file only).
        case checkpoint(source: String, staged: String)
        /// Build a store in staging with a strategy.
        case build(StoreBuild)
        /// Write a marker file (36 upper-case characters) into staging.
        case writeMarker(uuid: String, staged: String)
        /// Write the edited preferences into staging.
        case writePreferences(source: String, edit: PreferencesEdit, staged: String)
        /// Extract the `items` (archive paths, whole folders) of a snapshot into staging folders,
        /// one per snapshot root (`folders`: root name to folder), each item at `<folder>/<item>`;
        /// the undo of an operation (`restore SNAPSHOT`).
        case extract(archive: String, items: [String], folders: [String: String])
        /// Move an item (file, folder, file-set member) into the operation's trash.
        case retire(path: String, trash: String)
        /// Rename a staged item into place (the path is free: whatever was there was retired).
        /// An `optional` item may not have been made (a store's external-data folder when no value
        /// needed one); it is skipped then.
        case install(staged: String, path: String, optional: Bool)
        /// The point of no return.
        case commit
        /// Remove trash, staging and journal.
        case purge

        /// Whether the step moves, replaces or removes anything in the user's folders (or marks
        /// the point of no return): the steps before it only write the snapshot and staging.
        var touchesTheUsersFolders: Bool {
            switch self {
            case .snapshot, .checkpoint, .build, .writeMarker, .writePreferences, .extract: false
            case .retire, .install, .commit, .purge: true
            }
        }
    }

    /// One step and why it is there.
    public struct Step: Sendable, Codable, Equatable {
        public let action: Action
        public let reason: String

        public init(_ action: Action, _ reason: String) {
            self.action = action
            self.reason = reason
        }

        /// The last two steps of every plan: `commit` (`reason`: what is in place from there,
        /// never undone), then `purge`.
        static func finish(_ reason: String) -> [Step] {
            [.init(.commit, reason), .init(.purge, "the trash, staging and journal are removed")]
        }
    }

    /// Identifies the operation's journal, staging and trash.
    public let id: String
    /// The command (`delete container`, `rebuild --from local`...).
    public let operation: String
    public let roots: [Root]
    /// Every path the plan reads, replaces, deletes or creates, as it was when planned.
    public let expected: [String: Fingerprint]
    /// Store file sets (main files) that must not be open in another process.
    public let stores: [String]
    /// What the snapshot holds (absolute paths; missing ones are recorded as absent).
    public let snapshotItems: [String]
    public let steps: [Step]
    /// Consequences worth knowing: what depends on the app's delegate, what other devices will do.
    public let notes: [String]
    /// What the app will do at its next launch now, and after the plan has run.
    public let nextLaunchBefore: NextLaunch?
    public let nextLaunchAfter: NextLaunch?
    /// The folders the snapshot names its items by, when not the plan's own (`restore --to`
    /// snapshots each replaced folder as a root of its own).
    public let snapshotRoots: [Root]?
    /// What the plan does to the customer's data (maintenance operations).
    public let ledger: Ledger?
    /// Whose data it changes, in a word (the container's name, the Mac app's bundle ID): part of
    /// the snapshot's file name, so that a folder of snapshots says which is whose.
    public var label: String? = nil

    public init(
        id: String, operation: String, roots: [Root], expected: [String: Fingerprint], stores: [String],
        snapshotItems: [String],
        steps: [Step], notes: [String], nextLaunchBefore: NextLaunch?, nextLaunchAfter: NextLaunch?,
        snapshotRoots: [Root]? = nil,
        ledger: Ledger? = nil
    ) {
        self.id = id
        self.operation = operation
        self.roots = roots
        self.expected = expected
        self.stores = stores
        self.snapshotItems = snapshotItems
        self.steps = steps
        self.notes = notes
        self.nextLaunchBefore = nextLaunchBefore
        self.nextLaunchAfter = nextLaunchAfter
        self.snapshotRoots = snapshotRoots
        self.ledger = ledger
    }

    /// True when the end state already holds: nothing to do.
    public var isNoOp: Bool { steps.isEmpty }

    /// The root holding the journal (the first one).
    public var primaryRoot: Root? { roots.first }

    /// The root whose folder holds `path`.
    public func root(of path: String) -> Root? { Root.deepest(holding: path, in: roots) }
}
