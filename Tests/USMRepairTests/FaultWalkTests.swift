import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Every kill point and every failure point of every changing command, walked one by one with
/// strace's fault injection (issue 20): a run is stopped by SIGKILL at the K-th call of each
/// syscall that changes the file system or makes a change durable, then `recover` must give the
/// old state or the new one, with nothing of usm-repair's left; a run whose K-th call fails (EIO,
/// or ENOSPC for writes) must end with a documented exit code — never a crash or a hang — and leave
/// the old files (a failure) or the new ones (exit 0).
///
/// The walk starts thousands of processes, more than the rest of the suite together, so it runs
/// when asked: `USM_FAULT_WALK=all` walks every point, `USM_FAULT_WALK_STRIDE=N` every N-th point
/// (each command still walked from its first to its last point); CI (`.ci/run`) walks every 9th.
@Suite(
    "kill and failure points", .timed,
    .enabled(if: FaultWalk.strace != nil, "strace is not installed (apt-get install strace)"),
    .enabled(
        if: FaultWalk.requested,
        "the walk runs with USM_FAULT_WALK=all or USM_FAULT_WALK_STRIDE=N (.ci/run walks every 9th point)"))
struct FaultWalkTests {
    @Test("kill points: recover gives the old state or the new one, nothing left", arguments: FaultWalk.commands)
    func killPoints(_ command: FaultWalk.Command) throws {
        let walk = try FaultWalk(command)
        let report = try walk.kills()
        FaultWalk.log(command, report)
        #expect(report.failures.isEmpty, "\(command): \(report.failures.prefix(10).joined(separator: "\n"))")
        #expect(report.walked > 0)
        print("kill walk \(command): \(report.walked) points, outcomes \(report.outcomes)")
    }

    @Test(
        "failure points: a documented exit code, never a crash or a hang; old files or new ones",
        arguments: FaultWalk.commands)
    func failurePoints(_ command: FaultWalk.Command) throws {
        let walk = try FaultWalk(command)
        let report = try walk.failures()
        FaultWalk.log(command, report)
        #expect(report.failures.isEmpty, "\(command): \(report.failures.prefix(10).joined(separator: "\n"))")
        #expect(report.walked > 0)
        print("failure walk \(command): \(report.walked) points, outcomes \(report.outcomes)")
        for (outcome, example) in report.examples.sorted(by: { $0.key < $1.key }) {
            print("  \(outcome), first at: \(example)")
        }
    }
}

/// One command walked over its kill and failure points.
struct FaultWalk {
    /// A changing command and the fixture it runs on.
    struct Command: Sendable, CustomStringConvertible {
        let arguments: [String]
        /// Runs the command on the snapshot of a first run (undo) instead of the fixture's flags.
        var undo = false
        /// For a command that names its paths itself (`migrate-store`, `restore --to`): the
        /// arguments take no layout flags, `{local}`, `{copy}`, `{tmp}` and `{archive}` stand for the
        /// fixture's local store, active store's copy, folder and an archive of its container, and
        /// these are `recover`'s arguments.
        var recover: [String]? = nil
        /// Folders judged beside the layout's (`{tmp}/t`: the target of `restore --to`).
        var extraFolders: [String] = []
        /// A store of the fixture damaged first (`--salvage`): `{local}` or `{copy}`.
        var damaged: String? = nil
        /// For `archive` (which takes no `--yes`): the bundle it writes. Bundles differ from run to
        /// run (their creation time), so the state is judged by what may lie beside each other:
        /// nothing (old), the bundle with its `.sha256` sidecar and its redaction map naming its
        /// SHA-256 (new), or files that go beside a bundle without it (an interrupted run puts
        /// them in place first and the bundle's rename last; never a bundle without its map).
        var bundle: String? = nil
        var description: String {
            (undo ? "undo of " : "") + (damaged.map { "(\($0) damaged) " } ?? "") + arguments.joined(separator: " ")
        }

        /// `args` with the placeholders of `f`.
        static func substitute(_ args: [String], _ f: OperationTests.Fixture) -> [String] {
            args.map {
                $0.replacingOccurrences(of: "{local}", with: f.paths.localStore.path)
                    .replacingOccurrences(of: "{copy}", with: f.paths.cloudStore(f.options.activeUUID).path)
                    .replacingOccurrences(of: "{archive}", with: f.tmp.path("b.tar.zst").path)
                    .replacingOccurrences(of: "{tmp}", with: f.tmp.url.path)
            }
        }
    }

    /// Every changing command, or those whose description contains `USM_FAULT_WALK_ONLY` (to walk one).
    static let commands: [Command] = {
        let all =
            DataSafetyTests.everyCommand.map { Command(arguments: $0) } + [
                Command(arguments: ["rebuild", "--from", "local", "--discard-cloud"], undo: true),
                Command(arguments: ["migrate", "cloud-to-local", "--replace"], undo: true),
                Command(
                    arguments: ["migrate-store", "{copy}", "{local}", "--overwrite"],
                    recover: ["recover", "--store", "{local}"]),
                Command(
                    arguments: ["migrate-store", "{copy}", "{local}", "--into"],
                    recover: ["recover", "--store", "{local}"]),
                Command(
                    arguments: ["restore", "{archive}", "--to", "{tmp}/t"],
                    recover: ["recover", "--app-dir", "{tmp}/t"], extraFolders: ["{tmp}/t"]),
                Command(
                    arguments: ["salvage", "{copy}", "{local}", "--overwrite"],
                    recover: ["recover", "--store", "{local}"]),
                Command(arguments: ["dedupe", "--store", "{local}"], recover: ["recover", "--store", "{local}"]),
                Command(arguments: ["migrate", "cloud-to-local", "--merge"]),
                Command(arguments: ["rebuild", "--from", "cloud", "--merge"]),
                Command(
                    arguments: ["rebuild", "--from", "local", "--salvage", "--discard-cloud"], damaged: "{local}"),
                Command(arguments: ["migrate", "cloud-to-local", "--salvage", "--replace"], damaged: "{copy}"),
                Command(
                    arguments: ["rebuild", "--from", "local", "--salvage", "--discard-cloud"], undo: true,
                    damaged: "{local}"),
                // issue 31: a kill between the bundle and its redaction map.
                Command(
                    arguments: ["archive", "--redact", "-o", "{tmp}/out/b.tar.zst"], extraFolders: ["{tmp}/out"],
                    bundle: "{tmp}/out/b.tar.zst"),
            ]
        guard let only = ProcessInfo.processInfo.environment["USM_FAULT_WALK_ONLY"] else { return all }
        return all.filter { $0.description.contains(only) }
    }()

    static let strace: URL? = ["/usr/bin/strace", "/bin/strace"].map { URL(fileURLWithPath: $0) }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }

    /// Calls that change the file system's names or make data durable: a kill before each is a
    /// distinct state (content writes in between only fill private files).
    static let killCalls = [
        "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "mkdir", "mkdirat", "link", "linkat", "fsync",
        "fdatasync", "ftruncate",
    ]
    /// Calls made to fail: the same, and writes (EIO; ENOSPC for writes).
    static let failCalls: [(call: String, error: String)] =
        killCalls.map { ($0, "EIO") } + [
            ("write", "EIO"), ("write", "ENOSPC"), ("pwrite64", "ENOSPC"), ("openat", "EIO"),
        ]

    /// Appends a walk's findings to the file `USM_FAULT_WALK_LOG` names, when set.
    static func log(_ command: Command, _ report: Report) {
        guard let path = ProcessInfo.processInfo.environment["USM_FAULT_WALK_LOG"] else { return }
        let text = report.failures.map { "\(command)\t\($0)\n" }.joined()
        guard
            let handle = FileHandle(forWritingAtPath: path)
                ?? {
                    _ = FileManager.default.createFile(atPath: path, contents: nil)
                    return FileHandle(forWritingAtPath: path)
                }()
        else { return }
        handle.seekToEndOfFile()
        handle.write(Data(text.utf8))
        try? handle.close()
    }

    /// True when the environment asks for the walk.
    static var requested: Bool {
        let env = ProcessInfo.processInfo.environment
        return env["USM_FAULT_WALK"] != nil || env["USM_FAULT_WALK_STRIDE"] != nil
    }

    static var stride: Int {
        let env = ProcessInfo.processInfo.environment
        if env["USM_FAULT_WALK"] == "all" { return 1 }
        return env["USM_FAULT_WALK_STRIDE"].flatMap(Int.init).map { max($0, 1) } ?? 9
    }

    let command: Command
    let tmp: TempDir
    let template: OperationTests.Fixture
    /// For an undo: the operation's result, put back at the template's paths before each point
    /// (a snapshot is restored where it was taken).
    let pristine: URL?
    /// The clean run's result.
    let newState: [TreeSnapshot]
    /// The snapshot an undo puts back.
    let snapshot: String?

    init(_ command: Command) throws {
        self.command = command
        tmp = try TempDir()
        let configure: (inout FixtureContainer.Options) -> Void = {
            // The active store marked corrupt, except for the commands that mark it.
            $0.corruptedUUID =
                ["corruption", "mark"] == command.arguments || command.arguments.contains("--in-app")
                ? nil : $0.activeUUID
            $0.cloudEnabled = command.arguments == ["cloud", "enable"] ? false : true
            $0.local.walOnlyBooks = 2
            $0.local.books = 4
            $0.cloud.books = 4
        }
        template = try OperationTests.Fixture(configure)
        if let damaged = command.damaged {
            // ZITEM's first page overwritten: SQLite finds the store malformed, salvage reads the rest.
            let store = URL(fileURLWithPath: Command.substitute([damaged], template)[0])
            let map = try PageMap.read(store)
            let pages = (map.leaves["ZITEM"] ?? []).map(\.page) + (map.interior["ZITEM"] ?? [])
            try StoreDamage.overwrite(store, pages: Array(pages.prefix(1)), pageSize: map.pageSize)
        }
        if command.arguments.first == "dedupe" {
            // A duplicated tag, so that dedupe has a plan to run.
            try FixtureStore.mutate(
                template.paths.localStore,
                "INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT (SELECT MAX(Z_PK) + 1 FROM ZTAG), Z_ENT, Z_OPT, ZNAME FROM ZTAG WHERE Z_PK = 1"
            )
        }
        if command.arguments.contains("{archive}") {
            // restore --to: an archive of the container, restored over a folder that holds an older one.
            let archived = USM.run([
                "archive", "--container", template.paths.root.path, "-o", template.tmp.path("b.tar.zst").path,
            ])
            try #require(archived.status == 0, "archive: \(archived.stderr)")
            let older = template.tmp.path("t/container")
            try FileManager.default.createDirectory(at: older, withIntermediateDirectories: true)
            try Data("older work".utf8).write(to: older.appendingPathComponent("notes.txt"))
        }
        if command.bundle != nil {
            try FileManager.default.createDirectory(at: template.tmp.path("out"), withIntermediateDirectories: true)
        }
        if command.undo {
            // The undo's "old" state is the operation's result, its "new" one the state before it.
            let before = try template.snapshot()
            let first = template.run(command.arguments + ["--yes", "--json"], state: tmp.path("state0"))
            try #require(first.status == 0, "the first run of \(command): \(first.stderr)")
            snapshot = try #require(first.json["snapshot"] as? String)
            let saved = tmp.path("pristine")
            try TreeCopy.copy(template.tmp.url, to: saved)
            pristine = saved
            let clean = try Self.prepare(template, pristine: saved)
            let r = clean.run(["restore", snapshot!, "--yes"], state: tmp.path("clean"))
            try #require(r.status == 0, "\(command): \(r.stderr)")
            newState = try clean.snapshot()
            try #require(
                OperationTests.contentDifferences(newState, before).isEmpty,
                "the undo gives back the state before the operation")
        } else {
            snapshot = nil
            pristine = nil
            let clean = try OperationTests.Fixture(copying: template)
            let r = clean.run(Self.arguments(command, clean, snapshot: nil), state: tmp.path("clean"))
            try #require(r.status == 0, "\(command): \(r.stderr)")
            newState = try Self.snapshot(clean, command)
        }
    }

    /// A layout for one point: a copy of the template, or (undo) the template put back as it was.
    static func prepare(_ template: OperationTests.Fixture, pristine: URL?) throws -> OperationTests.Fixture {
        guard let pristine else { return try OperationTests.Fixture(copying: template) }
        for name in try FileManager.default.contentsOfDirectory(atPath: template.tmp.url.path) {
            try FileManager.default.removeItem(at: template.tmp.url.appendingPathComponent(name))
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: pristine.path) {
            try TreeCopy.copy(pristine.appendingPathComponent(name), to: template.tmp.url.appendingPathComponent(name))
        }
        return template
    }

    func prepare() throws -> OperationTests.Fixture { try Self.prepare(template, pristine: pristine) }

    /// The command line for fixture `f`.
    static func arguments(_ command: Command, _ f: OperationTests.Fixture, snapshot: String?) -> [String] {
        command.undo
            ? ["restore", snapshot ?? "", "--yes"]
            : Command.substitute(command.arguments, f) + (command.bundle == nil ? ["--yes"] : [])
    }

    func arguments(_ f: OperationTests.Fixture) -> [String] { Self.arguments(command, f, snapshot: snapshot) }

    /// The folders judged: the layout's and the command's own.
    static func snapshot(_ f: OperationTests.Fixture, _ command: Command) throws -> [TreeSnapshot] {
        let extra = Command.substitute(command.extraFolders, f).map { URL(fileURLWithPath: $0) }
        return try (f.paths.folders + extra).map(TreeSnapshot.init)
    }

    /// `recover` after a point: the command's own, or the layout's.
    func recover(_ f: OperationTests.Fixture, state: URL) -> CLI.Result {
        guard let own = command.recover else { return f.recover(state: state) }
        return USM.run(Command.substitute(own, f) + ["--json"], environment: ["XDG_STATE_HOME": state.path])
    }

    struct Report {
        var walked = 0
        var outcomes: [String: Int] = [:]
        var failures: [String] = []
        /// For each outcome, the first call that led to it (what was made to fail).
        var examples: [String: String] = [:]
    }

    /// How many times the clean run calls each of `calls`.
    func counts(_ calls: [String]) throws -> [String: Int] {
        let f = try prepare()
        let out = tmp.path("count-\(UUID().uuidString).txt")
        let r = try f.trace(
            arguments(f), strace: ["-c", "-o", out.path, "-e", "trace=\(Set(calls).sorted().joined(separator: ","))"],
            state: tmp.path("count"))
        try #require(r.status == 0, "\(command) under strace: \(r.stderr)")
        var counts: [String: Int] = [:]
        for line in try String(contentsOf: out, encoding: .utf8).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5, let name = fields.last.map(String.init), calls.contains(name),
                let n = Int(fields[3])
            else { continue }
            counts[name] = n
        }
        return counts
    }

    /// The points to walk: 1...count for each call, every `stride`-th (the last one always).
    func points(_ counts: [String: Int]) -> [(String, Int)] {
        counts.sorted { $0.key < $1.key }.flatMap { call, n -> [(String, Int)] in
            guard n > 0 else { return [] }
            var ks = Array(Swift.stride(from: 1, through: n, by: Self.stride))
            if ks.last != n { ks.append(n) }
            return ks.map { (call, $0) }
        }
    }

    /// Old (byte for byte, file times included, as `old` was taken), new (the clean run's contents),
    /// or what differs from both.
    func judge(_ f: OperationTests.Fixture, old oldState: [TreeSnapshot]) throws -> (String, [String]) {
        let state = try Self.snapshot(f, command)
        var problems: [String] = []
        let extra = Command.substitute(command.extraFolders, f).map { URL(fileURLWithPath: $0) }
        for folder in f.paths.folders + extra
        where (try TreeSnapshot(folder)).entries.keys.contains(where: { $0.contains(".usm-repair") }) {
            problems.append("usm-repair's private folders left in \(folder.lastPathComponent)")
        }
        if let bundle = command.bundle {
            let layoutFolders = f.paths.folders.count
            if Array(state.prefix(layoutFolders)) != Array(oldState.prefix(layoutFolders)) {
                problems.append("archive changed the layout's folders")
            }
            let (outcome, found) = try Self.judgeBundle(URL(fileURLWithPath: Command.substitute([bundle], f)[0]))
            return (outcome, problems + found)
        }
        if state == oldState { return ("old", problems) }
        let differences = OperationTests.contentDifferences(state, newState)
        if differences.isEmpty { return ("new", problems) }
        let fromOld = OperationTests.contentDifferences(state, oldState)
        return (
            "neither",
            problems + [
                "neither old nor new: differs from new in \(differences.prefix(4)), from old in \(fromOld.prefix(4))"
            ]
        )
    }

    /// What lies beside `bundle` in its folder: nothing ("old"); the bundle, its sidecar and its
    /// redaction map, both naming the bundle's SHA-256 ("new"); or some of the files that go
    /// beside it without the bundle ("beside, no bundle"). A bundle without its map, a map or
    /// sidecar naming another bundle, or a partial file left are findings.
    static func judgeBundle(_ bundle: URL) throws -> (String, [String]) {
        let folder = bundle.deletingLastPathComponent()
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        let map = bundle.lastPathComponent + ".redaction-map.jsonl"
        let sidecar = bundle.lastPathComponent + ".sha256"
        var problems: [String] = []
        let unknown = names.subtracting([bundle.lastPathComponent, map, sidecar])
        if !unknown.isEmpty { problems.append("left beside the bundle: \(unknown.sorted())") }
        guard names.contains(bundle.lastPathComponent) else {
            return (names.isEmpty ? "old" : "beside, no bundle", problems)
        }
        let sha = try FileCopy.sha256(of: bundle.path).sha256
        if !names.contains(map) {
            problems.append("a bundle without its redaction map")
        } else {
            let header =
                try String(contentsOf: folder.appendingPathComponent(map), encoding: .utf8)
                .split(separator: "\n").first.map { String($0) } ?? ""
            if !header.contains("\"bundleSHA256\":\"\(sha)\"") {
                problems.append("the redaction map names another bundle: \(header.prefix(200))")
            }
        }
        let sum = (try? String(contentsOf: folder.appendingPathComponent(sidecar), encoding: .utf8)) ?? ""
        if !sum.hasPrefix(sha + "  ") { problems.append("the sidecar does not name the bundle's SHA-256: \(sum)") }
        return ("new", problems)
    }

    func kills() throws -> Report {
        var report = Report()
        for (call, k) in points(try counts(Self.killCalls)) {
            let f = try prepare()
            let old = try Self.snapshot(f, command)
            let state = tmp.path("kill-\(call)-\(k)")
            let r = try f.trace(
                arguments(f), strace: ["-e", "trace=\(call)", "-e", "inject=\(call):signal=KILL:when=\(k)"],
                state: state)
            let recovered = recover(f, state: state)
            var (outcome, problems) = try judge(f, old: old)
            if recovered.status != 0 { problems.append("recover exited \(recovered.status): \(recovered.stderr)") }
            if ![0, 137].contains(r.status) { problems.append("the run exited \(r.status): \(r.stderr.suffix(300))") }
            let records = state.appendingPathComponent("usm-repair/operations")
            if let left = try? FileManager.default.contentsOfDirectory(atPath: records.path), !left.isEmpty {
                problems.append("records of operations left in the state folder: \(left)")
            }
            report.walked += 1
            report.outcomes[outcome, default: 0] += 1
            report.failures += problems.map { "\(call) #\(k) (run \(r.status)): \($0)" }
        }
        return report
    }

    func failures() throws -> Report {
        var report = Report()
        let counts = try counts(Array(Set(Self.failCalls.map(\.call))))
        for (call, error) in Self.failCalls {
            for (_, k) in points([call: counts[call] ?? 0]) {
                let f = try prepare()
                let old = try Self.snapshot(f, command)
                let state = tmp.path("fail-\(call)-\(error)-\(k)")
                let traced = tmp.path("trace-\(call)-\(error)-\(k).txt")
                let r = try f.trace(
                    arguments(f),
                    strace: [
                        "-o", traced.path, "-e", "trace=\(call)", "-e", "inject=\(call):error=\(error):when=\(k)",
                    ], state: state)
                // The call that was made to fail, for the findings.
                let injected =
                    ((try? String(contentsOf: traced, encoding: .utf8)) ?? "").split(separator: "\n")
                    .first { $0.contains("INJECTED") }.map { String($0.prefix(400)) } ?? "?"
                var problems: [String] = []
                // The dynamic loader's own calls fail before usm-repair runs (exit 127): not ours.
                if r.status == 127, r.stderr.contains("error while loading shared libraries") {
                    report.outcomes["loader", default: 0] += 1
                    continue
                }
                if r.status > 128 || r.status < 0 {
                    problems.append("killed by a signal (\(r.status)): \(r.stderr.suffix(400))")
                }
                if r.status == 124 { problems.append("hung (stopped after the time limit)") }
                // An I/O error or a full disk is never the input's fault: not bad input (2).
                if r.status == 2 {
                    problems.append("an injected \(error) reported as bad input (exit 2): \(r.stderr.suffix(300))")
                }
                if ![0, 3, 5, 7, 8, 9, 10, 74, 75].contains(r.status) {
                    problems.append("exit \(r.status) is not a code this command documents: \(r.stderr.suffix(300))")
                }
                var (outcome, judged) = try judge(f, old: old)
                // A failure must leave the old files; it may have left an operation pending only
                // when its own undo failed too (then `recover` must give the old state).
                if r.status != 0, outcome != "old" {
                    let recovered = recover(f, state: state)
                    (outcome, judged) = try judge(f, old: old)
                    if recovered.status != 0 {
                        problems.append("recover after the failure exited \(recovered.status): \(recovered.stderr)")
                    }
                    if outcome == "new", recovered.json["recovered"] == nil {
                        problems.append("exit \(r.status) but the new state is in place")
                    }
                    outcome += " after recover"
                }
                // A lock file or empty folder of ours that could not be removed after a complete
                // change: said in the report, and removed by the next run.
                if r.status == 0, outcome != "new" || !judged.isEmpty,
                    r.stdout.contains("could not remove its own lock or empty folder")
                {
                    let recovered = recover(f, state: state)
                    (outcome, judged) = try judge(f, old: old)
                    if recovered.status != 0 {
                        problems.append("recover after the leftover exited \(recovered.status): \(recovered.stderr)")
                    }
                    outcome += " after cleanup"
                }
                if r.status == 0, !outcome.hasPrefix("new") { problems.append("exit 0 but not the new state") }
                problems += judged
                report.walked += 1
                report.outcomes["\(r.status) \(outcome)", default: 0] += 1
                if report.examples["\(r.status) \(outcome)"] == nil {
                    report.examples["\(r.status) \(outcome)"] = "\(call)=\(error) #\(k) \(injected)"
                }
                report.failures += problems.map { "\(call)=\(error) #\(k) [\(injected)]: \($0)" }
            }
        }
        return report
    }
}

extension OperationTests.Fixture {
    /// `recover`, and again with `--cloud-dir` when it asks for the ubiquity container discovery no
    /// longer finds (exit 4, documented: an emptied container is not found beside a download).
    func recover(state: URL) -> CLI.Result {
        let first = run(["recover", "--json"], state: state)
        guard first.status == 4 else { return first }
        return run(["recover", "--json", "--cloud-dir", paths.cloudDir.path], state: state)
    }

    /// True for commands that take no layout flags (`restore`, `migrate-store`).
    static func namesOwnPaths(_ args: [String]) -> Bool {
        ["restore", "migrate-store", "salvage", "dedupe"].contains(args.first ?? "")
    }

    /// Runs `usm-repair args... <flags>` in process with its own state folder.
    func run(_ args: [String], state: URL) -> CLI.Result {
        USM.run(args + (Self.namesOwnPaths(args) ? [] : flags), environment: ["XDG_STATE_HOME": state.path])
    }

    /// Runs `usm-repair args... <flags>` as a real process under strace (`options` before the
    /// command), with its own state folder, stopped after 60 s (exit 124).
    func trace(_ args: [String], strace options: [String], state: URL) throws -> CLI.Result {
        let all = args + (Self.namesOwnPaths(args) ? [] : flags)
        let quoted =
            ([FaultWalk.strace!.path, "-f", "-qq"] + (options.contains("-o") ? [] : ["-o", "/dev/null"]) + options + [
                CLI.binary.path
            ] + all)
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        return try CLI.shell("timeout -k 5 60 \(quoted)", in: tmp.url, environment: ["XDG_STATE_HOME": state.path])
    }
}
