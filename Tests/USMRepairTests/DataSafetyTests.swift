import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Every changing command shows, guards and remembers the customer's data: the ledger of the plan,
/// no silent loss or duplication, idempotence, and a strategy chosen once. (Origin: the "data
/// first" round; the file was DataFirstTests.)
@Suite("data safety: the ledger, no silent loss, idempotence, the strategy chosen at planning", .timed)
struct DataSafetyTests {
    typealias Fixture = OperationTests.Fixture

    static func error(_ r: CLI.Result) -> String? { (r.json["error"] as? [String: Any])?["code"] as? String }
    static func ledger(_ r: CLI.Result) -> [String: Any] { r.details["ledger"] as? [String: Any] ?? [:] }
    static func store(_ r: CLI.Result, _ label: String) -> [String: Any]? {
        (ledger(r)["stores"] as? [[String: Any]])?.first { ($0["label"] as? String)?.hasPrefix(label) == true }
    }
    static func total(_ counts: Any?) -> Int? { (counts as? [String: Any])?["total"] as? Int }
    static func localRows(_ f: Fixture) throws -> [String: Int] {
        DataOperationTests.rows(try f.status(), role: .local)
    }

    @Test(
        "the dry run's ledger: the app before and after, every store read or touched with its objects now and after, source rows filled"
    )
    func ledger() throws {
        let f = try Fixture()
        let r = try f.run(["migrate", "cloud-to-local", "--replace", "--dry-run", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.json["dryRun"] as? Bool == true && r.json["changed"] as? Bool == false)
        #expect(r.json["command"] as? String == "migrate cloud-to-local")
        let before = Self.ledger(r)["before"] as? [String: Any]
        let after = Self.ledger(r)["after"] as? [String: Any]
        #expect(before?["store"] as? String == f.options.activeUUID)
        #expect(after?["store"] as? String == "local")
        let cloudObjects =
            f.options.cloud.books + f.options.cloud.walOnlyBooks + f.options.cloud.magazines + f.options.cloud.authors
            + f.options.cloud.shelves + f.options.cloud.tags
        #expect(before?["objects"] as? Int == cloudObjects)
        #expect(after?["objects"] as? Int == cloudObjects, "the local store will hold the cloud's objects")
        let local = try #require(Self.store(r, "local store"))
        #expect(local["fate"] as? String == "replaced")
        #expect(
            Self.total(local["now"]) == f.options.local.books + f.options.local.magazines + f.options.local.authors
                + f.options.local.shelves + f.options.local.tags)
        #expect(Self.total(local["after"]) == cloudObjects)
        let cloud = try #require(Self.store(r, "cloud store \(f.options.activeUUID)"))
        #expect(cloud["fate"] as? String == "read")
        #expect((r.details["headline"] as? String)?.hasPrefix("The app shows cloud store") == true)
        let rows = r.details["rows"] as? [String: [String: Int]] ?? [:]
        #expect(
            rows[f.paths.cloudStore(f.options.activeUUID).path]?["Book"] == f.options.cloud.books
                + f.options.cloud.walOnlyBooks, "source rows filled")
        let text = try f.run(["migrate", "cloud-to-local", "--replace", "--dry-run"])
        #expect(text.stdout.contains("The app shows cloud store"), "\(text.stdout)")
        #expect(text.stdout.contains("local store: ") && text.stdout.contains("replaced"), "\(text.stdout)")
    }

    @Test(
        "migrate cloud-to-local never replaces objects the cloud store lacks without --replace; the refusal offers the merge"
    )
    func replaceNeedsConsent() throws {
        let f = try Fixture()
        let before = try f.snapshot()
        for mode in ["--dry-run", "--yes"] {
            let r = try f.run(["migrate", "cloud-to-local", mode, "--json"])
            #expect(r.status == 8, "\(mode): \(r.stderr)")
            #expect(Self.error(r) == "precondition-failed")
            #expect(r.stderr.contains("--replace") && r.stderr.contains("--merge"), "\(r.stderr)")
            #expect(r.stderr.contains("Book"), "names the entities: \(r.stderr)")
        }
        #expect(try f.snapshot() == before, "nothing changed")
        // An app already running on its local store (iCloud off): the same protection, and the dry
        // run shows the launch changing from the local store's objects to the cloud's.
        let off = try Fixture { $0.cloudEnabled = false }
        #expect(try off.run(["migrate", "cloud-to-local", "--yes"]).status == 8)
        let dry = try off.run(["migrate", "cloud-to-local", "--replace", "--dry-run", "--json"])
        let b = Self.ledger(dry)["before"] as? [String: Any]
        let a = Self.ledger(dry)["after"] as? [String: Any]
        #expect(b?["store"] as? String == "local" && a?["store"] as? String == "local")
        #expect(b?["objects"] as? Int != a?["objects"] as? Int, "the ledger shows what the customer will see change")
    }

    @Test(
        "a second migrate cloud-to-local is nothing to do, even after the app wrote to the local store; --detailed-exitcode tells them apart"
    )
    func idempotentMigration() throws {
        let f = try Fixture()
        let first = try f.run(["migrate", "cloud-to-local", "--replace", "--yes", "--json", "--detailed-exitcode"])
        #expect(first.status == 20, "\(first.stderr)")
        #expect(first.json["changed"] as? Bool == true && first.json["noOp"] as? Bool == false)
        // The provenance is in the local store's own metadata.
        let plist = try Self.metadata(f.paths.localStore)
        let entries = Provenance.entries(in: plist)
        #expect(
            entries.last?.operation == "migrate cloud-to-local"
                && entries.last?.sourceDigest.hasPrefix("sha256:") == true)
        // The app writes a new object into its local store.
        try FixtureStore.mutate(
            f.paths.localStore,
            "INSERT INTO ZSHELF (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (900, 5, 1, 'written by the app')")
        let shelves = try Self.localRows(f)["Shelf"]
        let second = try f.run(["migrate", "cloud-to-local", "--replace", "--yes", "--json", "--detailed-exitcode"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(
            second.json["noOp"] as? Bool == true && second.json["changed"] as? Bool == false
                && second.json["dryRun"] as? Bool == false)
        #expect(try Self.localRows(f)["Shelf"] == shelves, "what the app wrote since stays")
        #expect(
            try f.run(["migrate", "cloud-to-local", "--yes", "--detailed-exitcode"]).status == 0,
            "without --replace too: nothing to do")
    }

    @Test(
        "a merge twice: the second is nothing to do; objects already there are matched, not copied twice, unless --allow-duplicates"
    )
    func mergeTwice() throws {
        // The fixtures share their shelves and magazines: the merge matches them.
        let dup = try Fixture()
        try OperationTests.apply(dup, ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"])
        let duplicated = try Self.localRows(dup)
        let f = try Fixture()
        let planned = try f.run(["migrate", "cloud-to-local", "--merge", "--dry-run"])
        #expect(
            planned.status == 0 && planned.stdout.contains("already in the local store")
                && planned.stdout.contains("Shelf"), "\(planned.stdout)\(planned.stderr)")
        try OperationTests.apply(f, ["migrate", "cloud-to-local", "--merge"])
        let rows = try Self.localRows(f)
        #expect((rows["Shelf"] ?? 0) > 0 && (rows["Shelf"] ?? 0) < (duplicated["Shelf"] ?? 0), "\(rows) \(duplicated)")
        #expect(rows["Magazine"] ?? 0 < duplicated["Magazine"] ?? 0)
        let again = try f.run(["migrate", "cloud-to-local", "--merge", "--yes", "--json"])
        #expect(again.status == 0 && again.json["noOp"] as? Bool == true, "\(again.stderr)")
        #expect(try Self.localRows(f) == rows, "nothing merged twice")
        // Every cloud object already in the local store (a copy of it): nothing to merge.
        let g = try Fixture()
        try OperationTests.apply(g, ["migrate", "cloud-to-local", "--replace"])
        try FixtureStore.mutate(g.paths.localStore, "UPDATE Z_METADATA SET Z_PLIST = NULL")  // no provenance to go by
        let covered = try g.run(["migrate", "cloud-to-local", "--merge", "--yes", "--json"])
        #expect(covered.status == 0 && covered.json["noOp"] as? Bool == true, "\(covered.stderr)")
    }

    @Test(
        "rebuild --from local never abandons cloud objects the local store lacks without --discard-cloud; it does when the local store holds them"
    )
    func rebuildFromLocalGuards() throws {
        let f = try Fixture()
        let before = try f.snapshot()
        let r = try f.run(["rebuild", "--from", "local", "--dry-run", "--json"])
        #expect(r.status == 8, "\(r.stderr)")
        #expect(
            r.stderr.contains("--discard-cloud") && r.stderr.contains("migrate cloud-to-local --merge"), "\(r.stderr)")
        #expect(try f.run(["migrate", "local-to-cloud", "--yes"]).status == 8)
        #expect(try f.snapshot() == before)
        // The merge route the refusal offers: the local store then holds the cloud's objects.
        try OperationTests.apply(f, ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"])
        let rebuilt = try OperationTests.apply(f, ["rebuild", "--from", "local"])
        let after = (rebuilt.details["ledger"] as? [String: Any])?["after"] as? [String: Any]
        #expect(after?["store"] as? String == "new")
        // A second run: nothing to do.
        let again = try f.run(["rebuild", "--from", "local", "--yes", "--json"])
        #expect(again.status == 0 && again.json["noOp"] as? Bool == true, "\(again.stderr)")
    }

    @Test("a strategy that moves no objects never replaces a store that holds some without --replace")
    func noneStrategy() throws {
        let f = try Fixture()
        let r = try f.run(["rebuild", "--from", "cloud", "--strategy", "none", "--dry-run"])
        #expect(r.status == 8 && r.stderr.contains("--replace"), "\(r.stderr)")
        let g = try Fixture { $0.localStore = false }
        #expect(
            try g.run(["migrate", "cloud-to-local", "--strategy", "none", "--dry-run"]).status == 0,
            "nothing to lose: no local store")
    }

    @Test(
        "the strategy is decided at planning: unknown ids, missing recipes, a recipe with another strategy are refused by the dry run"
    )
    func strategyAtPlanning() throws {
        let f = try Fixture()
        let before = try f.snapshot()
        let unknown = try f.run([
            "migrate", "cloud-to-local", "--replace", "--strategy", "bogus", "--dry-run", "--json",
        ])
        #expect(unknown.status == 64 && Self.error(unknown) == "unknown-strategy", "\(unknown.stderr)")
        let missing = try f.run([
            "migrate", "cloud-to-local", "--replace", "--strategy", "manual", "--recipe", "no-such-recipe", "--dry-run",
        ])
        #expect(missing.status == 66, "\(missing.stderr)")
        let mixed = try f.run([
            "migrate", "cloud-to-local", "--replace", "--strategy", "ios", "--recipe", "fix-counters", "--dry-run",
        ])
        #expect(mixed.status == 64, "\(mixed.stderr)")
        // A recipe alone means manual, and is used.
        let recipe = try f.run([
            "migrate", "cloud-to-local", "--replace", "--recipe", "fix-counters", "--dry-run", "--json",
        ])
        #expect(recipe.status == 0, "\(recipe.stderr)")
        let build = ((recipe.json["steps"] as? [[String: Any]]) ?? []).first { $0["action"] as? String == "build" }
        #expect(build?["strategy"] as? String == "manual")
        let merge = try f.run(["migrate", "cloud-to-local", "--merge", "--strategy", "ios", "--dry-run"])
        #expect(merge.status == 64, "ios cannot merge: \(merge.stderr)")
        #expect(try f.snapshot() == before)
    }

    /// Every changing command, with the flags its data guard asks for on the default fixture.
    static let everyCommand: [[String]] = [
        ["delete", "container"], ["delete", "container", "--local-only"], ["delete", "cloud-store"],
        ["delete", "cloud-store", "--local-only"],
        ["delete", "cloud-store", "--uuid", "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF"], ["delete", "local-store"],
        ["migrate", "cloud-to-local", "--replace"], ["migrate", "cloud-to-local", "--merge", "--allow-duplicates"],
        ["migrate", "local-to-cloud", "--discard-cloud"], ["rebuild", "--from", "local", "--discard-cloud"],
        ["rebuild", "--from", "local", "--discard-cloud", "--keep-old"], ["rebuild", "--from", "cloud", "--replace"],
        ["rebuild", "--from", "cloud", "--in-app"], ["switch", "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF"],
        ["cloud", "enable"],
        ["cloud", "disable"], ["corruption", "mark"], ["corruption", "clear"],
    ]

    // Every changing command recognises its own end state (a second run is nothing to do): in
    // `ChangeEnvelopeTests.operations`, after the same first run on the same fixture.

    @Test("strategies lists each command's default as its help states it, in the JSON envelope of every command")
    func strategyDefaults() throws {
        let r = USM.run(["strategies", "--json"])
        #expect(r.status == 0)
        #expect(r.json["schemaVersion"] as? Int == 1 && r.json["command"] as? String == "strategies")
        #expect(r.json["exitCode"] as? Int == 0 && r.json["exitStatus"] as? String == "ok")
        let defaults = try #require(r.json["defaults"] as? [[String: Any]])
        let rules = Dictionary(
            uniqueKeysWithValues: defaults.compactMap { d in
                (d["command"] as? String).map { ($0, d["rule"] as? String ?? "") }
            })
        #expect(Set(rules.keys) == ["migrate-store", "migrate cloud-to-local", "rebuild --from cloud"])
        func flat(_ s: String) -> String { s.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let text = flat(USM.run(["strategies"]).stdout)
        for (command, rule) in rules {
            #expect(text.contains(flat("\(command): \(rule)")), "\(command)")
            let help = flat(
                USM.run(
                    command.split(separator: " ").filter { $0 != "--from" && $0 != "cloud" }.map(String.init) + [
                        "--help"
                    ]
                ).stdout)
            #expect(help.contains(flat(rule)), "the help of \(command) states its default: \(help.prefix(300))")
        }
    }

    @Test("delete cloud-store --local-only twice: nothing to do; deleting another store keeps the active store's cache")
    func deleteIdempotent() throws {
        let f = try Fixture()
        try OperationTests.apply(f, ["delete", "cloud-store", "--local-only"])
        let again = try f.run(["delete", "cloud-store", "--local-only", "--yes", "--json"])
        #expect(again.status == 0 && again.json["noOp"] as? Bool == true, "\(again.stderr)")
        let g = try Fixture()
        let cacheBefore = try g.preferences().keys.filter { $0.hasSuffix("/CloudLogs/StoreUUID+") }
        #expect(!cacheBefore.isEmpty)
        try OperationTests.apply(g, ["delete", "cloud-store", "--uuid", g.options.oldUUID!])
        #expect(
            try g.preferences().keys.filter { $0.hasSuffix("/CloudLogs/StoreUUID+") } == cacheBefore,
            "the active store's cache stays")
        let twice = try g.run(["delete", "cloud-store", "--uuid", g.options.oldUUID!, "--yes", "--json"])
        #expect(twice.status == 0 && twice.json["noOp"] as? Bool == true, "\(twice.stderr)")
    }

    @Test(
        "the prediction follows 4.7c: a cached StoreUUID without a marker is loaded, then dropped, and a new store seeded from the local store"
    )
    func cacheWithoutMarker() throws {
        let f = try Fixture { $0.markers = [:] }
        let status = try f.run(["status", "--json"])
        let next = try #require(status.json["nextLaunch"] as? [String: Any])
        #expect(next["outcome"] as? String == "seed-new-cloud-store", "\(next)")
        #expect(next["state"] as? String == "E2")
        #expect(((next["then"] as? [String]) ?? []).contains { $0.contains("4.7c") })
    }

    @Test(
        "several cached StoreUUIDs: the download says which device it came from, and the prediction follows that device's key"
    )
    func cacheKeysByDevice() throws {
        let f = try Fixture()
        var dict = try f.preferences()
        dict["/Users/someone/Library/Mobile Documents/ABCDE12345~com~example~notes/CloudLogs/StoreUUID+"] = f.options
            .oldUUID!
        try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0).write(to: f.paths.prefs)
        let next = try #require(try f.run(["status", "--json"]).json["nextLaunch"] as? [String: Any])
        #expect(next["outcome"] as? String == "open-cloud-store", "\(next)")
        #expect(next["store"] as? String == f.options.activeUUID)
    }

    @Test("a ubiquity container found beside a download is used only when it shares a peer or a store with it")
    func rightContainer() throws {
        // Customer A's download and container; customer B's download dropped in the same folder.
        let a = try Fixture()
        let b = try Fixture {
            $0.cloudLocation = .none
            $0.peer = "mobile~11111111-2222-4333-8444-555555555555"
            $0.activeUUID = "99999999-8888-4777-8666-555555555555"
            $0.oldUUID = "77777777-6666-4555-8444-333333333333"
        }
        let download = a.tmp.path("Customer-B.xcappdata")
        try FileManager.default.copyItem(at: b.paths.root, to: download)
        let containerA = try TreeSnapshot(a.paths.cloudDir)
        let status = USM.run(["status", "--container", download.path, "--json"])
        let layout = status.json["layout"] as? [String: Any]
        #expect(layout?["cloudSource"] as? String == "beside-unconfirmed", "\(String(describing: layout?["cloudDir"]))")
        let codes = ((status.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
        #expect(codes.contains("cloud-container-unconfirmed"))
        for command in [
            ["rebuild", "--from", "local", "--discard-cloud"], ["delete", "container"], ["corruption", "clear"],
        ] {
            let r = USM.run(command + ["--container", download.path, "--yes"])
            #expect(r.status == 4, "\(command): \(r.stderr)")
            #expect(r.stderr.contains("--cloud-dir"), "\(r.stderr)")
        }
        #expect(try TreeSnapshot(a.paths.cloudDir) == containerA, "customer A's container untouched")
        // Customer A's own download corroborates it (same peer, same stores).
        let own = try #require(try a.run(["status", "--json"]).json["layout"] as? [String: Any])
        #expect(own["cloudSource"] as? String == "beside")
        // Named explicitly, it is used, with a warning in the plan.
        let named = USM.run([
            "corruption", "mark", "--container", download.path, "--cloud-dir", a.paths.cloudDir.path, "--dry-run",
            "--json",
        ])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(((named.json["notes"] as? [String]) ?? []).contains { $0.contains("shares nothing") })
    }

    static func problems(_ r: CLI.Result, _ code: String) -> [[String: Any]] {
        ((r.json["problems"] as? [[String: Any]]) ?? []).filter { $0["code"] as? String == code }
    }

    @Test("status names what the customer will see: an empty store shown while the local store holds the data")
    func emptyCloudStoreShown() throws {
        let f = try Fixture {
            $0.cloud = FixtureContainer.emptyStore
            $0.cloud.ubiquityMetadata = true
            $0.oldUUID = nil
        }
        let r = try f.run(["status", "--json"])
        #expect(r.status == 0, "a warning: \(r.stderr)")
        let found = Self.problems(r, "data-elsewhere")
        #expect(found.count == 1, "\(r.json["problems"] ?? [])")
        #expect(found.first?["subject"] as? String == f.paths.localStore.path)
        #expect(found.first?["count"] as? Int == 18)
        #expect((found.first?["message"] as? String)?.contains("0 objects") == true)
        let advice = r.json["advice"] as? [String] ?? []
        #expect(
            advice.contains { $0.contains("usm-repair rebuild --from local") && $0.contains("--dry-run") }, "\(advice)")
        #expect(advice.contains { $0.contains("usm-repair cloud disable") }, "\(advice)")
        #expect(
            !advice.contains { $0.contains("cloud-to-local --merge") },
            "nothing to merge from an empty store: \(advice)")
        // The healthy example: nothing of the kind.
        let healthy = try Fixture()
        #expect(Self.problems(try healthy.run(["status", "--json"]), "data-elsewhere").isEmpty)
    }

    @Test(
        "the account switch (seed 002): the copy the app opens is nearly empty while another account's copy on the device holds the data"
    )
    func otherAccountHoldsTheData() throws {
        let other = "11112222-3333-4444-8555-666677778888"
        let f = try Fixture {
            var nearlyEmpty = FixtureContainer.emptyStore
            nearlyEmpty.books = 1
            nearlyEmpty.ubiquityMetadata = true
            $0.extra = $0.cloud
            $0.cloud = nearlyEmpty
            $0.extraCopies = [(peer: $0.peer, account: other)]
            $0.oldUUID = nil
            $0.local = FixtureContainer.emptyStore
        }
        let r = try f.run(["status", "--json"])
        let found = Self.problems(r, "data-elsewhere")
        let copy = f.paths.cloudStore(f.options.activeUUID, account: other).path
        #expect(found.map { $0["subject"] as? String } == [copy], "\(found)")
        #expect((found.first?["message"] as? String)?.contains("another copy of cloud store") == true)
        let advice = r.json["advice"] as? [String] ?? []
        let merge = advice.first { $0.contains("usm-repair migrate cloud-to-local --merge") && $0.contains(other) }
        #expect(merge != nil, "\(advice)")
        // The advised merge brings the other account's objects into the local store.
        let dry = try f.run([
            "migrate", "cloud-to-local", "--merge", "--uuid", f.options.activeUUID, "--peer", f.options.peer,
            "--account", other,
            "--dry-run", "--json",
        ])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            (Self.ledger(dry)["after"] as? [String: Any])?["objects"] as? Int == 18,
            "the local store (empty) receives the other copy's 18 objects")
    }

    @Test(
        "a cached StoreUUID without a marker is a warning with its outcome; several cache keys resolved by the device are only information"
    )
    func cacheDiagnosis() throws {
        let f = try Fixture { $0.markers = [:] }
        let r = try f.run(["status", "--json"])
        let found = Self.problems(r, "cached-uuid-without-marker")
        #expect(
            found.count == 1 && (found.first?["message"] as? String)?.contains("4.7c") == true,
            "\(r.json["problems"] ?? [])")
        let advice = r.json["advice"] as? [String] ?? []
        #expect(advice.contains { $0.contains("usm-repair switch \(f.options.activeUUID)") }, "\(advice)")
        let g = try Fixture()
        var dict = try g.preferences()
        dict["/Users/someone/Library/Mobile Documents/ABCDE12345~com~example~notes/CloudLogs/StoreUUID+"] = g.options
            .oldUUID!
        try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0).write(to: g.paths.prefs)
        let s = try g.run(["status", "--json"])
        #expect(Self.problems(s, "cached-uuid-several-keys").count == 1)
        #expect(Self.problems(s, "cached-uuid-ambiguous").isEmpty)
        #expect(s.status == 0)
    }

    static func metadata(_ store: URL) throws -> [String: Any] {
        let queue = try DatabaseQueue(
            path: store.path,
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
        defer { try? queue.close() }
        let data = try queue.read { try Data.fetchOne($0, sql: "SELECT Z_PLIST FROM Z_METADATA") }
        return try #require(
            data.flatMap { try? PropertyListSerialization.propertyList(from: $0, format: nil) as? [String: Any] })
    }
}
