import Foundation
import Synchronization
import USMRepairCore
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// stdout or stderr, written with `write(2)` so that a failure is an answer, never a crash
/// (Foundation's non-throwing `FileHandle.write(_:)` traps on any error). A closed reader
/// (`EPIPE`: `usm-repair status | head -1`) is the user's choice: printing stops, the exit code
/// stays the command's. Any other failure (a full disk under a redirected stdout, an I/O error) is
/// remembered, and the command ends with exit 75 (out of space) or 74 (I/O error) after its work.
final class StandardStream: Sendable {
    let fd: Int32
    let name: String
    private struct State {
        var closed = false
        var failure: USMError?
    }

    /// Writes are whole and one at a time (progress may come from another thread).
    private let state = Mutex(State())
    /// True once the reader went away.
    var closed: Bool { state.withLock { $0.closed } }
    /// The first write error other than a closed reader.
    var failure: USMError? { state.withLock { $0.failure } }

    init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    static let output = StandardStream(fd: STDOUT_FILENO, name: "standard output")
    static let error = StandardStream(fd: STDERR_FILENO, name: "standard error")

    func write(_ text: String) {
        state.withLock { state in
            guard !state.closed, state.failure == nil else { return }
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EPIPE {
                        state.closed = true
                    } else {
                        state.failure = USMError.writing("(\(name))", purpose: "cannot write the output")
                    }
                    return
                }
                bytes = bytes.dropFirst(n)
            }
        }
    }
}

/// `write(2)`, out of the reach of `StandardStream.write`'s name.
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, bytes, count)
}
