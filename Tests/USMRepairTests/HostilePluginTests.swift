import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Plugins that try to outlive their run or to have usm-repair write outside through their
/// destination (the plugins are the tool's child processes; the tests start no usm-repair process).
@Suite("hostile plugins: escaped children, linked destinations", .timed)
struct HostilePluginTests {
    func run(_ tmp: TempDir, plugin: URL, _ extra: [String] = []) throws -> CLI.Result {
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("dst"), withIntermediateDirectories: true)
        return USM.run(
            ["migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--plugin", plugin.path]
                + ["--json"] + extra)
    }

    #if os(Linux)
        @Test(
            "a child started with setsid is stopped at --plugin-timeout and when the plugin exits",
            arguments: ["timeout", "exit"])
        func setsidChild(ending: String) throws {
            let tmp = try TempDir()
            let plugin = tmp.path("p")
            let mark = ending == "timeout" ? "4711" : "4712"
            let tail = ending == "timeout" ? "sleep 300\n" : "sleep 1\nexit 3\n"
            try ExecutableFile.write(
                "#!/bin/sh\nsetsid sh -c 'exec sleep \(mark)' </dev/null >/dev/null 2>&1 &\n" + tail, to: plugin)
            let r = try run(tmp, plugin: plugin, ["--plugin-timeout", "2"])
            #expect(r.status == 10, "\(r.stderr)")
            #expect((r.json["error"] as? [String: Any])?["code"] as? String == "plugin-failed")
            var left = PluginContractTests.processes(running: "sleep \(mark)")
            for _ in 0..<20 where !left.isEmpty {
                usleep(50_000)  // a killed process may take a moment to leave /proc
                left = PluginContractTests.processes(running: "sleep \(mark)")
            }
            #expect(left.isEmpty, "the plugin's setsid child outlived it: \(left)")
            for id in left { kill(Int32(id) ?? 0, SIGKILL) }
        }
    #endif

    @Test(
        "a plugin that makes its destination a link to a file outside: exit 10, nothing written outside",
        arguments: ["symlink", "link"])
    func linkedDestination(how: String) throws {
        let tmp = try TempDir()
        let outside = tmp.path("outside/real.sqlite")
        try FixtureStore.write(to: outside)
        let before = try Data(contentsOf: outside)
        let plugin = try PluginContractTests.plugin(
            in: tmp, "p",
            extra:
                "os.remove(request['destination']['path']); os.\(how)(\(outside.path.debugDescription), request['destination']['path'])"
        )
        let r = try run(tmp, plugin: plugin)
        #expect(r.status == 10, "\(how): \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "plugin-failed", "\(r.stdout)")
        #expect(try Data(contentsOf: outside) == before, "\(how): the file outside was written")
        let links = try FileManager.default.attributesOfItem(atPath: outside.path)[.referenceCount] as? Int
        #expect(links == 1, "\(how): the file outside has \(links ?? -1) names")
        #expect(FileStatus.lookup(tmp.path("dst/D.sqlite").path) == nil)
    }
}
