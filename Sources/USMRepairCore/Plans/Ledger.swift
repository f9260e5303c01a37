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
        /// A damaged store read by salvage (`--salvage`): what it keeps and loses, counted at
        /// planning; null for every other store.
        public var salvage: Salvage? = nil
        /// A merge's destination: per entity, the incoming objects it already holds (same identity),
        /// which are not copied again; null for every other store.
        public var matched: [String: Int]? = nil

        enum CodingKeys: String, CodingKey { case path, label, fate, now, after, detail, salvage, matched }

        // Every key always present (`salvage: null`), as in every JSON report; decoding takes a
        // plan written before the key existed.
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(path, forKey: .path)
            try c.encode(label, forKey: .label)
            try c.encode(fate, forKey: .fate)
            try c.encode(_now, forKey: .now)
            try c.encode(_after, forKey: .after)
            try c.encode(detail, forKey: .detail)
            try c.encode(NullEncoded(wrappedValue: salvage), forKey: .salvage)
            try c.encode(NullEncoded(wrappedValue: matched), forKey: .matched)
        }
    }

    /// What salvage keeps of a damaged store, counted at planning before anything is written
    /// (`--salvage`): the same reader, on the same files, as the plan's build step.
    public struct Salvage: Sendable, Codable, Equatable {
        /// Objects read intact, per entity: what the salvaged copy holds.
        public let readable: Counts
        /// Rows of the entities' tables known lost: cells on damaged pages, counted from what
        /// the pages say.
        public let lost: Int
        /// Pages of the entities' tables that could not be read at all, and table pages that fit
        /// no table alone: their rows are lost too, their number unknown.
        public let lostPages: Int
        /// Rows of the entities' tables read intact but left out (a second copy with other
        /// content, a uniqueness constraint, an entity `Z_PRIMARYKEY` does not list).
        public let leftOut: Int
        /// References to lost rows cut: to-one keys set to NULL, join rows removed,
        /// external-data values set to NULL.
        public let referencesCut: Int
        /// What could not be read, one sentence each.
        public let unreadable: [String]
        /// The objects SQLite counted in the damaged store at planning, through what of its tables
        /// and indexes it could still read (an index often survives what a table lost); null when
        /// it could not count them.
        @NullEncoded public var counted: Int?

        public init(
            readable: Counts, lost: Int, lostPages: Int, leftOut: Int, referencesCut: Int, unreadable: [String],
            counted: Int?
        ) {
            self.readable = readable
            self.lost = lost
            self.lostPages = lostPages
            self.leftOut = leftOut
            self.referencesCut = referencesCut
            self.unreadable = unreadable
            self.counted = counted
        }

        /// The objects the damaged store held, as far as can be told: SQLite's count, or the
        /// objects read, counted lost and left out (a lower bound when whole pages were lost).
        public var estimated: Int { max(readable.total + lost + leftOut, counted ?? 0) }

        /// In words: `871 of ~981 objects readable; ~110 lost (the rows of 2 pages that could not
        /// be read at all); 110 references to lost rows cut`.
        public var text: String {
            var why: [String] = []
            if lost > 0 { why.append("\(lost) counted on damaged pages") }
            if lostPages > 0 {
                why.append("the rows of \(lostPages) page\(lostPages == 1 ? "" : "s") that could not be read at all")
            }
            if leftOut > 0 { why.append("\(leftOut) read but left out") }
            let reasons = why.isEmpty ? "" : " (\(why.joined(separator: ", ")))"
            var parts: [String]
            if counted != nil {
                parts = [
                    "\(readable.total) of ~\(estimated) objects readable",
                    "~\(estimated - readable.total) lost\(reasons)",
                ]
            } else if lostPages > 0 {
                parts = ["\(readable.total) objects readable", "more lost\(reasons)"]
            } else {
                parts = [
                    "\(readable.total) of \(estimated) objects readable",
                    "\(estimated - readable.total) lost\(reasons)",
                ]
            }
            parts.append("\(referencesCut) reference\(referencesCut == 1 ? "" : "s") to lost rows cut")
            return parts.joined(separator: "; ")
        }
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
            return
                "\(what), \(objects.map { "\(Ledger.grouped($0)) object\($0 == 1 ? "" : "s")" } ?? "objects unknown")"
        }
    }

    public var stores: [Store]
    public let before: Shows
    public let after: Shows

    /// The line a person reads first (as a plan).
    public var headline: String { headline(done: false) }

    /// The line a person reads first: what the app shows before and after, and, when the app
    /// opens another store afterwards, what leaves the customer's view and what comes into it
    /// (the totals alone hide that: 20 objects → 18 can be 15 leaving and 13 arriving). In the
    /// past tense once the plan ran.
    public func headline(done: Bool) -> String {
        var line =
            done
            ? "The app showed \(before.text) before; now it shows \(after.text)."
            : "The app shows \(before.text) now; after this, \(after.text)."
        if before.store != after.store, let leaving = before.objects, let arriving = after.objects {
            let objects = { (n: Int) in "\(Ledger.grouped(n)) object\(n == 1 ? "" : "s")" }
            line +=
                done
                ? " The \(objects(leaving)) of the store it opened left the customer's view and the \(objects(arriving)) of the store it opens now came into it."
                : " The \(objects(leaving)) of the store it opens now leave the customer's view and the \(objects(arriving)) of the store it will open come into it."
        }
        return line
    }

    /// A count as people read it: thousands grouped (`1,234,567`).
    public static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// The objects of a store report (its user entities: history and CloudKit bookkeeping rows are
    /// not objects the app shows), when it was counted.
    static func counts(_ report: StoreReport?) -> Counts? {
        guard let report else { return nil }
        if !report.exists { return Counts([:]) }
        guard report.counted else { return nil }
        return Counts(Dictionary(report.entities.filter { !$0.system }.map { ($0.name, $0.rows) }, uniquingKeysWith: +))
    }
}
