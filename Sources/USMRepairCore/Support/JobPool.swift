import Dispatch
import Synchronization

/// The one way work is spread over every core (periphery's `JobPool`): runs `body` for each index
/// at once and returns each outcome in index order, so that callers decide what an error means
/// (stop at the first, or list it and go on).
enum JobPool {
    /// `body(i)` for every `i` in `0..<count`, on every core; the outcomes in index order.
    static func map<Value: Sendable>(_ count: Int, _ body: @Sendable (Int) throws -> Value) -> [Result<
        Value, any Error
    >] {
        let results = Mutex<[Int: Result<Value, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let outcome = Result { try body(i) }
            results.withLock { $0[i] = outcome }
        }
        let found = results.withLock { $0 }
        return (0..<count).map { found[$0] ?? .failure(USMError.unexpected("job \($0) of \(count) did not run")) }
    }
}
