import Foundation
import Synchronization
import TestSupport
@testable import USMRepairCore

/// What the corpus suites read of a real store before changing a copy of it, read once per store
/// and shared (issue 30: the suites made the same `check` of the same store up to three times).
/// A corpus store never changes (CorpusTests.counts proves `status` and `check` leave its folder
/// byte-identical and count what sqlite3 counts), so one read serves every suite.
enum CorpusFixtures {
    /// One store's result, computed by the first suite that asks while the others wait for it.
    private final class Entry: Sendable {
        let value = Mutex<(rows: [String: Int], errors: [Problem], report: StoreReport)?>(nil)
    }

    private static let entries = Mutex<[String: Entry]>([:])

    /// `Migrate.check` of the corpus store (read in place, read only, as `check` reads any store):
    /// rows per entity name, error-level problems, the store's report.
    static func check(_ store: URL) throws -> (rows: [String: Int], errors: [Problem], report: StoreReport) {
        let entry = entries.withLock { entries in
            if let known = entries[store.path] { return known }
            let made = Entry()
            entries[store.path] = made
            return made
        }
        return try entry.value.withLock { value in
            if let known = value { return known }
            let read = try Migrate.check(store)
            value = read
            return read
        }
    }
}
