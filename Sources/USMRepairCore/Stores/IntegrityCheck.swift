import Dispatch
import GRDB
import Synchronization

/// Runs `PRAGMA quick_check` / `integrity_check` on its own connection in the background, so the
/// B-tree walk (the longest part of reading a store) overlaps the metadata, schema and row counts.
final class IntegrityCheck: Sendable {
    private let outcome = Mutex<Result<[String], any Error>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the check on `queue` (a second connection to the private copy).
    init(queue: DatabaseQueue, pragma: String) {
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let result = Result { try queue.read { db in try String.fetchAll(db, sql: "PRAGMA \(pragma)(20)") } }
            outcome.withLock { $0 = result }
            finished.signal()
        }
    }

    /// Waits for the check and returns SQLite's lines (`["ok"]` when the store is sound).
    func wait() throws -> [String] {
        finished.wait()
        finished.signal()  // later waits return at once
        return try outcome.withLock { $0! }.get()
    }
}
