import Foundation
import Synchronization
import USMRepairCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plugin program found on `PATH` (`usm-repair-strategy-<name>`).
public struct FoundPlugin: Sendable, Encodable, Equatable {
    /// The name to give `--plugin`.
    public let name: String
    /// Its path.
    public let path: String
}

/// Runs external plugins under the contract of Plugins/ManualStrategy/README.md: a JSON request on
/// stdin, JSON Lines on stdout, stderr passed through, a timeout, and checks afterwards that the
/// program changed nothing but its staged destination.
///
/// Run with Foundation's `Process` and a polling deadline rather than swift-subprocess: the engine
/// is synchronous, and `Process` needs no new dependency for one child at a time.
public enum ExternalProgram {
    /// Program names start with this.
    public static let prefix = "usm-repair-strategy-"

    /// Every `usm-repair-strategy-<name>` executable on `PATH` (first one of each name wins). Nothing is run.
    public static func discover(environment: [String: String]) -> [FoundPlugin] {
        var found: [String: FoundPlugin] = [:]
        var order: [String] = []
        for dir in (environment["PATH"] ?? "").split(separator: ":").map(String.init) where !dir.isEmpty {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { continue }
            for name in names.sorted() where name.hasPrefix(prefix) && name.count > prefix.count {
                let path = URL(fileURLWithPath: dir).appendingPathComponent(name).path
                let short = String(name.dropFirst(prefix.count))
                guard found[short] == nil, FileManager.default.isExecutableFile(atPath: path) else { continue }
                found[short] = FoundPlugin(name: short, path: path)
                order.append(short)
            }
        }
        return order.compactMap { found[$0] }
    }

    /// The program `--plugin` names: a path when it contains `/`, else `usm-repair-strategy-<name>` on `PATH`.
    /// - Throws: `notFound` when there is no such executable.
    public static func locate(_ reference: String, environment: [String: String]) throws -> URL {
        if reference.contains("/") {
            let url = URL(fileURLWithPath: (reference as NSString).expandingTildeInPath).standardizedFileURL
            guard FileStatus.resolve(url.path)?.kind == .file, FileManager.default.isExecutableFile(atPath: url.path) else {
                throw USMError.notFound(path: url.path, what: "plugin program (an executable file)")
            }
            return url
        }
        guard let found = discover(environment: environment).first(where: { $0.name == reference }) else {
            throw USMError.notFound(path: prefix + reference, what: "plugin program on PATH")
        }
        return URL(fileURLWithPath: found.path)
    }

    static func listing(_ dir: URL) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
    }

    /// Runs the plugin for `job` and checks what it did.
    static func run(_ job: MigrationJob) throws -> MigrationOutcome {
        let program = try locate(job.options.plugin ?? "", environment: job.options.environment)
        let name = program.lastPathComponent
        // A self-contained copy of the source for the plugin alone, read-only, hashed before and after.
        let sourceDir = job.scratch.appendingPathComponent("plugin-source", isDirectory: true)
        let work = job.scratch.appendingPathComponent("plugin-work", isDirectory: true)
        try FileManager.default.createDirectory(at: sourceDir, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let source = sourceDir.appendingPathComponent("source.sqlite")
        try StagedStore.copyWhole(from: job.source, to: source)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: source.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: sourceDir.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: sourceDir.path) }
        let sourceHash = try FileDigest.sha256(of: source)

        let staging = job.destination.deletingLastPathComponent()
        let userFolder = staging.deletingLastPathComponent()
        let userBefore = listing(userFolder)
        let request = PluginRequest(
            protocol: 1,
            source: .init(path: source.path, storeUUID: nil, externalData: job.sourceExternalData.path,
                          entities: job.sourceSchema.entities.map {
                              .init(name: $0.name, number: $0.number, parent: job.sourceSchema.entity($0.superNumber)?.name,
                                    table: $0.table, system: $0.isSystem)
                          }),
            destination: .init(path: job.destination.path, exists: job.isMerge),
            scratch: work.path, parameters: job.options.parameters)
        let requestData = try JSONEncoder().encode(request)

        let process = Process()
        process.executableURL = program
        process.arguments = ["migrate"]
        var environment: [String: String] = ["TMPDIR": work.path]
        for key in ["PATH", "HOME", "LANG"] { environment[key] = job.options.environment[key] }
        process.environment = environment
        process.currentDirectoryURL = work
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        signal(SIGPIPE, SIG_IGN)
        do { try process.run() } catch {
            throw USMError.pluginFailed(program: name, reason: "cannot be started: \(error.localizedDescription)")
        }
        let collected = Collected()
        let reader = Thread {
            collected.set(output.fileHandleForReading.readDataToEndOfFile())
        }
        reader.start()
        try? input.fileHandleForWriting.write(contentsOf: requestData)
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(job.options.pluginTimeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        var timedOut = false
        if process.isRunning {
            timedOut = true
            process.terminate()
            let grace = Date().addingTimeInterval(2)
            while process.isRunning && Date() < grace { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        while !collected.done { usleep(1_000) }
        let stray = listing(userFolder).subtracting(userBefore)

        if timedOut {
            throw USMError.pluginFailed(program: name, reason: "timed out after \(Int(job.options.pluginTimeout)) s (--plugin-timeout) and was stopped")
        }
        // What the program may not touch, checked before its answer is believed.
        if !stray.isEmpty {
            for entry in stray { try? FileManager.default.removeItem(at: userFolder.appendingPathComponent(entry)) }
            throw USMError.pluginRefused(program: name, reason: "it created \(stray.sorted().joined(separator: ", ")) in \(userFolder.path), outside its destination (removed)")
        }
        let allowed: Set<String> = Set(["", "-wal", "-shm", "-journal"].map { job.destination.lastPathComponent + $0 })
            .union([StoreFileSet(main: job.destination).supportDirectory.lastPathComponent])
        let outside = listing(staging).subtracting(allowed)
        if !outside.isEmpty {
            throw USMError.pluginRefused(program: name, reason: "it wrote \(outside.sorted().joined(separator: ", ")) beside its destination")
        }
        if listing(sourceDir) != ["source.sqlite"] || (try? FileDigest.sha256(of: source)) != sourceHash {
            throw USMError.pluginRefused(program: name, reason: "it changed its read-only copy of the source")
        }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let how = process.terminationReason == .exit ? "exited with status \(process.terminationStatus)" : "was killed by signal \(process.terminationStatus)"
            throw USMError.pluginFailed(program: name, reason: how)
        }

        var outcome = MigrationOutcome(plugin: program.path, steps: [MigrationStep("ran \(program.path) migrate", why: "the external plugin filled the staged store")])
        var result: PluginMessage.Result?
        let lines = String(decoding: collected.data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        for (i, line) in lines.enumerated() {
            guard result == nil else {
                throw USMError.pluginFailed(program: name, reason: "stdout has more after its result line (line \(i + 1))")
            }
            guard let message = try? JSONDecoder().decode(PluginMessage.self, from: Data(line.utf8)),
                  [message.progress != nil, message.note != nil, message.result != nil].filter({ $0 }).count == 1 else {
                throw USMError.pluginFailed(program: name, reason: "stdout line \(i + 1) is not a protocol message: \(String(line.prefix(80)).debugDescription)")
            }
            if let note = message.note { outcome.notes.append("\(name): \(note)") }
            if let progress = message.progress { job.progress(progress.done, progress.total) }
            if let r = message.result { result = r }
        }
        guard let result else { throw USMError.pluginFailed(program: name, reason: "it printed no result line") }
        outcome.rows = result.rows ?? [:]
        return outcome
    }
}

/// Bytes read on another thread, handed over once.
private final class Collected: Sendable {
    private let state = Mutex<(Data, Bool)>((Data(), false))
    var done: Bool { state.withLock { $0.1 } }
    var data: Data { state.withLock { $0.0 } }
    func set(_ data: Data) { state.withLock { $0 = (data, true) } }
}
