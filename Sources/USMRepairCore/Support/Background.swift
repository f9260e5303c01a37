import CSupport
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Work started on another thread and waited for later: lets the bundle's status report (SQLite)
/// run while files are hashed.
final class Background<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts `work` on the dispatch pool, or with `ownThread` on a thread of its own at once.
    ///
    /// The pool is as wide as the cores: a job there waits for the ones before it to end. A job
    /// on the critical path (a store's page check, which everything after it waits for) gets its
    /// own thread: on 2 cores a migration's `integrity_check` started 0.38 s late on the pool,
    /// behind the external data's copy and the result's digests (issue 33, 1,001,000 objects).
    /// Not every job: with each on a thread of its own, more of them ran at once and the peak
    /// memory of `migrate cloud-to-local --replace` at 1M went from 60 to 69 MiB.
    init(ownThread: Bool = false, _ work: @escaping @Sendable () throws -> Value) {
        let job: @Sendable () -> Void = { [self] in
            let outcome = Result { try work() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        if ownThread {
            Thread.detachNewThread(job)
        } else {
            DispatchQueue.global(qos: .userInitiated).async(execute: job)
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

    /// This process's resident memory now, bytes (Linux: `/proc/self/statm`); nil where the
    /// system does not say.
    static func residentBytes() -> Int64? {
        #if os(Linux)
            guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
            let fields = text.split(separator: " ")
            guard fields.count > 1, let pages = Int64(fields[1]), pages > 0 else { return nil }
            return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
        #else
            return nil
        #endif
    }
}
