import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
    import Glibc
#endif

/// The one place a test starts a process. Commands run in process (`USM.run`); a process is
/// started only where it is the point: a real `SIGKILL`, `ulimit`, `setpriv` as another user,
/// stdout on `/dev/full` or a closed pipe, a second process holding a SQLite lock, the README's
/// shell examples, the deployment script, the fault walk's `strace`, and the standard tools an
/// archive must work with (`bsdtar`, `sha256sum`).
///
/// With `USM_TEST_PROCESS_LOG=FILE` every start appends the running test's id and the program to
/// FILE, so the tests that start a process can be counted: `cut -f1 FILE | sort -u | wc -l`.
enum Launcher {
    /// Starts `executable arguments...`; stdout and stderr go to the pipes given (else nowhere),
    /// stdin is `/dev/null`.
    static func start(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, in directory: URL? = nil,
        stdout: Pipe? = nil, stderr: Pipe? = nil
    ) throws -> Process {
        record(executable, arguments)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = directory }
        process.standardOutput = stdout ?? FileHandle.nullDevice
        process.standardError = stderr ?? FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `executable arguments...` to its end and returns what it printed.
    static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, in directory: URL? = nil
    ) throws -> CLI.Result {
        let out = Pipe()
        let err = Pipe()
        let process = try start(
            executable, arguments, environment: environment, in: directory, stdout: out, stderr: err)
        // Read both pipes at once so a large report cannot fill one and block the child.
        let errData = Mutex(Data())
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            errData.withLock { $0 = data }
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return CLI.Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.withLock { $0 }, as: UTF8.self))
    }

    /// A program found on `PATH` (`sqlite3`, `bsdtar`, `python3`), run to its end; stdout and
    /// stderr together.
    static func tool(_ name: String, _ arguments: [String]) throws -> String {
        let r = try run(URL(fileURLWithPath: "/usr/bin/env"), [name] + arguments)
        return r.stdout + r.stderr
    }

    private static func record(_ executable: URL, _ arguments: [String]) {
        guard let log = ProcessInfo.processInfo.environment["USM_TEST_PROCESS_LOG"] else { return }
        let test = Test.current.map { "\($0.id)" } ?? "(no test)"
        let program = executable.lastPathComponent == "env" ? (arguments.first ?? "env") : executable.lastPathComponent
        let line = Data("\(test)\t\(program)\n".utf8)
        let fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

/// Runs the built `usm-repair` executable as a process (see `Launcher` for when).
enum CLI {
    /// What a run printed and its exit code (in process or not).
    struct Result: Sendable {
        let status: Int32
        let stdout: String
        let stderr: String

        /// The stdout parsed as a JSON object.
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
        }

        /// A changing command's own part of its JSON envelope (`details`).
        var details: [String: Any] { json["details"] as? [String: Any] ?? [:] }
    }

    /// The executable: `USM_REPAIR_BIN`, or `usm-repair` next to the test bundle.
    static var binary: URL {
        if let env = ProcessInfo.processInfo.environment["USM_REPAIR_BIN"] { return URL(fileURLWithPath: env) }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("usm-repair")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        #if canImport(Darwin)
            for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
                return bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("usm-repair")
            }
        #endif
        return URL(fileURLWithPath: ".build/debug/usm-repair")
    }

    /// The `XDG_STATE_HOME` every run gets unless a test sets its own: one private folder per test process.
    static let stateHome: URL = {
        let url = TestTemporary.base.appendingPathComponent(
            "usm-test-state-\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        // On a tmpfs a folder left behind holds memory: removed when the process exits.
        atexit { try? FileManager.default.removeItem(at: CLI.stateHome) }
        return url
    }()

    /// `setpriv`, which lets a test running as root run the tool as `nobody` (root reads everything,
    /// so permission errors can only be seen as another user).
    static let setpriv: URL? = ["/usr/bin/setpriv", "/bin/setpriv"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }

    /// True when `run(_:unprivileged: true)` really runs without root's powers.
    static var canRunUnprivileged: Bool { geteuid() != 0 || setpriv != nil }

    /// The test process's environment with the tests' state folder and `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        // Snapshots default to $XDG_STATE_HOME: keep the tests' out of the real home folder.
        env["XDG_STATE_HOME"] = stateHome.path
        env["TMPDIR"] = TestTemporary.base.path
        for (key, value) in extra { env[key] = value }
        return env
    }

    /// Runs `usm-repair arguments...` as `nobody` (through `setpriv` when running as root): the
    /// only way to see permission errors, since root reads everything.
    static func runUnprivileged(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        if geteuid() == 0, let setpriv {
            return try Launcher.run(
                setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", binary.path] + arguments,
                environment: Self.environment(environment))
        }
        return try Launcher.run(binary, arguments, environment: Self.environment(environment))
    }

    /// Starts `usm-repair arguments...` without waiting (output discarded), for tests that kill a run midway.
    static func launch(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        try Launcher.start(binary, arguments, environment: Self.environment(environment))
    }

    /// Runs `usm-repair` through `/bin/sh -c script`, with the binary's folder first on `PATH`, in
    /// `directory`: for commands written as a user types them (README examples, `ulimit`, redirections).
    static func shell(_ script: String, in directory: URL, environment: [String: String] = [:]) throws -> Result {
        var env = Self.environment(environment)
        env["PATH"] =
            binary.deletingLastPathComponent().path + ":"
            + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        if let path = environment["PATH"] { env["PATH"] = path }
        return try Launcher.run(URL(fileURLWithPath: "/bin/sh"), ["-c", script], environment: env, in: directory)
    }
}

extension Dictionary where Key == String, Value == Any {
    /// A changing command's own part of its JSON envelope (`details`).
    var details: [String: Any] { self["details"] as? [String: Any] ?? [:] }
}
