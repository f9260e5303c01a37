import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// A container is a stranger's data: nothing it carries is obeyed. Planted operation folders,
/// links planted where a plan walks, stores held open by another process, a newcomer where
/// recovery must put something back: each refused with its exit code, nothing changed outside
/// the layout, and never "undone" while an item is missing.
@Suite("hostile layouts: a container is input, never instruction", .timed)
struct HostileLayoutTests {
    typealias Fixture = OperationTests.Fixture

    /// A folder outside the layout (and not beside the download, where the ubiquity container is
    /// looked for) with a file in it, the target of every attack below.
    static func outside(_ f: Fixture) throws -> (dir: URL, file: URL) {
        let dir = f.tmp.path("deep/er/elsewhere")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("dir"), withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("dir/precious.txt")
        try Data("keep me".utf8).write(to: file)
        return (dir, file)
    }

    /// Writes a crafted operation folder into the app folder's private folder.
    static func plant(
        _ plan: Plan, folderName: String? = nil, in f: Fixture, journal: String = #"{"event":"committed"}"# + "\n"
    ) throws -> URL {
        let folder = f.paths.appDir.appendingPathComponent(
            ".usm-repair/operations/\(folderName ?? plan.id)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try JSONOutput.data(plan).write(to: folder.appendingPathComponent("plan.json"))
        try Data(journal.utf8).write(to: folder.appendingPathComponent("journal.jsonl"))
        return folder
    }

    static func appRoot(_ f: Fixture) -> Plan.Root {
        Plan.Root(name: "app", path: f.paths.appDir.path, privateFolder: ".usm-repair")
    }

    static func plan(id: String, roots: [Plan.Root], steps: [Plan.Step]) -> Plan {
        Plan(
            id: id, operation: "delete local-store", roots: roots, expected: [:], stores: [], snapshotItems: [],
            steps: steps, notes: [],
            nextLaunchBefore: nil, nextLaunchAfter: nil)
    }

    @Test(
        "a planted plan whose id climbs out of the layout: recover refuses (3), the folder outside stays, status says so"
    )
    func plantedIDEscape() throws {
        let f = try Fixture()
        let (dir, file) = try Self.outside(f)
        let id = "../../../../../../../../../../..\(dir.appendingPathComponent("dir").path)"
        let plan = Self.plan(id: id, roots: [Self.appRoot(f)], steps: [.init(.commit, "c"), .init(.purge, "p")])
        _ = try Self.plant(plan, folderName: "x1", in: f)
        let before = try TreeSnapshot(dir)
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "untrusted-operation")
        #expect(try TreeSnapshot(dir) == before)
        #expect(FileManager.default.fileExists(atPath: file.path))
        let status = try f.run(["status", "--json"])
        let codes = ((status.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
        #expect(codes.contains("untrusted-operation"))
        // Every changing command recovers first: each refuses the same way, nothing changed.
        let layout = try f.snapshot()
        for command in [
            ["delete", "local-store"], ["cloud", "disable"], ["corruption", "clear"],
            ["rebuild", "--from", "local", "--discard-cloud"],
        ] {
            let refused = try f.run(command + ["--yes"])
            #expect(refused.status == 3, "\(command): \(refused.stderr)")
            let dry = try f.run(command + ["--dry-run"])
            #expect(dry.status == 3, "\(command) --dry-run: \(dry.stderr)")
        }
        #expect(try f.snapshot() == layout)
        #expect(try TreeSnapshot(dir) == before)
    }

    @Test(
        "planted plans with plain ids: steps, trash, staging or roots outside the layout are never obeyed",
        arguments: 0..<5)
    func plantedSteps(variant: Int) throws {
        let f = try Fixture()
        let (dir, file) = try Self.outside(f)
        let id = "0123abcd-0000-4000-8000-00000000000\(variant)"
        let root = Self.appRoot(f)
        let op = root.operationURL(id)
        let outsideRoot = Plan.Root(name: "app", path: dir.path, privateFolder: ".usm-repair")
        let plan: Plan
        var journal = #"{"event":"begin","step":0}"# + "\n"
        switch variant {
        case 0:  // retire a file outside into the trash, not committed: "undo" would move it around
            plan = Self.plan(
                id: id, roots: [root],
                steps: [.init(.retire(path: file.path, trash: op.path + "/trash/1/x"), "r"), .init(.commit, "c")])
        case 1:  // trash outside the operation folder
            plan = Self.plan(
                id: id, roots: [root],
                steps: [
                    .init(.retire(path: f.paths.localStore.path, trash: dir.path + "/stolen"), "r"),
                    .init(.commit, "c"),
                ])
            try FileManager.default.copyItem(at: f.paths.localStore, to: dir.appendingPathComponent("stolen"))
        case 2:  // install from a staging outside: undo would move the user's file there
            plan = Self.plan(
                id: id, roots: [root],
                steps: [
                    .init(.install(staged: dir.path + "/dir", path: f.paths.localStore.path, optional: false), "i"),
                    .init(.commit, "c"),
                ])
        case 3:  // an extra root outside: its private folder would be locked and purged
            try FileManager.default.createDirectory(at: outsideRoot.operationURL(id), withIntermediateDirectories: true)
            try Data("theirs".utf8).write(to: outsideRoot.operationURL(id).appendingPathComponent("x"))
            plan = Self.plan(id: id, roots: [root, outsideRoot], steps: [.init(.commit, "c"), .init(.purge, "p")])
            journal = #"{"event":"begin","step":0}"# + "\n" + #"{"event":"committed"}"# + "\n"
        default:  // a well-formed plan of a foreign machine: no record here
            plan = Self.plan(
                id: id, roots: [root],
                steps: [
                    .init(
                        .retire(path: f.paths.localStore.path, trash: op.path + "/trash/1/UbiquityStore.sqlite"), "r"),
                    .init(.commit, "c"),
                ])
        }
        _ = try Self.plant(plan, in: f, journal: journal)
        let before = try TreeSnapshot(dir)
        let layout = try f.snapshot()
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 3, "variant \(variant): \(r.stderr)")
        #expect(try TreeSnapshot(dir) == before, "variant \(variant)")
        #expect(try f.snapshot() == layout, "variant \(variant)")
    }

    @Test("an operation this machine wrote, then altered in the layout, is left alone")
    func alteredPlan() throws {
        let f = try Fixture()
        let (dir, _) = try Self.outside(f)
        // A real operation stopped after its retire step.
        let steps = try #require(
            try f.run(["delete", "local-store", "--dry-run", "--json"]).json["steps"] as? [[String: Any]])
        let retire = try #require(steps.lastIndex { $0["action"] as? String == "retire" })
        let killed = try f.run(["delete", "local-store", "--yes"], hooks: .interrupt(after: retire))
        #expect(killed.status == PlanExecutor.Hooks.interruptedStatus)
        let folder = try #require(PlanExecutor.pending(in: [Self.appRoot(f)]).first)
        let planURL = folder.appendingPathComponent("plan.json")
        var text = try String(contentsOf: planURL, encoding: .utf8)
        text = text.replacingOccurrences(
            of: f.paths.localStore.path, with: dir.appendingPathComponent("dir/precious.txt").path)
        try text.write(to: planURL, atomically: false, encoding: .utf8)
        let before = try TreeSnapshot(dir)
        let r = try f.run(["recover"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("digest"), "\(r.stderr)")
        #expect(try TreeSnapshot(dir) == before)
        #expect(FileManager.default.fileExists(atPath: folder.path), "left as it is")
    }

    @Test(
        "killed between writing its plan and its journal: recover removes the operation folder (nothing began), a dry run says it"
    )
    func killedBeforeJournal() throws {
        let f = try Fixture()
        let layout = try f.snapshot()
        // A real operation stopped after its first step (the snapshot, outside the layout), its
        // journal then taken away and its plan cut short: what a kill inside plan.json's write leaves.
        let killed = try f.run(["delete", "local-store", "--yes"], hooks: .interrupt(after: 0))
        #expect(killed.status == PlanExecutor.Hooks.interruptedStatus)
        let folder = try #require(PlanExecutor.pending(in: [Self.appRoot(f)]).first)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("journal.jsonl"))
        let planURL = folder.appendingPathComponent("plan.json")
        let plan = try Data(contentsOf: planURL)
        try plan.prefix(plan.count / 2).write(to: planURL)
        let dry = try f.run(["delete", "local-store", "--dry-run"])
        #expect(dry.status != 0 && dry.stderr.contains("interrupted"), "\(dry.status): \(dry.stderr)")
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        #expect(try f.snapshot() == layout, "the layout is as it was before the run")
        // An operation folder without a journal that this machine did not record stays refused.
        let planted = folder.deletingLastPathComponent().appendingPathComponent(UUID().uuidString.lowercased())
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: true)
        try plan.write(to: planted.appendingPathComponent("plan.json"))
        #expect(try f.run(["recover"]).status == 3)
        #expect(FileManager.default.fileExists(atPath: planted.appendingPathComponent("plan.json").path))
    }

    @Test("a newcomer where recovery must put a file back: refused, the original kept in the trash, never \"undone\"")
    func recoveryConflict() throws {
        let f = try Fixture()
        let original = try Data(contentsOf: f.paths.localStore)
        let steps = try #require(
            try f.run(["delete", "local-store", "--dry-run", "--json"]).json["steps"] as? [[String: Any]])
        let retire = try #require(steps.lastIndex { $0["action"] as? String == "retire" })
        #expect(
            try f.run(["delete", "local-store", "--yes"], hooks: .interrupt(after: retire)).status
                == PlanExecutor.Hooks.interruptedStatus)
        #expect(!FileManager.default.fileExists(atPath: f.paths.localStore.path))
        // The app starts meanwhile and makes a new, empty store at the same path.
        try Data("new empty store".utf8).write(to: f.paths.localStore)
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "recovery-conflict")
        #expect(!r.stdout.contains("undone"))
        #expect(try Data(contentsOf: f.paths.localStore) == Data("new empty store".utf8), "the newcomer is not touched")
        let folder = try #require(
            PlanExecutor.pending(in: [Self.appRoot(f)]).first, "still pending: the trash keeps the original")
        #expect(try TreeSnapshot(folder).entries.values.contains { $0.content == original })
        // Once the newcomer is moved away, recovery puts the original back.
        try FileManager.default.moveItem(at: f.paths.localStore, to: f.tmp.path("newcomer.sqlite"))
        let again = try f.run(["recover", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect((again.json["recovered"] as? [[String: Any]])?.first?["outcome"] as? String == "undone")
        #expect(try Data(contentsOf: f.paths.localStore) == original)
    }

    @Test(
        "a symlinked CloudStore/ or CloudLogs/ is never walked through: every operation refuses (3), nothing outside changes",
        arguments: ["CloudStore", "CloudLogs"])
    func symlinkedFolders(folder: String) throws {
        let f = try Fixture()
        let (dir, _) = try Self.outside(f)
        let real = folder == "CloudStore" ? f.paths.appDir.appendingPathComponent("CloudStore") : f.paths.logs
        // The folder's content moves outside; a link takes its place.
        let moved = dir.appendingPathComponent(folder)
        try FileManager.default.moveItem(at: real, to: moved)
        try FileManager.default.createSymbolicLink(at: real, withDestinationURL: moved)
        let before = try TreeSnapshot(dir)
        var commands: [[String]] = [
            ["delete", "container"], ["delete", "container", "--local-only"],
            ["delete", "cloud-store", "--uuid", f.options.activeUUID],
            ["migrate", "local-to-cloud", "--discard-cloud"], ["rebuild", "--from", "local", "--discard-cloud"],
            ["corruption", "mark", f.options.activeUUID],
            ["switch", f.options.oldUUID!],
        ]
        if folder == "CloudStore" {
            commands += [
                ["delete", "cloud-store", "--local-only", "--uuid", f.options.activeUUID],
                ["rebuild", "--from", "cloud", "--replace"],
            ]
        }
        for command in commands {
            let r = try f.run(command + ["--yes"])
            #expect([3, 8].contains(r.status), "\(command): \(r.status) \(r.stderr)")
            #expect(try TreeSnapshot(dir) == before, "\(command) changed something outside the layout")
        }
    }

    @Test("restore SNAPSHOT: an absent path reached through a link planted after the snapshot is refused")
    func undoThroughLink() throws {
        let f = try Fixture()
        let (dir, _) = try Self.outside(f)
        let result = try OperationTests.apply(f, ["corruption", "mark", f.options.oldUUID!])
        let snapshot = try #require(result["snapshot"] as? String)
        // After the snapshot (which records CorruptedUUID+ as absent): CloudLogs becomes a link out.
        let logs = f.paths.logs
        try FileManager.default.moveItem(at: logs, to: dir.appendingPathComponent("CloudLogs"))
        try FileManager.default.createSymbolicLink(
            at: logs, withDestinationURL: dir.appendingPathComponent("CloudLogs"))
        let before = try TreeSnapshot(dir)
        let r = USM.run(["restore", snapshot, "--yes"])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(try TreeSnapshot(dir) == before)
    }

    @Test(
        "a store held by another process (a copy in a write transaction, the local store open for reading): every operation that would move it, and the undo, refuse (5)"
    )
    func copyInUse() throws {
        let f = try Fixture()
        let copy = f.paths.cloudStore(f.options.activeUUID)
        let holder = try SQLiteHolder(copy)
        defer { holder.stop() }
        let layout = try f.snapshot()
        for command in [
            ["delete", "container"], ["delete", "container", "--local-only"], ["delete", "cloud-store"],
            ["delete", "cloud-store", "--local-only"], ["migrate", "local-to-cloud", "--discard-cloud"],
            ["rebuild", "--from", "local", "--discard-cloud"],
        ] {
            let r = try f.run(command + ["--yes"])
            #expect(r.status == 5, "\(command): \(r.status) \(r.stderr)")
        }
        holder.stop()
        var after = try f.snapshot()
        #expect(
            Self.contentOnly(after) == Self.contentOnly(layout),
            "\(zip(after, layout).map { $0.differences(from: $1) }.joined())")
        // The local store merely open (a reader between transactions) in another process: an
        // operation that moves it and the undo that would put it back refuse too.
        let rebuilt = try OperationTests.apply(f, ["rebuild", "--from", "local", "--discard-cloud"])
        let snapshot = try #require(rebuilt["snapshot"] as? String)
        let changed = try f.snapshot()
        let reader = try SQLiteHolder(f.paths.localStore, transaction: false)
        defer { reader.stop() }
        let inUse = try f.run(["delete", "local-store", "--yes"])
        #expect(inUse.status == 5, "\(inUse.stderr)")
        let undo = USM.run(["restore", snapshot, "--yes"])
        #expect(undo.status == 5, "\(undo.stderr)")
        reader.stop()
        after = try f.snapshot()
        #expect(
            Self.contentOnly(after) == Self.contentOnly(changed),
            "\(zip(after, changed).map { $0.differences(from: $1) }.joined())")
    }

    /// Snapshots compared without the -shm and -wal files (the holder's connection makes them).
    static func contentOnly(_ trees: [TreeSnapshot]) -> [[String: TreeSnapshot.Entry]] {
        trees.map { $0.entries.filter { !$0.key.hasSuffix("-shm") && !$0.key.hasSuffix("-wal") } }
    }

    @Test(
        "a snapshot folder inside any folder of the layout is refused (64), whatever the operation touches; nothing changes"
    )
    func snapshotInsideLayout() throws {
        let f = try Fixture()
        let before = try f.snapshot()
        let inCloud = f.paths.cloudDir.appendingPathComponent("snaps").path
        let inApp = f.paths.appDir.appendingPathComponent("snaps").path
        let cases: [([String], String)] = [
            (["migrate", "cloud-to-local", "--replace"], inCloud), (["cloud", "disable"], inCloud),
            (["delete", "local-store"], inCloud),
            (["corruption", "mark"], inApp), (["switch", f.options.oldUUID!], inApp),
            (["delete", "local-store"], f.paths.root.path),
        ]
        for (command, folder) in cases {
            for mode in ["--yes", "--dry-run"] {
                let r = try f.run(command + [mode, "--snapshot-dir", folder])
                #expect(r.status == 64, "\(command) \(mode) --snapshot-dir \(folder): \(r.stderr)")
            }
        }
        // The default snapshot folder, a link into the ubiquity container: personal data would sync.
        let state = f.tmp.path("state")
        try FileManager.default.createDirectory(
            at: state.appendingPathComponent("usm-repair"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: state.appendingPathComponent("usm-repair/snapshots"),
            withDestinationURL: f.paths.cloudDir.appendingPathComponent("x"))
        let linked = try f.run(["delete", "local-store", "--yes"], environment: ["XDG_STATE_HOME": state.path])
        #expect(linked.status == 64, "\(linked.stderr)")
        #expect(try f.snapshot() == before)
    }

    @Test(
        "malformed preferences are bad input for every changing command (2, naming the file), never skipped",
        arguments: 0..<5)
    func malformedPreferences(variant: Int) throws {
        let f = try Fixture()
        var data = try Data(contentsOf: f.paths.prefs)
        switch variant {
        case 0:  // USMCloudEnabledKey not a boolean
            var dict = try f.preferences()
            dict["USMCloudEnabledKey"] = "YES"
            data = try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0)
        case 1: data = Data()
        case 2: data = data.prefix(data.count / 2)
        case 3: data.replaceSubrange((data.count - 26)..<data.count, with: Data(repeating: 0xFF, count: 26))
        default:
            data = try PropertyListSerialization.data(
                fromPropertyList: ["USMCloudEnabledKey"], format: .binary, options: 0)
        }
        try data.write(to: f.paths.prefs)
        let before = try f.snapshot()
        for command in [
            ["switch", f.options.oldUUID!], ["delete", "container"], ["cloud", "disable"], ["cloud", "enable"],
        ] {
            let r = try f.run(command + ["--yes"])
            #expect(r.status == 2, "variant \(variant) \(command): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains("com.example.notes.plist"), "variant \(variant) \(command): \(r.stderr)")
        }
        #expect(try f.snapshot() == before)
    }

    @Test(
        "cloud disable killed while the preferences are moved aside: status names the operation, recover finds it and puts them back"
    )
    func preferencesMovedAside() throws {
        let f = try Fixture()
        let original = try Data(contentsOf: f.paths.prefs)
        let steps = try #require(
            try f.run(["cloud", "disable", "--dry-run", "--json"]).json["steps"] as? [[String: Any]])
        let retire = try #require(steps.firstIndex { $0["action"] as? String == "retire" })
        #expect(
            try f.run(["cloud", "disable", "--yes"], hooks: .interrupt(after: retire)).status
                == PlanExecutor.Hooks.interruptedStatus)
        #expect(!FileManager.default.fileExists(atPath: f.paths.prefs.path))
        let status = try f.run(["status", "--json"])
        let problems = (status.json["problems"] as? [[String: Any]]) ?? []
        #expect(
            problems.contains {
                $0["code"] as? String == "interrupted-operation"
                    && ($0["message"] as? String)?.contains("cloud disable") == true
            },
            "\(problems)")
        let r = try f.run(["recover", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((r.json["recovered"] as? [[String: Any]])?.first?["outcome"] as? String == "undone")
        #expect(try Data(contentsOf: f.paths.prefs) == original)
    }
}

/// Another process holding `BEGIN IMMEDIATE` on a store (python3's sqlite3), or only its
/// connection open after a read (`transaction: false`), until `stop`.
final class SQLiteHolder {
    let process: Process

    init(_ store: URL, transaction: Bool = true) throws {
        // Another process: SQLite's POSIX locks are per process, so a lock this process held
        // would not be seen by the checks under test.
        let out = Pipe()
        process = try Launcher.start(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c",
                """
                import sqlite3, sys, time
                c = sqlite3.connect(sys.argv[1], isolation_level=None)
                if sys.argv[2] == "1":
                    c.execute("BEGIN IMMEDIATE")
                else:
                    c.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
                print("held", flush=True)
                time.sleep(60)
                """, store.path, transaction ? "1" : "0",
            ], stdout: out)
        _ = out.fileHandleForReading.readData(ofLength: 5)
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// Recipes are outside input: their SQL works on the staged store and reads the source, nothing else.
@Suite("hostile recipes", .timed)
struct HostileRecipeTests {
    /// Runs `migrate-store` with a one-step SQL recipe; returns the result and the folder outside.
    static func run(_ sql: String, timeout: String = "600") throws -> (CLI.Result, URL, TempDir) {
        let tmp = try TempDir()
        let outside = tmp.path("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("dst"), withIntermediateDirectories: true)
        let recipe = tmp.path("r.json")
        let json: [String: Any] = [
            "format": "usm-repair-recipe", "formatVersion": 1, "id": "hostile", "version": "1", "summary": "s",
            "steps": [
                ["copy": "entities", "why": "w"],
                ["sql": sql.replacingOccurrences(of: "$X", with: outside.path), "why": "w"],
            ],
        ]
        try JSONSerialization.data(withJSONObject: json).write(to: recipe)
        let r = USM.run([
            "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--recipe", recipe.path,
            "--plugin-timeout", timeout, "--json",
        ])
        return (r, outside, tmp)
    }

    @Test(
        "SQL that would reach another file, change the source or the process: recipe-failed (10) naming the step, nothing made",
        arguments: [
            "ATTACH DATABASE '$X/a.sqlite' AS x; CREATE TABLE x.t(a);",
            "VACUUM INTO '$X/b.sqlite';",
            "DETACH DATABASE src; ATTACH DATABASE '$X/c.sqlite' AS src; CREATE TABLE src.t(a);",
            "PRAGMA temp_store_directory = '$X';",
            "INSERT INTO src.ZSHELF (Z_PK, Z_ENT, Z_OPT) VALUES (999, 1, 1);",
            "BEGIN; COMMIT;",
        ])
    func deniedSQL(sql: String) throws {
        let (r, outside, tmp) = try Self.run(sql)
        #expect(r.status == 10, "\(sql): \(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "recipe-failed", "\(sql)")
        #expect(r.stderr.contains("step 2"), "\(sql): \(r.stderr)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "\(sql): a file was made outside"
        )
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: tmp.path("dst").path).isEmpty,
            "\(sql): staging left behind")
    }

    @Test("an endless recursive query is stopped at the deadline: recipe-failed (10), nothing left")
    func endlessQuery() throws {
        let started = Date()
        let (r, _, tmp) = try Self.run(
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n;", timeout: "1")
        #expect(r.status == 10, "\(r.stderr)")
        #expect(r.stderr.contains("--plugin-timeout"), "\(r.stderr)")
        #expect(Date().timeIntervalSince(started) < 20)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path("dst").path).isEmpty)
    }

    @Test("a recipe file too large to be a recipe is refused unread (2)")
    func hugeRecipe() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        let recipe = tmp.path("big.json")
        try Data(repeating: 0x20, count: 2 << 20).write(to: recipe)
        let r = USM.run([
            "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("D.sqlite").path, "--recipe", recipe.path,
        ])
        #expect(r.status == 2, "\(r.stderr)")
    }
}
