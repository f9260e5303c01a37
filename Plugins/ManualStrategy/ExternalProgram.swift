import Foundation
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
/// Run with `posix_spawn` (`ChildProcess`) rather than Foundation's `Process` or swift-subprocess:
/// the engine is synchronous, and the plugin must start in a process group of its own so that a
/// deadline stops everything it started.
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
            guard FileStatus.resolve(url.path)?.kind == .file, FileManager.default.isExecutableFile(atPath: url.path)
            else {
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
            source: .init(
                path: source.path, storeUUID: nil, externalData: job.sourceExternalData.path,
                entities: job.sourceSchema.entities.map {
                    .init(
                        name: $0.name, number: $0.number, parent: job.sourceSchema.entity($0.superNumber)?.name,
                        table: $0.table, system: $0.isSystem)
                }),
            destination: .init(path: job.destination.path, exists: job.isMerge),
            scratch: work.path, parameters: job.options.parameters)
        let requestData = try JSONEncoder().encode(request)

        var environment: [String: String] = ["TMPDIR": work.path]
        for key in ["PATH", "HOME", "LANG"] { environment[key] = job.options.environment[key] }
        var outcome = MigrationOutcome(
            plugin: program.path,
            steps: [MigrationStep("ran \(program.path) migrate", why: "the external plugin filled the staged store")])
        var output = PluginOutput(name: name)
        // Each line as it comes: memory stays flat however much the program prints.
        let ending = try ChildProcess(
            program: program, arguments: ["migrate"], environment: environment, directory: work,
            timeout: job.options.pluginTimeout
        ).run(input: requestData) { line in
            output.accept(line, progress: job.progress)
        }
        outcome.notes = output.notes
        let result = output.result
        let protocolError = output.protocolError
        let stray = listing(userFolder).subtracting(userBefore)
        if ending == .timedOut {
            throw USMError.pluginFailed(
                program: name,
                reason:
                    "timed out after \(Int(job.options.pluginTimeout)) s (--plugin-timeout) and was stopped with everything it started"
            )
        }
        // What the program may not touch, checked before its answer is believed.
        if !stray.isEmpty {
            for entry in stray { try? FileManager.default.removeItem(at: userFolder.appendingPathComponent(entry)) }
            throw USMError.pluginRefused(
                program: name,
                reason:
                    "it created \(stray.sorted().joined(separator: ", ")) in \(userFolder.path), outside its destination (removed)"
            )
        }
        let allowed: Set<String> = Set(["", "-wal", "-shm", "-journal"].map { job.destination.lastPathComponent + $0 })
            .union([StoreFileSet(main: job.destination).supportDirectory.lastPathComponent])
        let outside = listing(staging).subtracting(allowed)
        if !outside.isEmpty {
            throw USMError.pluginRefused(
                program: name, reason: "it wrote \(outside.sorted().joined(separator: ", ")) beside its destination")
        }
        // Its destination is ours to write next: no link (symbolic or hard) to a file elsewhere.
        if let problem = linkedMember(of: StoreFileSet(main: job.destination), inside: staging) {
            throw USMError.pluginFailed(program: name, reason: problem + "; nothing was written through it")
        }
        if listing(sourceDir) != ["source.sqlite"] || (try? FileDigest.sha256(of: source)) != sourceHash {
            throw USMError.pluginRefused(program: name, reason: "it changed its read-only copy of the source")
        }
        switch ending {
        case .exited(0): break
        case let .exited(code): throw USMError.pluginFailed(program: name, reason: "exited with status \(code)")
        case let .signalled(signal):
            throw USMError.pluginFailed(program: name, reason: "was killed by signal \(signal)")
        case .refused:
            throw USMError.pluginFailed(
                program: name,
                reason: protocolError ?? "a stdout line is longer than \(ChildProcess.maxLine) bytes; it was stopped")
        case .timedOut: break
        }
        guard let result else { throw USMError.pluginFailed(program: name, reason: "it printed no result line") }
        outcome.rows = result.rows ?? [:]
        return outcome
    }

    /// Why a member of the destination's file set is not a file of the staging folder's own: a
    /// symlink, something else than a regular file (a folder for the support folder), or a regular
    /// file with another name elsewhere (a hard link, link count above 1). Nil when every member
    /// present, and everything in the support folder, is.
    static func linkedMember(of files: StoreFileSet, inside staging: URL) -> String? {
        func problem(_ path: String, folder: Bool) -> String? {
            var st = stat()
            guard lstat(path, &st) == 0 else { return errno == ENOENT ? nil : "its \(path) cannot be examined" }
            let kind = UInt32(st.st_mode) & UInt32(S_IFMT)
            if kind == UInt32(S_IFLNK) { return "it made \(path) a symlink" }
            if folder {
                return kind == UInt32(S_IFDIR) ? nil : "it made \(path) something other than a folder"
            }
            if kind != UInt32(S_IFREG) { return "it made \(path) something other than a regular file" }
            if st.st_nlink != 1 { return "it made \(path) a hard link to a file elsewhere (\(st.st_nlink) names)" }
            return nil
        }
        guard FileSystemPath.isInside(files.main.path, staging.path) else {
            return "its destination \(files.main.path) is not in its staging folder"
        }
        for member in [files.main, files.wal, files.shm, files.journal] {
            if let found = problem(member.path, folder: false) { return found }
        }
        let support = files.supportDirectory.path
        if let found = problem(support, folder: true) { return found }
        guard FileStatus.lookup(support) != nil else { return nil }
        var stack = [support]
        while let dir = stack.popLast() {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            for name in names {
                let path = dir + "/" + name
                if FileStatus.lookup(path)?.kind == .directory {
                    if let found = problem(path, folder: true) { return found }
                    stack.append(path)
                } else if let found = problem(path, folder: false) {
                    return found
                }
            }
        }
        return nil
    }
}
