import Foundation

/// What a plan does to the customer's data, for the dry run, the prompt and the report: every
/// store the plan reads or touches, its objects per entity now and after, and where its data goes;
/// and, first, what the app shows at its next launch before and after (the store it opens and its
/// objects). Counts come from reading the stores (their `-wal` included) at planning; after a run
/// the built stores' rows are the counted ones.
public struct Ledger: Sendable, Codable, Equatable {
    /// Where a store's data goes.
    public enum Fate: String, Sendable, Codable {
        /// Left as it is.
        case kept
        /// Read: the data comes from it; it is not changed.
        case read
        /// Its main file gets its `-wal` merged in: the same objects.
        case checkpointed
        /// Replaced by another store's data; the old objects are only in the snapshot.
        case replaced
        /// Receives another store's objects; its own stay.
        case merged
        /// Removed; its objects are only in the snapshot (and, for a cloud store, in what other
        /// devices and iCloud still hold).
        case discarded
        /// Made by the plan.
        case created
        /// Left on disk, but the app will no longer show it (a new cloud store is seeded instead).
        case abandoned
    }

    /// Objects of one store.
    public struct Counts: Sendable, Codable, Equatable {
        public let total: Int
        public let entities: [String: Int]

        public init(_ entities: [String: Int]) {
            self.entities = entities
            total = entities.values.reduce(0, +)
        }
    }

    /// One store the plan reads or touches.
    public struct Store: Sendable, Codable, Equatable {
        public let path: String
        /// `local store`, `cloud store <UUID> (this device's copy)`...
        public let label: String
        public let fate: Fate
        /// Objects now; null when the store was not read.
        @NullEncoded public var now: Counts?
        /// Objects after the plan; null when gone or not known before the run.
        @NullEncoded public var after: Counts?
        /// One sentence: where its data goes.
        public let detail: String
    }

    /// What the app shows at a launch: the store it ends up opening and its objects.
    public struct Shows: Sendable, Codable, Equatable {
        /// `local`, a cloud store UUID, `new` (a store the launch makes), or null.
        @NullEncoded public var store: String?
        /// Objects; null when the files cannot say (a copy rebuilt from its logs, a store not read).
        @NullEncoded public var objects: Int?

        /// What the app shows after the launch `next` predicts.
        public init(_ next: NextLaunch?) {
            guard let next else {
                store = nil
                objects = nil
                return
            }
            switch next.outcome {
            case .seedNewCloudStore, .createEmptyCloudStore: store = "new"
            default: store = next.store
            }
            objects = next.objects
        }

        /// In words.
        public var text: String {
            let what: String =
                switch store {
                case nil: "an unknown store"
                case "local"?: "the local store"
                case "new"?: "a new cloud store"
                case let uuid?: "cloud store \(uuid)"
                }
            return "\(what), \(objects.map { "\($0) object\($0 == 1 ? "" : "s")" } ?? "objects unknown")"
        }
    }

    public var stores: [Store]
    public let before: Shows
    public let after: Shows

    /// The line a person reads first.
    public var headline: String { "The app shows \(before.text) now; after this, \(after.text)." }

    /// The objects of a store report (its user entities: history and CloudKit bookkeeping rows are
    /// not objects the app shows), when it was counted.
    static func counts(_ report: StoreReport?) -> Counts? {
        guard let report else { return nil }
        if !report.exists { return Counts([:]) }
        guard report.counted else { return nil }
        return Counts(Dictionary(report.entities.filter { !$0.system }.map { ($0.name, $0.rows) }, uniquingKeysWith: +))
    }
}
