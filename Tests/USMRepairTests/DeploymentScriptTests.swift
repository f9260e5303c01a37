import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// The README's deployment example, `Examples/deploy-migrate.sh`, run as a deployment would run it:
/// twice over a folder of containers, some already migrated, some that must be refused, one that
/// fails; each line says done, nothing to do, refused or failed, and the second run does nothing.
@Suite("deployment script", .timed)
struct DeploymentScriptTests {
    static let script = CLITests.packageRoot.appendingPathComponent("Examples/deploy-migrate.sh")

    /// The script's lines: container name → (outcome, exit code).
    static func outcomes(_ stdout: String) -> [String: (String, Int32)] {
        var result: [String: (String, Int32)] = [:]
        for line in stdout.split(separator: "\n") {
            let fields = line.split(separator: "\t").map(String.init)
            guard fields.count == 3, fields[0] != "summary", let code = Int32(fields[1]) else { continue }
            result[fields[2]] = (fields[0], code)
        }
        return result
    }

    @Test("run twice over a folder of containers: done, nothing to do, refused, failed, and nothing done twice")
    func twice() throws {
        let tmp = try TempDir()
        let folder = tmp.path("containers")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // Downloads alone (no ubiquity container beside them: a migration to the local store does not need it).
        func write(_ name: String, _ configure: (inout FixtureContainer.Options) -> Void = { _ in }) throws
            -> FixtureContainer.Paths
        {
            var o = FixtureContainer.Options()
            o.cloudLocation = .none
            configure(&o)
            return try FixtureContainer.write(to: folder.appendingPathComponent("\(name).xcappdata"), o)
        }
        _ = try write("Fresh") { $0.localStore = false }  // nothing local yet: done, then nothing to do
        let migrated = try write("Migrated") { $0.localStore = false }  // migrated by an earlier step
        let first = USM.run(["migrate", "cloud-to-local", "--container", migrated.root.path, "--yes"])
        #expect(first.status == 0, "\(first.stderr)")
        _ = try write("Keeps") { _ in }  // local objects the cloud lacks: refused
        let damaged = try write("Damaged") { $0.localStore = false }  // its cloud copy is garbage: refused
        var rng = SeededRandom(seed: 3)
        try Data((0..<8192).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(
            to: damaged.cloudStore(FixtureContainer.Options().activeUUID))
        let bad = try write("BadPrefs") { _ in }  // preferences that are not a plist: refused
        try Data("not a plist".utf8).write(to: bad.prefs)
        var full: FixtureContainer.Paths?
        if geteuid() == 0 {
            // Its app folder on a file system with no room for the new local store: failed.
            let staged = try FixtureContainer.write(
                to: tmp.path("staged.xcappdata"),
                {
                    var o = FixtureContainer.Options()
                    o.cloudLocation = .none
                    o.localStore = false
                    return o
                }())
            let target = folder.appendingPathComponent("Full.xcappdata")
            try FileManager.default.copyItem(at: staged.root, to: target)
            let app = target.appendingPathComponent("AppData/Library/Application Support")
            let size = try FileManager.default.subpathsOfDirectory(atPath: staged.appDir.path).reduce(0) { total, sub in
                total
                    + ((try? FileManager.default.attributesOfItem(
                        atPath: staged.appDir.appendingPathComponent(sub).path)[.size] as? Int) ?? 0)
            }
            try FileManager.default.removeItem(at: app)
            try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
            let mount = try CLI.shell(
                "mount -t tmpfs -o size=\(size + 64 * 1024) tmpfs \(OutOfSpaceTests.quoted(app.path)) && echo mounted",
                in: tmp.url)
            if mount.stdout.contains("mounted") {
                _ = try CLI.shell(
                    "cp -a \(OutOfSpaceTests.quoted(staged.appDir.path))/. \(OutOfSpaceTests.quoted(app.path))/",
                    in: tmp.url)
                full = FixtureContainer.paths(target)
            }
        }
        defer { if let full { _ = try? CLI.shell("umount \(OutOfSpaceTests.quoted(full.appDir.path))", in: tmp.url) } }

        let env = ["USM_REPAIR": CLI.binary.path]
        let run1 = try CLI.shell(
            "\(OutOfSpaceTests.quoted(Self.script.path)) \(OutOfSpaceTests.quoted(folder.path))", in: tmp.url,
            environment: env)
        let one = Self.outcomes(run1.stdout)
        #expect(one["Fresh"]?.0 == "done" && one["Fresh"]?.1 == 20, "\(run1.stdout)")
        #expect(one["Migrated"]?.0 == "nothing to do" && one["Migrated"]?.1 == 0, "\(run1.stdout)")
        #expect(one["Keeps"]?.0 == "refused" && one["Keeps"]?.1 == 8, "\(run1.stdout)")
        #expect(one["Damaged"]?.0 == "refused" && one["Damaged"]?.1 == 8, "\(run1.stdout)")
        #expect(one["BadPrefs"]?.0 == "refused" && one["BadPrefs"]?.1 == 2, "\(run1.stdout)")
        if full != nil {
            #expect(one["Full"]?.0 == "failed" && one["Full"]?.1 == 75, "\(run1.stdout)")
            #expect(run1.status == 1, "a failure fails the script")
        } else {
            #expect(run1.status == 0)
        }
        if full != nil {
            // The README shows this very output.
            let readme = try Documentation.text()
            #expect(readme.contains(run1.stdout), "README's sample output:\n\(run1.stdout)")
        }
        // The reports beside the containers are the commands' JSON.
        let report =
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("Fresh.report.json")))
            as? [String: Any]
        #expect(report?["changed"] as? Bool == true && report?["command"] as? String == "migrate cloud-to-local")
        let keeps = try String(contentsOf: folder.appendingPathComponent("Keeps.log"), encoding: .utf8)
        #expect(keeps.contains("--replace") && keeps.contains("--merge"), "the refusal says what to do: \(keeps)")

        let snapshots = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            !$0.hasSuffix(".json") && !$0.hasSuffix(".log")
        }
        let trees = try snapshots.sorted().map { try TreeSnapshot(folder.appendingPathComponent($0)) }
        let run2 = try CLI.shell(
            "\(OutOfSpaceTests.quoted(Self.script.path)) \(OutOfSpaceTests.quoted(folder.path))", in: tmp.url,
            environment: env)
        let two = Self.outcomes(run2.stdout)
        #expect(two["Fresh"]?.0 == "nothing to do" && two["Migrated"]?.0 == "nothing to do", "\(run2.stdout)")
        #expect(
            two["Keeps"]?.0 == "refused" && two["Damaged"]?.0 == "refused" && two["BadPrefs"]?.0 == "refused",
            "\(run2.stdout)")
        if full != nil { #expect(two["Full"]?.0 == "failed", "\(run2.stdout)") }
        #expect(run2.stdout.contains("summary\tdone 0\t"), "\(run2.stdout)")
        #expect(
            try snapshots.sorted().map { try TreeSnapshot(folder.appendingPathComponent($0)) } == trees,
            "the second run changed nothing")
    }

    @Test("--merge merges the containers holding local data (it refused them before): objects on both sides once")
    func merge() throws {
        let tmp = try TempDir()
        let folder = tmp.path("containers")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var locals: [String: URL] = [:]
        for name in ["Keeps", "AlsoKeeps"] {
            var o = FixtureContainer.Options()
            o.cloudLocation = .none
            let paths = try FixtureContainer.write(to: folder.appendingPathComponent("\(name).xcappdata"), o)
            locals[name] = paths.localStore
        }
        let env = ["USM_REPAIR": CLI.binary.path]
        let command = "\(OutOfSpaceTests.quoted(Self.script.path)) \(OutOfSpaceTests.quoted(folder.path)) --merge"
        let run1 = try CLI.shell(command, in: tmp.url, environment: env)
        let one = Self.outcomes(run1.stdout)
        for name in locals.keys.sorted() {
            #expect(one[name]?.0 == "done" && one[name]?.1 == 20, "\(name): \(run1.stdout)")
            let report =
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: folder.appendingPathComponent("\(name).report.json"))) as? [String: Any]
            let stores = (report?.details["ledger"] as? [String: Any])?["stores"] as? [[String: Any]] ?? []
            let matched = stores.first { $0["fate"] as? String == "merged" }?["matched"] as? [String: Int] ?? [:]
            #expect(matched.values.reduce(0, +) > 0, "objects on both sides are matched: \(stores)")
            let check = USM.run(["dedupe", "--store", locals[name]!.path, "--dry-run", "--json"])
            #expect(check.json["noOp"] as? Bool == true, "no object twice after the merge: \(check.stdout)")
        }
        #expect(run1.status == 0)
        let run2 = try CLI.shell(command, in: tmp.url, environment: env)
        let two = Self.outcomes(run2.stdout)
        #expect(locals.keys.allSatisfy { two[$0]?.0 == "nothing to do" }, "\(run2.stdout)")
    }
}
