import CSupport
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One run of an external program (a strategy plugin), held to its deadline whatever it does: it starts in a
/// process group of its own and every process it starts is followed (`ProcessTree`: on Linux also
/// those that leave the group with `setsid`), so that all of them are stopped with it, with default signal handling
/// and an empty signal mask, a minimal environment and its scratch folder as working directory.
/// Its stdin receives the request; its stdout is read as it comes, one line at a time, and each
/// line is handed over at once (memory stays flat however much it prints; a line longer than
/// `maxLine` is refused). At the deadline the whole group is killed and reading stops, even if a
/// child still holds the output open.
public struct ChildProcess {
    /// A protocol line longer than this is not a protocol line.
    public static let maxLine = 1 << 20

    /// Where the program's stderr goes while a run is in progress: nil, the process's own stderr
    /// (inherited); else every chunk it writes, handed to the command's terminal (a command run in
    /// process prints nothing around its context).
    public static var standardError: (@Sendable (Data) -> Void)? { standardErrorSink?.write }

    /// The task-local behind `standardError`, boxed: an optimised build of Swift 6.3.1 on Linux
    /// crashes in `swift_task_localValuePush` when a task-local holding an optional closure is
    /// bound inside another binding (every command of a release build did, at start-up).
    @TaskLocal public static var standardErrorSink: StandardErrorSink?

    /// A place for a child's stderr, as a class so the task-local holds a plain reference.
    public final class StandardErrorSink: Sendable {
        /// Receives every chunk the child writes to stderr.
        public let write: @Sendable (Data) -> Void

        /// Creates a sink that hands each chunk to `write`.
        public init(_ write: @escaping @Sendable (Data) -> Void) {
            self.write = write
        }
    }

    /// How a run ended.
    public enum Ending: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)
        case timedOut
        /// A line longer than `maxLine`, or the line handler refused one.
        case refused
    }

    public let program: URL
    public let arguments: [String]
    public let environment: [String: String]
    public let directory: URL
    public let timeout: Double

    public init(program: URL, arguments: [String], environment: [String: String], directory: URL, timeout: Double) {
        self.program = program
        self.arguments = arguments
        self.environment = environment
        self.directory = directory
        self.timeout = timeout
    }

    /// Runs the program with `input` on stdin; `line` receives each stdout line (without its
    /// line break) and returns false to stop the run.
    /// - Throws: `pluginFailed` when it cannot be started.
    public func run(input: Data, line: (Data) -> Bool) throws -> Ending {
        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        var stderrPipe: [Int32] = [-1, -1]
        let errorSink = Self.standardError
        guard pipe(&stdinPipe) == 0, pipe(&stdoutPipe) == 0, errorSink == nil || pipe(&stderrPipe) == 0 else {
            throw USMError.pluginFailed(
                program: program.lastPathComponent, reason: "cannot be started: \(errnoDescription())")
        }
        for fd in [stdinPipe[1], stdoutPipe[0], stderrPipe[0]] where fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        let argv = ([program.path] + arguments).map { strdup($0) } + [nil]
        // Every process of the run carries this token, also one that leaves the process group.
        let token = UUID().uuidString
        var marked = environment
        marked[ProcessTree.tokenVariable] = token
        let envp = marked.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: Int32 = 0
        let spawned = usm_spawn(
            program.path, argv, envp, directory.path, stdinPipe[0], stdoutPipe[1], stderrPipe[1], &pid)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        if stderrPipe[1] >= 0 { close(stderrPipe[1]) }
        var stderrOpen = stderrPipe[0] >= 0
        defer { if stderrPipe[0] >= 0 { close(stderrPipe[0]) } }
        guard spawned == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            throw USMError.pluginFailed(
                program: program.lastPathComponent, reason: "cannot be started: \(String(cString: strerror(spawned)))")
        }
        let deadline = Date().addingTimeInterval(timeout)
        var tree = ProcessTree(root: pid, token: token)
        // The request: small; a program that does not read it gets EPIPE, not a stalled host.
        _ = fcntl(stdinPipe[1], F_SETFL, fcntl(stdinPipe[1], F_GETFL) | O_NONBLOCK)
        input.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count, Date() < deadline {
                let n = write(stdinPipe[1], raw.baseAddress! + offset, raw.count - offset)
                if n > 0 { offset += n } else if errno == EAGAIN || errno == EINTR { usleep(1000) } else { break }
            }
        }
        close(stdinPipe[1])

        var ending: Ending?
        var lines = LineSplitter(maxLine: Self.maxLine)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else {
                ending = .timedOut
                break
            }
            var pollers = [
                pollfd(fd: stdoutPipe[0], events: Int16(POLLIN), revents: 0),
                pollfd(fd: stderrOpen ? stderrPipe[0] : -1, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&pollers, 2, Int32(min(left * 1000, 200)) + 1)
            tree.refresh()
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            // stderr as it comes, passed on whole; its end is not the run's end.
            if stderrOpen, pollers[1].revents != 0, let errorSink {
                let n = read(stderrPipe[0], &buffer, buffer.count)
                if n > 0 {
                    errorSink(Data(buffer[0..<n]))
                } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                    stderrOpen = false
                }
            }
            guard pollers[0].revents != 0 else { continue }
            let n = read(stdoutPipe[0], &buffer, buffer.count)
            if n < 0, errno == EINTR || errno == EAGAIN { continue }
            guard n > 0 else { break }  // end of output
            guard buffer.withUnsafeBytes({ lines.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n]), line) }) else {
                ending = .refused
                break
            }
        }
        close(stdoutPipe[0])
        if ending == nil, !lines.finish(line) { ending = .refused }
        // Wait for the program until the deadline; then the whole group goes.
        var status: Int32 = 0
        var reaped = false
        while !reaped {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid {
                reaped = true
                break
            }
            if r < 0, errno != EINTR { break }
            if ending != nil || Date() >= deadline {
                if ending == nil { ending = .timedOut }
                break
            }
            tree.refresh()
            usleep(5000)
        }
        // Nothing of the program outlives its run: its children included, also those that left
        // its process group (setsid) or were reparented when their parent exited.
        kill(-pid, SIGKILL)
        if !reaped { kill(pid, SIGKILL) }
        tree.killAll()
        if !reaped {
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        }
        // What it wrote to stderr last (it has ended): whatever the pipe still holds.
        if stderrOpen, let errorSink {
            _ = fcntl(stderrPipe[0], F_SETFL, fcntl(stderrPipe[0], F_GETFL) | O_NONBLOCK)
            while true {
                let n = read(stderrPipe[0], &buffer, buffer.count)
                if n > 0 { errorSink(Data(buffer[0..<n])) } else if n < 0, errno == EINTR { continue } else { break }
            }
        }
        if let ending { return ending }
        if status & 0x7F == 0 { return .exited((status >> 8) & 0xFF) }
        return .signalled(status & 0x7F)
    }
}

/// Cuts a byte stream into lines as it arrives, holding at most one line (of at most `maxLine`
/// bytes) however much comes: the reading side of `ChildProcess`, apart so that it can be tested
/// and fuzzed without a process.
public struct LineSplitter {
    /// The longest line accepted.
    public let maxLine: Int
    private var pending = Data()

    public init(maxLine: Int) { self.maxLine = maxLine }

    /// Hands every complete line of `chunk` (without its `\n`) to `line`. Returns false when
    /// `line` refused one or the unfinished line passed `maxLine`: the stream is then refused.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ line: (Data) -> Bool) -> Bool {
        var start = 0
        for i in 0..<chunk.count where chunk[i] == 0x0A {
            pending.append(contentsOf: chunk[start..<i])
            start = i + 1
            guard pending.count <= maxLine, line(pending) else { return false }
            pending.removeAll(keepingCapacity: true)
        }
        pending.append(contentsOf: chunk[start..<chunk.count])
        return pending.count <= maxLine
    }

    /// Hands over a last line without its `\n`, if any; false when `line` refused it.
    public mutating func finish(_ line: (Data) -> Bool) -> Bool {
        defer { pending.removeAll() }
        return pending.isEmpty || line(pending)
    }
}
