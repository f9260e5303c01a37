import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The external-plugin contract, with the example plugin and scripted misbehaving ones.
@Suite("migration: external plugin contract", .timed)
struct PluginContractTests {
    static let example = CLITests.packageRoot.appendingPathComponent("Examples/usm-repair-strategy-sqlite-copy")

    /// A Python plugin that copies its source into its destination, then runs `extra` (with
    /// `request` in scope), then prints `output` lines.
    static func plugin(
        in tmp: TempDir, _ name: String, extra: String = "", output: [String] = [#"{"result": {"rows": {}}}"#],
        status: Int = 0
    ) throws -> URL {
        let url = tmp.path(name)
        let prints = output.map { "print(\($0.debugDescription))" }.joined(separator: "\n")
        let script = """
            #!/usr/bin/env python3
            import json, os, sqlite3, sys, time
            request = json.load(sys.stdin)
            src = sqlite3.connect(request["source"]["path"])
            dst = sqlite3.connect(request["destination"]["path"])
            src.backup(dst)
            src.close(); dst.close()
            \(extra)
            \(prints)
            sys.exit(\(status))
            """
        try ExecutableFile.write(script, to: url)
        return url
    }

    func run(_ tmp: TempDir, plugin: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> (
        CLI.Result, TreeSnapshot?
    ) {
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("dst"), withIntermediateDirectories: true)
        let r = USM.run(
            [
                "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--plugin", plugin,
                "--json",
            ] + extra,
            environment: environment)
        return (r, try? TreeSnapshot(tmp.path("dst")))
    }

    /// The ids of the live processes whose command line is `commandLine` (what `ps -eo args` shows),
    /// read from /proc.
    static func processes(running commandLine: String) -> [String] {
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return ids.filter { id in
            guard id.allSatisfy(\.isNumber), let data = FileManager.default.contents(atPath: "/proc/\(id)/cmdline")
            else { return false }
            let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return words.joined(separator: " ") == commandLine
        }
    }

    @Test("success: the example plugin, found on PATH by name; its result is verified and its rows reported")
    func success() throws {
        let tmp = try TempDir()
        let bin = tmp.path("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try ExecutableFile.copy(from: Self.example, to: bin.appendingPathComponent("usm-repair-strategy-sqlite-copy"))
        let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let (r, _) = try run(tmp, plugin: "sqlite-copy", ["--param", "skip-history=yes"], environment: ["PATH": path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.details["strategy"] as? String == "manual")
        #expect((r.details["plugin"] as? String)?.hasSuffix("usm-repair-strategy-sqlite-copy") == true)
        #expect((r.details["verification"] as? [String: Any])?["rows"] as? String == "equal")
        let (rows, errors, _) = try Migrate.check(tmp.path("dst/D.sqlite"))
        #expect(errors.isEmpty)
        #expect(rows["Book"] == 6)
        #expect(Migrate.sidecars(tmp.path("dst/D.sqlite")).isEmpty)
        #expect(try Migrate.uuidAndKeys(tmp.path("dst/D.sqlite")).uuid != FixtureStore.Options().storeUUID)
    }

    @Test(
        "failure, timeout and garbage: exit 10, plugin-failed, nothing at the destination",
        arguments: ["exit", "timeout", "garbage", "no-result"])
    func failures(kind: String) throws {
        let tmp = try TempDir()
        let plugin: URL
        var extra: [String] = []
        switch kind {
        case "exit": plugin = try Self.plugin(in: tmp, "p", extra: "print('it went wrong', file=sys.stderr)", status: 3)
        case "timeout":
            plugin = try Self.plugin(in: tmp, "p", extra: "time.sleep(60)")
            extra = ["--plugin-timeout", "1"]
        case "garbage": plugin = try Self.plugin(in: tmp, "p", output: ["hello, this is not JSON"])
        default: plugin = try Self.plugin(in: tmp, "p", output: [#"{"note": "done"}"#])
        }
        let (r, after) = try run(tmp, plugin: plugin.path, extra)
        #expect(r.status == 10, "\(kind): \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "plugin-failed")
        #expect(after?.entries.isEmpty == true, "\(kind): nothing kept: \(after?.description ?? "")")
        if kind == "timeout" { #expect(r.stderr.contains("timed out")) }
        if kind == "exit" { #expect(r.stderr.contains("it went wrong"), "stderr is passed through") }
    }

    @Test(
        "--plugin-timeout holds when the plugin's child keeps its output open: exit 10 within the timeout + 2 s, the child gone, nothing kept"
    )
    func timeoutWithChild() throws {
        let tmp = try TempDir()
        let plugin = tmp.path("p")
        // The shell waits for its child, which holds the plugin's stdout open.
        try ExecutableFile.write("#!/bin/sh\nsleep 3117\n", to: plugin)
        let started = Date()
        let (r, after) = try run(tmp, plugin: plugin.path, ["--plugin-timeout", "2"])
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 10, "\(r.stderr)")
        #expect(r.stderr.contains("timed out"))
        #expect(seconds < 2 + 2 + 2, "took \(seconds) s")  // the timeout, the 2 s allowed, the run's own work
        #expect(after?.entries.isEmpty == true, "nothing kept: \(after?.description ?? "")")
        #expect(Self.processes(running: "sleep 3117").isEmpty, "the plugin's child outlived it")
    }

    @Test("a plugin printing without end is read line by line (memory flat) and a line beyond 1 MiB stops it: exit 10")
    func endlessOutput() throws {
        let tmp = try TempDir()
        let plugin = try Self.plugin(in: tmp, "p", extra: "sys.stdout.write('x' * (2 << 20)); sys.stdout.flush()")
        let (r, after) = try run(tmp, plugin: plugin.path)
        #expect(r.status == 10, "\(r.stderr)")
        #expect(after?.entries.isEmpty == true)
    }

    @Test(
        "a plugin that writes outside its destination or changes its source copy is refused, nothing kept",
        arguments: ["beside", "user-folder", "source"])
    func refusals(kind: String) throws {
        let tmp = try TempDir()
        let extra =
            switch kind {
            case "beside":
                "open(os.path.join(os.path.dirname(request['destination']['path']), 'extra.txt'), 'w').write('x')"
            case "user-folder":
                "open(os.path.join(os.path.dirname(os.path.dirname(request['destination']['path'])), 'stray.txt'), 'w').write('x')"
            default: "os.chmod(request['source']['path'], 0o644); open(request['source']['path'], 'ab').write(b'x')"
            }
        let plugin = try Self.plugin(in: tmp, "p", extra: extra)
        let (r, after) = try run(tmp, plugin: plugin.path)
        #expect(r.status == 3, "\(kind): \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "plugin-refused")
        #expect(after?.entries.isEmpty == true, "\(kind): nothing kept: \(after?.description ?? "")")
    }
}
