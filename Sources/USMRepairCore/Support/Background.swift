import CSupport
import Dispatch
import Synchronization

/// Work started on another thread and waited for later: lets the bundle's status report (SQLite)
/// run while files are hashed.
final class Background<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping @Sendable () throws -> Value) {
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let outcome = Result { try work() }
            result.withLock { $0 = outcome }
            done.signal()
        }
    }

    /// Waits for the work and returns its value or rethrows its error.
    func value() throws -> Value {
        done.wait()
        done.signal()
        return try result.withLock { $0! }.get()
    }
}

/// SHA-256 of many files on every core.
enum ParallelHash {
    /// Hashes of `paths`, by path: (bytes read, hex digest). Throws the first error met.
    static func hash(_ paths: [String]) throws -> [String: (bytes: Int64, sha256: String)] {
        let results = Mutex<[String: (bytes: Int64, sha256: String)]>([:])
        let failure = Mutex<(any Error)?>(nil)
        // Largest first, so one big file does not finish alone at the end.
        let order = paths.sorted { (FileStatus.lookup($0)?.size ?? 0) > (FileStatus.lookup($1)?.size ?? 0) }
        DispatchQueue.concurrentPerform(iterations: order.count) { i in
            guard failure.withLock({ $0 == nil }) else { return }
            do {
                let hashed = try FileCopy.sha256(of: order[i])
                results.withLock { $0[order[i]] = hashed }
            } catch {
                failure.withLock { if $0 == nil { $0 = error } }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return results.withLock { $0 }
    }
}

/// Gives memory freed by a finished phase back to the system, so the next phase's peak is not
/// stacked on top of it (glibc keeps freed small blocks, such as SQLite's page cache, otherwise).
enum Memory {
    static func releaseFreed() {
        usm_release_freed_memory()
    }
}
