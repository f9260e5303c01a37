import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// The maintenance operations through the real executable: the end state of usm-behaviour.md §5,
/// the next launch `status` predicts afterwards equal to the plan's prediction, dry runs and
/// refusals that change no byte, and idempotence.
@Suite("operations", .timed)
struct OperationTests {
    /// A fixture layout (download + ubiquity container beside it) and the flags naming it.
    struct Fixture {
        let tmp: TempDir
        let paths: FixtureContainer.Paths
        let options: FixtureContainer.Options
        var flags: [String] { ["--container", paths.root.path] }

        init(_ configure: (inout FixtureContainer.Options) -> Void = { _ in }) throws {
            tmp = try TempDir()
            var o = FixtureContainer.Options()
            configure(&o)
            options = o
            paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"), o)
        }

        /// A byte-for-byte copy of another fixture's folders (fixtures written twice differ in
        /// SQLite's random WAL salts).
        init(copying other: Fixture) throws {
            tmp = try TempDir()
            options = other.options
            for name in try FileManager.default.contentsOfDirectory(atPath: other.tmp.url.path) {
                try TreeCopy.copy(other.tmp.url.appendingPathComponent(name), to: tmp.url.appendingPathComponent(name))
            }
            paths = FixtureContainer.paths(tmp.path("Notes.xcappdata"), other.options)
        }

        func snapshot() throws -> [TreeSnapshot] { try paths.folders.map(TreeSnapshot.init) }

        /// Runs `usm-repair args... <flags>` in process.
        func run(_ args: [String], environment: [String: String] = [:], hooks: PlanExecutor.Hooks = .none) throws
            -> CLI.Result
        {
            USM.run(args + flags, environment: environment, hooks: hooks)
        }

        func status() throws -> StatusReport {
            try Inspection(options: LayoutOptions(container: paths.root), depth: .status).run()
        }

        func preferences() throws -> [String: Any] {
            let data = try Data(contentsOf: paths.prefs)
            return try #require(
                try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any])
        }

        func exists(_ url: URL) -> Bool { FileStatus.lookup(url.path) != nil }
    }

    /// Runs `args` with `--yes --json`, checks exit 0, and that `status` afterwards predicts what the plan did.
    @discardableResult
    static func apply(_ f: Fixture, _ args: [String], sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [String: Any]
    {
        try applied(f, args, sourceLocation: sourceLocation).json
    }

    /// `apply`, returning the whole run (for the checks of its output).
    static func applied(_ f: Fixture, _ args: [String], sourceLocation: SourceLocation = #_sourceLocation) throws
        -> CLI.Result
    {
        let r = try f.run(args + ["--yes", "--json"])
        #expect(r.status == 0, "\(args): \(r.stderr)\(r.stdout)", sourceLocation: sourceLocation)
        let json = r.json
        let next = json.details["nextLaunch"] as? [String: Any]
        let predicted = next?["predicted"] as? [String: Any]
        let after = next?["after"] as? [String: Any]
        if json["noOp"] as? Bool == false {
            #expect(
                predicted?["state"] as? String == after?["state"] as? String, "\(args): predicted and found",
                sourceLocation: sourceLocation)
            #expect(
                predicted?["outcome"] as? String == after?["outcome"] as? String, "\(args)",
                sourceLocation: sourceLocation)
            #expect(
                predicted?["store"] as? String == after?["store"] as? String, "\(args)", sourceLocation: sourceLocation)
        } else {
            #expect(after == nil && (json["steps"] as? [Any])?.isEmpty == true, sourceLocation: sourceLocation)
        }
        // Nothing of ours is left in the user's folders.
        for folder in f.paths.folders {
            let tree = try TreeSnapshot(folder)
            #expect(
                !tree.entries.keys.contains { $0.contains(".usm-repair") }, "\(args): private folders removed",
                sourceLocation: sourceLocation)
        }
        if json["noOp"] as? Bool == false {
            let snapshot = try #require(json["snapshot"] as? String, sourceLocation: sourceLocation)
            #expect(try BundleVerifier.verify(URL(fileURLWithPath: snapshot)).ok, sourceLocation: sourceLocation)
            #expect(
                !f.paths.folders.contains { Confinement.isInside(snapshot, $0.path) },
                "the snapshot lies outside the layout")
        }
        return r
    }

    static func state(_ json: [String: Any]) -> String? {
        ((json.details["nextLaunch"] as? [String: Any])?["after"] as? [String: Any])?["state"] as? String
    }

    /// The changing commands whose dry runs `dryRuns` reads as text, on its fixture (a corruption
    /// marker naming the old store); `PlanGoldenTests` checks their JSON (scenario `corrupted-old`).
    static func dryRunCommands(_ o: FixtureContainer.Options) -> [[String]] {
        [
            ["delete", "container"], ["delete", "container", "--local-only"], ["delete", "cloud-store"],
            ["delete", "cloud-store", "--local-only"], ["delete", "local-store"],
            ["rebuild", "--from", "local", "--discard-cloud"],
            ["migrate", "local-to-cloud", "--discard-cloud"], ["rebuild", "--from", "cloud", "--in-app"],
            ["switch", o.oldUUID ?? ""],
            ["cloud", "disable"], ["corruption", "clear"], ["corruption", "mark"],
        ]
    }

    /// The same commands' `--dry-run --json` (a plan, no snapshot): `PlanGoldenTests.plans`, scenario
    /// `corrupted-old` (this fixture), checks them on the runs it records.
    static func expectDryRunJSON(
        _ r: CLI.Result, _ command: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == 0, "\(command): \(r.stderr)", sourceLocation: sourceLocation)
        #expect(r.json["dryRun"] as? Bool == true, "\(command)", sourceLocation: sourceLocation)
        #expect((r.json["steps"] as? [Any])?.isEmpty == false, "\(command)", sourceLocation: sourceLocation)
        #expect(r.json["snapshot"] is NSNull, "\(command)", sourceLocation: sourceLocation)
    }

    @Test("every changing command's --dry-run prints a plan and changes no byte")
    func dryRuns() throws {
        let f = try Fixture { $0.corruptedUUID = $0.oldUUID }
        let before = try f.snapshot()
        // Their JSON: `expectDryRunJSON`, in `PlanGoldenTests.plans` (the same fixture).
        for command in Self.dryRunCommands(f.options) {
            let text = try f.run(command + ["--dry-run"])
            #expect(text.stdout.contains("Dry run: nothing was changed."), "\(command)")
            #expect(text.stdout.contains("Next launch after:"), "\(command)")
        }
        #expect(try f.snapshot() == before)
    }

    @Test(
        "delete container: the container emptied, this device's copies and the cache gone; next launch seeds from the local store"
    )
    func deleteContainer() throws {
        let f = try Fixture { $0.local.walOnlyBooks = 2 }
        let json = try Self.apply(f, ["delete", "container"])
        #expect(Self.state(json) == "E2")
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.paths.cloudDir.path).isEmpty)
        #expect(
            !f.exists(
                f.paths.appDir.appendingPathComponent(
                    "CloudStore/CoreDataUbiquitySupport/\(f.options.peer)/\(f.options.activeUUID)")))
        let prefs = try f.preferences()
        #expect(!prefs.keys.contains { $0.hasSuffix("/CloudLogs/StoreUUID+") })
        #expect(prefs[f.options.activeUUID] == nil, "Core Data's account map of the removed store")
        #expect(
            prefs["USMCloudEnabledKey"] as? Bool == true && prefs["LastLaunchVersion"] as? String == "2.4",
            "other keys kept")
        // The seed holds the rows that were only in the -wal, in its main file, with no sidecar.
        #expect(!f.exists(URL(fileURLWithPath: f.paths.localStore.path + "-wal")))
        let local = try #require(try f.status().stores.first { $0.role == .local })
        #expect(local.entities.first { $0.name == "Book" }?.rows == f.options.local.books + 2)
        #expect(try Self.apply(f, ["delete", "container"])["noOp"] as? Bool == true, "a second run changes nothing")
    }

    @Test("delete container --local-only: the container stays; the active store is rebuilt from its logs")
    func deleteContainerLocalOnly() throws {
        let f = try Fixture()
        let cloud = try TreeSnapshot(f.paths.cloudDir)
        let json = try Self.apply(f, ["delete", "container", "--local-only"])
        #expect(Self.state(json) == "E6")
        #expect(try TreeSnapshot(f.paths.cloudDir) == cloud)
        #expect(!f.exists(f.paths.cloudStore(f.options.activeUUID)))
        #expect(f.exists(f.paths.localStore))
    }

    @Test(
        "delete cloud-store: the active store's logs, markers, copies and cache; an inactive one leaves the launch as it was"
    )
    func deleteCloudStore() throws {
        let f = try Fixture { $0.corruptedUUID = $0.activeUUID }
        let old = try Self.apply(f, ["delete", "cloud-store", "--uuid", f.options.oldUUID!])
        #expect(Self.state(old) == "E4")
        #expect(!f.exists(f.paths.logs.appendingPathComponent(f.options.oldUUID!)))
        #expect(f.exists(f.paths.cloudStore(f.options.activeUUID)))
        let active = try Self.apply(f, ["delete", "cloud-store"])
        #expect(Self.state(active) == "E2")
        for name in ["StoreUUID+", "CorruptedUUID+", f.options.activeUUID] {
            #expect(!f.exists(f.paths.logs.appendingPathComponent(name)), "\(name)")
        }
        #expect(!f.exists(f.paths.cloudStore(f.options.activeUUID)))
    }

    @Test("delete cloud-store --local-only: this device's copy goes, container/ and the logs stay (E6)")
    func deleteCopy() throws {
        let f = try Fixture()
        let json = try Self.apply(f, ["delete", "cloud-store", "--local-only"])
        #expect(Self.state(json) == "E6")
        let copy = StoreFileSet(main: f.paths.cloudStore(f.options.activeUUID))
        #expect(copy.existingMembers().isEmpty)
        #expect(f.exists(copy.directory.deletingLastPathComponent().appendingPathComponent("container")))
        #expect(f.exists(f.paths.logs.appendingPathComponent(f.options.activeUUID)))
    }

    @Test("delete local-store: the whole file set")
    func deleteLocal() throws {
        let f = try Fixture()
        try Self.apply(f, ["delete", "local-store"])
        #expect(StoreFileSet(main: f.paths.localStore).existingMembers().isEmpty)
        #expect(try Self.apply(f, ["delete", "local-store"])["noOp"] as? Bool == true)
    }

    @Test(
        "rebuild --from local and migrate local-to-cloud: no marker, no cache, iCloud on, the local store merged (E2)",
        arguments: [
            ["rebuild", "--from", "local", "--discard-cloud"], ["migrate", "local-to-cloud", "--discard-cloud"],
        ])
    func rebuildFromLocal(command: [String]) throws {
        let f = try Fixture {
            $0.corruptedUUID = $0.activeUUID
            $0.cloudEnabled = false
            $0.local.walOnlyBooks = 3
        }
        let json = try Self.apply(f, command)
        #expect(Self.state(json) == "E2")
        let names = try FileManager.default.contentsOfDirectory(atPath: f.paths.logs.path)
        #expect(!names.contains { $0.hasPrefix("StoreUUID") || $0.hasPrefix("CorruptedUUID") })
        #expect(!names.contains(f.options.activeUUID), "the old store's logs go without --keep-old")
        #expect(names.contains(f.options.oldUUID!))
        #expect(try f.preferences()["USMCloudEnabledKey"] as? Bool == true)
        #expect(!f.exists(URL(fileURLWithPath: f.paths.localStore.path + "-wal")))
        let kept = try Fixture()
        try Self.apply(kept, command + ["--keep-old"])
        #expect(kept.exists(kept.paths.logs.appendingPathComponent(kept.options.activeUUID)))
        #expect(kept.exists(kept.paths.cloudStore(kept.options.activeUUID)))
    }

    @Test("rebuild --from cloud --in-app: the active store marked corrupt, a stray nominal file removed (E9)")
    func rebuildInApp() throws {
        let f = try Fixture { $0.nominalFile = true }
        let json = try Self.apply(f, ["rebuild", "--from", "cloud", "--in-app"])
        let rows = (json.details["nextLaunch"] as? [String: Any]).flatMap {
            ($0["after"] as? [String: Any])?["rows"] as? [String]
        }
        #expect(rows == ["E4", "E9"])
        #expect(
            try String(contentsOf: f.paths.logs.appendingPathComponent("CorruptedUUID+"), encoding: .ascii)
                == f.options.activeUUID)
        #expect(!f.exists(f.paths.nominalStore(f.options.activeUUID)))
    }

    @Test("switch: StoreUUID+ names the other store, the cache goes (E4)")
    func switchStore() throws {
        let f = try Fixture { $0.corruptedUUID = $0.activeUUID }
        let json = try Self.apply(f, ["switch", f.options.oldUUID!.lowercased()])
        #expect(Self.state(json) == "E4")
        let marker = try Data(contentsOf: f.paths.logs.appendingPathComponent("StoreUUID+"))
        #expect(marker == Data(f.options.oldUUID!.utf8), "36 upper-case characters, no newline")
        #expect(!f.exists(f.paths.logs.appendingPathComponent("CorruptedUUID+")))
        #expect(!(try f.preferences()).keys.contains { $0.hasSuffix("/CloudLogs/StoreUUID+") })
        #expect(try f.status().nextLaunch?.store == f.options.oldUUID)
        #expect(try Self.apply(f, ["switch", f.options.oldUUID!])["noOp"] as? Bool == true)
        #expect(try f.run(["switch", "11111111-2222-4333-8444-555555555555", "--yes"]).status == 8, "an unknown store")
    }

    @Test("cloud disable and enable keep the plist's format and other keys", arguments: [false, true])
    func cloudSwitch(xml: Bool) throws {
        let f = try Fixture {
            $0.xmlPreferences = xml
            $0.cache = .stale("A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF")
        }
        let off = try Self.apply(f, ["cloud", "disable"])
        #expect(Self.state(off) == "E1")
        #expect(try f.preferences()["USMCloudEnabledKey"] as? Bool == false)
        let on = try Self.apply(f, ["cloud", "enable"])
        #expect(Self.state(on) == "E4", "the stale cached StoreUUID is removed with enable")
        let prefs = try f.preferences()
        #expect(prefs["NSLanguages"] as? [String] == ["en"])
        let data = try Data(contentsOf: f.paths.prefs)
        #expect(data.starts(with: Array("bplist".utf8)) == !xml)
    }

    @Test("corruption mark and clear")
    func corruption() throws {
        let f = try Fixture()
        try Self.apply(f, ["corruption", "mark"])
        #expect(
            try Data(contentsOf: f.paths.logs.appendingPathComponent("CorruptedUUID+"))
                == Data(f.options.activeUUID.utf8))
        #expect(try f.status().nextLaunch?.rows.contains("E9") == true)
        try Self.apply(f, ["corruption", "clear"])
        #expect(!f.exists(f.paths.logs.appendingPathComponent("CorruptedUUID+")))
        #expect(try Self.apply(f, ["corruption", "clear"])["noOp"] as? Bool == true)
    }

    @Test("a replaced file keeps the permission bits of the one it replaces (store, preferences, marker)")
    func modesKept() throws {
        let f = try Fixture { $0.local.walOnlyBooks = 2 }
        let marker = f.paths.cloudDir.appendingPathComponent("CloudLogs/StoreUUID+")
        for (url, mode) in [(f.paths.localStore, 0o640), (f.paths.prefs, 0o604), (marker, 0o664)] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        }
        func mode(_ url: URL) throws -> Int {
            try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)
                .intValue
        }
        try Self.apply(f, ["migrate", "cloud-to-local", "--replace", "--strategy", "ios"])
        #expect(try mode(f.paths.localStore) == 0o640, "the local store built by the engine")
        #expect(try mode(f.paths.prefs) == 0o604, "the edited preferences")
        try Self.apply(f, ["switch", f.options.oldUUID!])
        #expect(try mode(marker) == 0o664)
        let g = try Fixture { $0.local.walOnlyBooks = 2 }
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: g.paths.localStore.path)
        let rebuilt = try Self.apply(g, ["rebuild", "--from", "local", "--discard-cloud"])
        #expect(((rebuilt["steps"] as? [[String: Any]]) ?? []).contains { $0["action"] as? String == "checkpoint" })
        #expect(try mode(g.paths.localStore) == 0o640, "the checkpointed local store")
    }

    @Test("refusals change no byte and each has its exit code")
    func refusals() throws {
        // The ubiquity container is needed but not there.
        let download = try Fixture { $0.cloudLocation = .none }
        var before = try download.snapshot()
        #expect(try download.run(["rebuild", "--from", "local", "--discard-cloud", "--yes"]).status == 4)
        #expect(try download.run(["delete", "container", "--yes"]).status == 4)
        #expect(try download.snapshot() == before)

        let f = try Fixture {
            $0.accountMap = false
            $0.extraCopies = [(peer: "mobile~0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D", account: "local")]
        }
        before = try f.snapshot()
        // Several copies and no --peer/--account.
        #expect(try f.run(["delete", "cloud-store", "--local-only", "--yes"]).status == 8)
        // No --yes without a terminal.
        let consent = try f.run(["delete", "local-store"])
        #expect(consent.status == 3)
        #expect(consent.stderr.contains("--yes"))
        // Another run holds the layout.
        let lockFolder = f.paths.appDir.appendingPathComponent(".usm-repair")
        try FileManager.default.createDirectory(at: lockFolder, withIntermediateDirectories: true)
        let fd = open(lockFolder.appendingPathComponent("lock").path, O_RDWR | O_CREAT, 0o600)
        #expect(flock(fd, LOCK_EX) == 0)
        let busy = try f.run(["delete", "local-store", "--yes"])
        #expect(busy.status == 6, "\(busy.stderr)")
        close(fd)
        try FileManager.default.removeItem(at: lockFolder)
        // A store open in another process: `HostileLayoutTests.copyInUse` (it needs a second process).
        #expect(try f.snapshot() == before)
    }

    @Test("a kill after any step: recover gives back exactly the old state, or the new one once committed")
    func crashAfterEveryStep() throws {
        let template = try Fixture {
            $0.local.walOnlyBooks = 2
            $0.corruptedUUID = $0.activeUUID
        }
        let clean = try Fixture(copying: template)
        let steps = try #require(
            (try clean.run(["rebuild", "--from", "local", "--discard-cloud", "--dry-run", "--json"]).json["steps"]
                as? [[String: Any]]))
        try Self.apply(clean, ["rebuild", "--from", "local", "--discard-cloud"])
        let newState = try clean.snapshot()
        let commitIndex = try #require(steps.firstIndex { $0["action"] as? String == "commit" })
        for n in 0..<(steps.count - 1) {
            let f = try Fixture(copying: template)
            let oldState = try f.snapshot()
            let killed = try f.run(
                ["rebuild", "--from", "local", "--discard-cloud", "--yes"], hooks: .interrupt(after: n))
            #expect(killed.status == PlanExecutor.Hooks.interruptedStatus, "step \(n): \(killed.stderr)")
            let status = try f.run(["status", "--json"])
            let codes = ((status.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(codes.contains("interrupted-operation"), "step \(n): status reports it")
            #expect(
                try f.run(["rebuild", "--from", "local", "--discard-cloud", "--dry-run"]).status == 7,
                "a dry run refuses while one is pending")
            let recovered = try f.run(["recover", "--json"])
            #expect(recovered.status == 0, "\(recovered.stderr)")
            let outcome = ((recovered.json["recovered"] as? [[String: Any]])?.first?["outcome"] as? String)
            let state = try f.snapshot()
            if n < commitIndex {
                #expect(outcome == "undone", "step \(n)")
                #expect(state == oldState, "step \(n): \(zip(state, oldState).flatMap { $0.differences(from: $1) })")
            } else {
                #expect(outcome == "finished", "step \(n)")
                #expect(Self.contentDifferences(state, newState) == [], "step \(n)")
            }
            for folder in f.paths.folders {
                #expect(!(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") }, "step \(n)")
            }
        }
    }

    /// The paths that differ but for modification times and the order of keys in rewritten plists.
    static func contentDifferences(_ a: [TreeSnapshot], _ b: [TreeSnapshot]) -> [String] {
        guard a.count == b.count else { return ["(different folders)"] }
        var found: [String] = []
        for (x, y) in zip(a, b) {
            found += Set(x.entries.keys).symmetricDifference(y.entries.keys).sorted()
            for (path, entry) in x.entries {
                guard let other = y.entries[path] else { continue }
                guard entry.kind == other.kind, entry.mode == other.mode else {
                    found.append(path)
                    continue
                }
                if entry.content == other.content { continue }
                // A store built twice differs in its identity (Z_UUID, metadata): same tables, same rows.
                if path.hasSuffix(".sqlite"), (try? sqliteRowsEqual(entry.content, other.content)) == true { continue }
                guard path.hasSuffix(".plist"),
                    let p = try? PropertyListSerialization.propertyList(from: entry.content, options: [], format: nil),
                    let q = try? PropertyListSerialization.propertyList(from: other.content, options: [], format: nil),
                    plistEqual(p, q)
                else {
                    found.append(path)
                    continue
                }
            }
        }
        return found
    }

    /// True when two SQLite files hold the same tables with the same rows, `Z_METADATA` aside (a
    /// store's identity and metadata are made anew each time one is built).
    static func sqliteRowsEqual(_ a: Data, _ b: Data) throws -> Bool {
        let tmp = try TempDir()
        func rows(_ data: Data, _ name: String) throws -> [String: [[String]]] {
            let url = tmp.path(name)
            try data.write(to: url)
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            return try queue.read { db in
                var result: [String: [[String]]] = [:]
                let tables = try String.fetchAll(
                    db,
                    sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'Z_METADATA' ORDER BY name")
                for table in tables {
                    let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                    result[table] = try Row.fetchAll(db, sql: "SELECT * FROM \(quoted) ORDER BY 1").map { row in
                        row.databaseValues.map { $0.description }
                    }
                }
                return result
            }
        }
        return try rows(a, "a.sqlite") == rows(b, "b.sqlite")
    }

    /// Deep equality of two property-list values (dictionaries compared by key, not by order).
    static func plistEqual(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case let (x as [String: Any], y as [String: Any]):
            return Set(x.keys) == Set(y.keys)
                && x.allSatisfy { key, value in y[key].map { plistEqual(value, $0) } ?? false }
        case let (x as [Any], y as [Any]):
            return x.count == y.count && zip(x, y).allSatisfy { plistEqual($0, $1) }
        case let (x as String, y as String): return x == y
        case let (x as Data, y as Data): return x == y
        case let (x as Date, y as Date): return x == y
        case let (x as Bool, y as Bool): return x == y
        case let (x as NSNumber, y as NSNumber): return x == y
        default: return false
        }
    }
}

/// Operations on folders the user may not write.
@Suite("operations on read-only folders", .timed)
struct ReadOnlyOperationTests {
    @Test("a read-only app folder: refused before anything changes")
    func readOnly() throws {
        let f = try OperationTests.Fixture()
        let before = try f.snapshot()
        let readOnly = try TestMount(readOnly: f.paths.appDir)
        defer {
            readOnly.unmount()
            withExtendedLifetime(f) {}
        }
        let r = try f.run(["delete", "local-store", "--yes", "--json"])
        #expect(r.status == 74, "\(r.stdout)\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "write-failed")
        #expect(try f.snapshot() == before)
    }
}

/// The operations that move data offline: through the migration engine, into the local store only.
@Suite("operations that move data", .timed)
struct DataOperationTests {
    typealias Fixture = OperationTests.Fixture

    static func rows(_ report: StatusReport, role: StoreReport.Role) -> [String: Int] {
        Dictionary(
            (report.stores.first { $0.role == role && ($0.active ?? true) }?.entities ?? []).map { ($0.name, $0.rows) },
            uniquingKeysWith: +)
    }

    @Test(
        "migrate cloud-to-local: the local store holds the cloud data (WAL-only rows included), no iCloud metadata, iCloud off (E1)",
        arguments: ["copy-entities", "ios"])
    func cloudToLocal(strategy: String) throws {
        let f = try Fixture()
        let before = try f.status()
        let cloudRows = Self.rows(before, role: .cloud)
        let cloudSide = try TreeSnapshot(f.paths.cloudDir)
        let copyBefore = try TreeSnapshot(f.paths.cloudStore(f.options.activeUUID).deletingLastPathComponent())
        let json = try OperationTests.apply(f, ["migrate", "cloud-to-local", "--replace", "--strategy", strategy])
        #expect(OperationTests.state(json) == "E1")
        let after = try f.status()
        let local = try #require(after.stores.first { $0.role == .local })
        #expect(
            Self.rows(after, role: .local)
                == cloudRows.filter {
                    strategy == "ios"
                        || !$0.key.hasPrefix("TRANSACTION") && !["CHANGE", "TRANSACTIONSTRING"].contains($0.key)
                }
                || strategy == "copy-entities")
        #expect(
            local.entities.first { $0.name == "Book" }?.rows == f.options.cloud.books + f.options.cloud.walOnlyBooks)
        #expect(local.ubiquityMetadata == false && local.health == .ok && !local.walPresent)
        #expect(local.storeUUID != before.stores.first { $0.role == .cloud }?.storeUUID, "a fresh store UUID")
        #expect(try f.preferences()["USMCloudEnabledKey"] as? Bool == false)
        #expect(try TreeSnapshot(f.paths.cloudDir) == cloudSide, "the cloud side is untouched")
        #expect(try TreeSnapshot(f.paths.cloudStore(f.options.activeUUID).deletingLastPathComponent()) == copyBefore)
        // The report names the rows of the source and of the result.
        let rows = try #require(json.details["rows"] as? [String: [String: Int]])
        #expect(rows[f.paths.localStore.path]?["Book"] == f.options.cloud.books + f.options.cloud.walOnlyBooks)
    }

    @Test(
        "without --strategy, the app's default: ios from an iOS 7+ copy, copy-entities from an iOS 6 store and for --merge"
    )
    func defaultStrategy() throws {
        func strategy(_ f: Fixture, _ args: [String]) throws -> String? {
            let r = try f.run(args + ["--dry-run", "--json"])
            #expect(r.status == 0, "\(args): \(r.stderr)")
            let build = ((r.json["steps"] as? [[String: Any]]) ?? []).first { $0["action"] as? String == "build" }
            return build?["strategy"] as? String
        }
        let f = try Fixture()
        #expect(try strategy(f, ["migrate", "cloud-to-local", "--replace"]) == "ios")
        #expect(try strategy(f, ["rebuild", "--from", "cloud", "--replace"]) == "ios")
        #expect(try strategy(f, ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"]) == "copy-entities")
        #expect(
            try strategy(f, ["migrate", "cloud-to-local", "--replace", "--strategy", "copy-entities"])
                == "copy-entities")
        let v0 = "5D4C3B2A-1908-4756-A5B4-C3D2E1F00F1E"
        let old = try Fixture { $0.ios6UUID = v0 }
        #expect(try strategy(old, ["migrate", "cloud-to-local", "--replace", "--uuid", v0]) == "copy-entities")
        // And it runs: the default on the iOS 7 fixture keeps every row.
        let json = try OperationTests.apply(f, ["migrate", "cloud-to-local", "--replace"])
        #expect(OperationTests.state(json) == "E1")
        #expect(Self.rows(try f.status(), role: .local)["Book"] == f.options.cloud.books + f.options.cloud.walOnlyBooks)
    }

    @Test("migrate cloud-to-local --merge: the local store keeps its rows and gains the cloud's")
    func merge() throws {
        let f = try Fixture()
        let before = try f.status()
        let books = (Self.rows(before, role: .local)["Book"] ?? 0) + (Self.rows(before, role: .cloud)["Book"] ?? 0)
        // The fixtures' shelves and magazines are the same objects in both stores: a merge matches
        // them (IdentityTests); here they are copied anyway.
        try OperationTests.apply(f, ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"])
        #expect(Self.rows(try f.status(), role: .local)["Book"] == books)
        let check = try f.run(["check", "--json"])
        let localProblems = ((check.json["stores"] as? [[String: Any]])?.first?["problems"] as? [[String: Any]]) ?? []
        #expect(localProblems.allSatisfy { $0["severity"] as? String != "error" }, "\(localProblems)")
    }

    @Test("rebuild --from cloud: the cloud data becomes the seed of a new cloud store (E2)")
    func rebuildFromCloud() throws {
        let f = try Fixture { $0.corruptedUUID = $0.activeUUID }
        let json = try OperationTests.apply(f, ["rebuild", "--from", "cloud", "--replace"])
        #expect(OperationTests.state(json) == "E2")
        let after = try f.status()
        #expect(
            after.stores.first { $0.role == .local }?.entities.first { $0.name == "Book" }?.rows
                == f.options.cloud.books + f.options.cloud.walOnlyBooks)
        #expect(after.nextLaunch?.seedFrom == f.paths.localStore.path)
        #expect(!f.exists(f.paths.logs.appendingPathComponent("StoreUUID+")))
        #expect(!f.exists(f.paths.logs.appendingPathComponent(f.options.activeUUID)))
    }

    @Test(
        "a damaged or missing active copy refuses rebuild --from cloud and migrate cloud-to-local (exit 8), nothing changed"
    )
    func damagedSource() throws {
        let f = try Fixture()
        let copy = f.paths.cloudStore(f.options.activeUUID)
        let size = try #require(FileStatus.lookup(copy.path)?.size)
        #expect(truncate(copy.path, off_t(size / 2)) == 0, "cut short: a damaged store")
        let before = try f.snapshot()
        #expect(try f.run(["rebuild", "--from", "cloud", "--replace", "--yes"]).status == 8)
        #expect(try f.run(["migrate", "cloud-to-local", "--replace", "--yes"]).status == 8)
        #expect(try f.snapshot() == before)
        let none = try Fixture { $0.activeStoreCopy = false }
        #expect(try none.run(["migrate", "cloud-to-local", "--replace", "--yes"]).status == 8)
        // Damage inside the pages (the header holds): planning reads only the header of a store the
        // engine reads, and the engine's verification of its source refuses it; nothing changes.
        let pages = try Fixture { $0.cloud.walOnlyBooks = 0 }
        let damaged = pages.paths.cloudStore(pages.options.activeUUID)
        let handle = try FileHandle(forWritingTo: damaged)
        try handle.seek(toOffset: 4096)  // page 2, a table's root: its header and cells
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 4096))
        try handle.close()
        let pagesBefore = try pages.snapshot()
        for command in [["migrate", "cloud-to-local", "--replace"], ["rebuild", "--from", "cloud", "--replace"]] {
            let r = try pages.run(command + ["--yes", "--json"])
            #expect(r.status == 8, "\(command): \(r.stdout)")
            #expect(try pages.snapshot() == pagesBefore)
        }
    }

    @Test("a kill after any step of rebuild --from cloud: recover gives the old or the new state")
    func crashDuringBuild() throws {
        let template = try Fixture { $0.corruptedUUID = $0.activeUUID }
        let clean = try Fixture(copying: template)
        let steps = try #require(
            (try clean.run(["rebuild", "--from", "cloud", "--replace", "--dry-run", "--json"]).json["steps"]
                as? [[String: Any]]))
        try OperationTests.apply(clean, ["rebuild", "--from", "cloud", "--replace"])
        let newState = try clean.snapshot()
        let commit = try #require(steps.firstIndex { $0["action"] as? String == "commit" })
        for n in [0, 1, 2, commit - 1, commit] {
            let f = try Fixture(copying: template)
            let oldState = try f.snapshot()
            #expect(
                try f.run(["rebuild", "--from", "cloud", "--replace", "--yes"], hooks: .interrupt(after: n)).status
                    == PlanExecutor.Hooks.interruptedStatus)
            #expect(try f.run(["recover"]).status == 0)
            let state = try f.snapshot()
            if n < commit {
                #expect(state == oldState, "step \(n)")
            } else {
                // The new local store gets a fresh UUID each run: compare what the app would see.
                let local = try #require(try f.status().stores.first { $0.role == .local })
                #expect(
                    local.entities.first { $0.name == "Book" }?.rows == template.options.cloud.books
                        + template.options.cloud.walOnlyBooks)
                let differing = OperationTests.contentDifferences(state, newState).filter {
                    !$0.hasSuffix("UbiquityStore.sqlite")
                }
                #expect(differing == [], "step \(n)")
            }
        }
    }

    // Every corpus store as the active cloud store's copy through migrate cloud-to-local (its rows
    // kept): FidelityCorpusTests.operations, which runs that migration once per store for all its checks.
}
