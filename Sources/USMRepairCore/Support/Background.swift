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

/// Gives memory freed by a finished phase back to the system, so the next phase's peak is not
/// stacked on top of it (glibc keeps freed small blocks, such as SQLite's page cache, otherwise).
enum Memory {
    static func releaseFreed() {
        usm_release_freed_memory()
    }
}
