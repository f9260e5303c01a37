import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A temporary folder for one test, removed when released.
public final class TempDir {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("usm-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func path(_ relative: String) -> URL { url.appendingPathComponent(relative) }

    deinit {
        // Tests make folders unreadable on purpose; give them back before removing.
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        try? FileManager.default.removeItem(at: url)
    }
}

/// Every entry below a folder with its kind, mode and full content (or link target): two snapshots
/// are equal only when not one byte, mode, file or link changed. Used to prove read-only commands read only.
public struct TreeSnapshot: Equatable, CustomStringConvertible {
    public struct Entry: Equatable {
        public let kind: String
        public let mode: Int
        public let content: Data
        public let modified: Date?
    }

    public let entries: [String: Entry]

    public init(_ root: URL) throws {
        var result: [String: Entry] = [:]
        let fm = FileManager.default
        var stack = [""]
        while let rel = stack.popLast() {
            let dir = rel.isEmpty ? root : root.appendingPathComponent(rel)
            for name in try fm.contentsOfDirectory(atPath: dir.path) {
                let childRel = rel.isEmpty ? name : rel + "/" + name
                let child = root.appendingPathComponent(childRel)
                let attrs = try fm.attributesOfItem(atPath: child.path)
                let type = attrs[.type] as? FileAttributeType
                let mode = (attrs[.posixPermissions] as? NSNumber)?.intValue ?? 0
                let modified = attrs[.modificationDate] as? Date
                switch type {
                case .typeDirectory?:
                    result[childRel] = Entry(kind: "dir", mode: mode, content: Data(), modified: nil)
                    stack.append(childRel)
                case .typeSymbolicLink?:
                    let target = try fm.destinationOfSymbolicLink(atPath: child.path)
                    result[childRel] = Entry(kind: "link", mode: 0, content: Data(target.utf8), modified: nil)
                default:
                    result[childRel] = Entry(kind: "file", mode: mode, content: try Data(contentsOf: child), modified: modified)
                }
            }
        }
        entries = result
    }

    public var description: String { entries.keys.sorted().joined(separator: "\n") }

    /// The paths that differ between two snapshots.
    public func differences(from other: TreeSnapshot) -> [String] {
        Set(entries.keys).union(other.entries.keys).sorted().filter { entries[$0] != other.entries[$0] }
    }
}

/// Runs the built `usm-repair` executable and captures what it prints.
public enum CLI {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String

        public init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }

        /// The stdout parsed as a JSON object.
        public var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
        }
    }

    /// The executable: `USM_REPAIR_BIN`, or `usm-repair` next to the test bundle.
    public static var binary: URL {
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
    public static let stateHome: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("usm-test-state-\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// `setpriv`, which lets a test running as root run the tool as `nobody` (root reads everything,
    /// so permission errors can only be seen as another user).
    public static let setpriv: URL? = ["/usr/bin/setpriv", "/bin/setpriv"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }

    /// True when `run(_:unprivileged: true)` really runs without root's powers.
    public static var canRunUnprivileged: Bool { geteuid() != 0 || setpriv != nil }

    /// Runs `usm-repair arguments...` with the given extra environment; `unprivileged` drops root
    /// to `nobody` first.
    public static func run(_ arguments: [String], environment: [String: String] = [:], unprivileged: Bool = false) throws -> Result {
        let process = Process()
        if unprivileged, geteuid() == 0, let setpriv {
            process.executableURL = setpriv
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", binary.path] + arguments
        } else {
            process.executableURL = binary
            process.arguments = arguments
        }
        var env = ProcessInfo.processInfo.environment
        // Snapshots default to $XDG_STATE_HOME: keep the tests' out of the real home folder.
        env["XDG_STATE_HOME"] = stateHome.path
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes concurrently so a large report cannot fill one and block the child.
        let errData = LockedData()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errData.set(err.fileHandleForReading.readDataToEndOfFile())
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
    }
}

extension CLI {
    /// Starts `usm-repair arguments...` without waiting (output discarded), for tests that stop a run midway.
    public static func launch(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["XDG_STATE_HOME"] = stateHome.path
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `usm-repair` through `/bin/sh -c script`, with the binary's folder first on `PATH`, in
    /// `directory`: for commands written as a user types them (README examples, `ulimit`).
    public static func shell(_ script: String, in directory: URL, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = directory
        var env = ProcessInfo.processInfo.environment
        env["XDG_STATE_HOME"] = stateHome.path
        env["PATH"] = binary.deletingLastPathComponent().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let errData = LockedData()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errData.set(err.fileHandleForReading.readDataToEndOfFile())
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
    }
}

private final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}

/// The real Core Data stores in ../shared/corpus/real, when this checkout sits beside them.
public enum Corpus {
    /// The corpus folder, or nil (tests then skip with a note).
    public static var directory: URL? {
        if let env = ProcessInfo.processInfo.environment["USM_CORPUS_DIR"] { return URL(fileURLWithPath: env) }
        let here = URL(fileURLWithPath: #filePath)
        let packageRoot = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus/real")
        return FileManager.default.fileExists(atPath: candidate.path) ? candidate : nil
    }

    /// The main store file of every corpus folder.
    public static func stores() -> [URL] {
        guard let dir = directory, let folders = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { return [] }
        return folders.sorted().compactMap { folder in
            let url = dir.appendingPathComponent(folder)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            return files.sorted().first { name in
                !name.hasSuffix("-wal") && !name.hasSuffix("-shm") && !name.hasSuffix(".md") && !name.hasPrefix(".")
                    && (try? FileHandle(forReadingFrom: url.appendingPathComponent(name)).read(upToCount: 15)) == Data("SQLite format 3".utf8)
            }.map { url.appendingPathComponent($0) }
        }
    }

    /// Copies a store's file set (main, -wal, -shm) into `dir`, writable, and returns the copy's main file.
    public static func copy(_ store: URL, into dir: URL) throws -> URL {
        let dest = dir.appendingPathComponent(store.lastPathComponent)
        for suffix in ["", "-wal", "-shm"] {
            let src = store.path + suffix
            guard FileManager.default.fileExists(atPath: src) else { continue }
            try FileManager.default.copyItem(atPath: src, toPath: dest.path + suffix)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dest.path + suffix)
        }
        return dest
    }
}
