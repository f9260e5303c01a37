import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Salvage as a step of the repair story (issue 17): `rebuild --from local --salvage` and
/// `migrate cloud-to-local --salvage` on a layout whose store is damaged. Refused without the flag
/// (naming it and `salvage`); with it, the dry run's ledger counts what salvage keeps and loses
/// before anything is written, the run installs a store whose every row is the original's (or cut
/// as the salvage report says), `status` predicts what the plan did, a second run is nothing to
/// do, and the snapshot gives back the damaged file set byte for byte.
@Suite("salvage: repair operations", .timed)
struct SalvageRepairTests {
    typealias Fixture = OperationTests.Fixture

    /// A store with several pages per table, so that a few damaged pages lose some rows of a table.
    static func store(_ o: inout FixtureStore.Options) {
        o.books = 800
        o.magazines = 120
        o.authors = 30
        o.shelves = 6
        o.tags = 25
        o.walOnlyBooks = 0
    }

    /// A damaged store of a fixture: its healthy original (a copy), the pages damaged and the map.
    struct Damage {
        let original: URL
        let lost: Set<Int>
        let map: PageMap
        /// The damaged file set's bytes, by member name.
        let bytes: [String: Data]
    }

    /// Keeps a healthy copy of `store`, then overwrites `percent` % of its pages (Core Data's
    /// bookkeeping pages and page 1 spared; `pages` instead when given).
    static func damage(_ store: URL, in tmp: TempDir, percent: Int = 5, pages: [Int]? = nil) throws -> Damage {
        let original = tmp.path("original/\(store.lastPathComponent)")
        try FileManager.default.createDirectory(
            at: original.deletingLastPathComponent(), withIntermediateDirectories: true)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: store.path + suffix) {
            try FileManager.default.copyItem(atPath: store.path + suffix, toPath: original.path + suffix)
        }
        let map = try PageMap.read(original)
        var chosen = pages ?? []
        if pages == nil {
            var rng = SeededRandom(seed: UInt64(percent) + 100)
            let bookkeeping = Set(["Z_PRIMARYKEY", "Z_METADATA"].flatMap { (map.leaves[$0] ?? []).map(\.page) })
            var candidates = Array(2...map.pageCount).filter { !bookkeeping.contains($0) }
            for _ in 0..<max(2, map.pageCount * percent / 100) {
                chosen.append(candidates.remove(at: Int(rng.next() % UInt64(candidates.count))))
            }
        }
        try StoreDamage.overwrite(store, pages: chosen, pageSize: map.pageSize, seed: UInt64(percent))
        var bytes: [String: Data] = [:]
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store.path + suffix) {
            bytes[suffix] = try Data(contentsOf: URL(fileURLWithPath: store.path + suffix))
        }
        return Damage(original: original, lost: Set(chosen), map: map, bytes: bytes)
    }

    /// `salvage SRC --dry-run --json` of the same files: the report the operation's salvage must agree with.
    static func salvageReport(_ store: URL, _ tmp: TempDir, extra: [String] = []) throws -> [String: Any] {
        try FileManager.default.createDirectory(at: tmp.path("dry"), withIntermediateDirectories: true)
        let r = USM.run(
            ["salvage", store.path, tmp.path("dry/\(store.lastPathComponent)").path, "--dry-run", "--json"] + extra)
        #expect([0, 1].contains(r.status), "salvage --dry-run: \(r.stderr)")
        return r.details
    }

    /// Objects (user entities) in a salvage report's `entities`.
    static func objects(_ report: [String: Any]) -> Int {
        (report["entities"] as? [[String: Any]] ?? []).filter {
            ["Item", "Book", "Magazine", "Author", "Shelf", "Tag"].contains($0["name"] as? String ?? "")
        }.map { $0["rows"] as? Int ?? 0 }.reduce(0, +)
    }

    static func ledgerStore(_ r: CLI.Result, _ label: String) -> [String: Any]? {
        DataSafetyTests.store(r, label)
    }

    /// The damaged file set is back, byte for byte, with nothing beside it that was not there.
    static func expectBytes(_ store: URL, _ bytes: [String: Data], sourceLocation: SourceLocation = #_sourceLocation) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let now = try? Data(contentsOf: URL(fileURLWithPath: store.path + suffix))
            #expect(now == bytes[suffix], "\(store.lastPathComponent)\(suffix)", sourceLocation: sourceLocation)
        }
    }

    @Test(
        "rebuild --from local on a damaged local store: refused naming --salvage; with it the ledger counts the loss, the run seeds from the salvaged rows, a re-run is nothing to do, the undo gives back the damaged files"
    )
    func rebuildFromDamagedLocal() throws {
        let f = try Fixture { Self.store(&$0.local) }
        let damage = try Self.damage(f.paths.localStore, in: f.tmp)
        let expected = try Self.salvageReport(f.paths.localStore, f.tmp)
        let readable = Self.objects(expected)
        #expect(readable > 0 && (expected["damagedPageCount"] as? Int ?? 0) > 0, "\(expected["unreadable"] ?? "")")
        let before = try f.snapshot()

        // Without --salvage: refused, naming the flag and the salvage command; nothing changed.
        for mode in ["--dry-run", "--yes"] {
            let refused = try f.run(["rebuild", "--from", "local", "--discard-cloud", mode, "--json"])
            #expect(refused.status == 8, "\(mode): \(refused.stderr)")
            #expect(DataSafetyTests.error(refused) == "precondition-failed")
            #expect(refused.stderr.contains("--salvage"), "\(refused.stderr)")
            #expect(
                refused.stderr.contains("usm-repair rebuild --from local --salvage --discard-cloud"),
                "\(refused.stderr)")
            #expect(refused.stderr.contains("usm-repair salvage "), "\(refused.stderr)")
        }

        // The dry run: the ledger counts what salvage keeps and what is lost, before anything is written.
        let dry = try f.run(["rebuild", "--from", "local", "--salvage", "--discard-cloud", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.json["operation"] as? String == "rebuild --from local --salvage")
        let local = try #require(Self.ledgerStore(dry, "local store"), "\(dry.stdout)")
        #expect(local["label"] as? String == "local store (damaged)")
        #expect(local["fate"] as? String == "replaced")
        let salvage = try #require(local["salvage"] as? [String: Any])
        #expect(DataSafetyTests.total(salvage["readable"]) == readable, "\(salvage)")
        #expect(DataSafetyTests.total(local["after"]) == readable)
        let lost = (salvage["lost"] as? Int ?? 0) + (salvage["lostPages"] as? Int ?? 0)
        #expect(lost > 0, "\(salvage)")
        let cut = (expected["referencesCut"] as? [[String: Any]] ?? []).map { $0["rows"] as? Int ?? 0 }.reduce(0, +)
        #expect(salvage["referencesCut"] as? Int == cut)
        #expect((DataSafetyTests.ledger(dry)["after"] as? [String: Any])?["objects"] as? Int == readable)
        #expect((dry.json["steps"] as? [[String: Any]] ?? []).contains { $0["action"] as? String == "build" })
        let text = try f.run(["rebuild", "--from", "local", "--salvage", "--discard-cloud", "--dry-run"])
        #expect(text.stdout.contains("→ \(readable) objects, replaced"), "\(text.stdout)")
        #expect(text.stdout.contains("local store (damaged): "), "\(text.stdout)")
        // SQLite counted the damaged store's objects through its indexes: the loss is that count less what is read.
        let counted = try #require(salvage["counted"] as? Int)
        #expect(counted == FixtureStore.expectedRows(f.options.local).values.reduce(0, +))
        #expect(
            text.stdout.contains("salvage: \(readable) of ~\(counted) objects readable; ~\(counted - readable) lost ("),
            "\(text.stdout)")
        // The prompt shows the same count before anything is written; a "no" changes nothing.
        let prompt = USM.run(
            ["rebuild", "--from", "local", "--salvage", "--discard-cloud"] + f.flags, answers: ["n"])
        #expect(prompt.status == 3, "\(prompt.stderr)")
        #expect(prompt.stdout.contains("salvage: \(readable) of ~\(counted) objects readable"), "\(prompt.stdout)")
        // migrate local-to-cloud is the same operation: the same refusal, naming its own command.
        let migrate = try f.run(["migrate", "local-to-cloud", "--discard-cloud", "--dry-run"])
        #expect(migrate.status == 8, "\(migrate.stderr)")
        #expect(
            migrate.stderr.contains("usm-repair migrate local-to-cloud --salvage --discard-cloud"), "\(migrate.stderr)")
        let migrateDry = try f.run(["migrate", "local-to-cloud", "--salvage", "--discard-cloud", "--dry-run", "--json"])
        #expect(migrateDry.status == 0, "\(migrateDry.stderr)")
        #expect(DataSafetyTests.total(Self.ledgerStore(migrateDry, "local store")?["after"]) == readable)
        #expect(try f.snapshot() == before, "the dry run changed a byte")

        // The run: status finds what the plan predicted (E2, seeded from the salvaged store).
        let json = try OperationTests.apply(f, ["rebuild", "--from", "local", "--salvage", "--discard-cloud"])
        #expect(OperationTests.state(json) == "E2")
        let rows = json.details["rows"] as? [String: [String: Int]] ?? [:]
        #expect(rows[f.paths.localStore.path]?.values.reduce(0, +) == readable, "the result's rows: \(rows)")
        let status = try f.status()
        let report = try #require(status.stores.first { $0.role == .local })
        #expect(report.health == .ok)
        #expect(report.entities.filter { !$0.system }.map(\.rows).reduce(0, +) == readable)
        // Every row is the original's, or the original's with a reference to a lost row cut, as salvage reports.
        let scored = try SalvageDamageTests.score(
            .init(status: 1, report: expected), output: f.paths.localStore, original: damage.original,
            lostPages: damage.lost, map: damage.map)
        SalvageDamageTests.expectSound(scored)
        // The salvaged store stands in for the damaged one: its identity is kept.
        let queue = try DatabaseQueue(path: f.paths.localStore.path)
        let uuid = try queue.read { try String.fetchOne($0, sql: "SELECT Z_UUID FROM Z_METADATA") }
        try queue.close()
        #expect(uuid == f.options.local.storeUUID)

        // A second run: the local store is healthy and the end state holds.
        let tree = try f.snapshot()
        let again = try f.run([
            "rebuild", "--from", "local", "--salvage", "--discard-cloud", "--yes", "--json", "--detailed-exitcode",
        ])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.json["noOp"] as? Bool == true, "\(again.json["steps"] ?? [])")
        #expect(
            (again.json["notes"] as? [String] ?? []).contains { $0.contains("--salvage has nothing to salvage") },
            "\(again.json["notes"] ?? [])")
        #expect(try f.snapshot() == tree)

        // The undo: the damaged file set comes back byte for byte.
        let snapshot = try #require(json["snapshot"] as? String)
        let undo = USM.run(["restore", snapshot, "--yes", "--json"])
        #expect(undo.status == 0, "\(undo.stderr)")
        Self.expectBytes(f.paths.localStore, damage.bytes)
        #expect(OperationTests.contentDifferences(try f.snapshot(), before).isEmpty)
    }

    @Test(
        "rebuild --from local --salvage when the active cloud store holds objects the salvage lost: refused without --discard-cloud, naming the route that keeps them"
    )
    func salvageLossStillGuarded() throws {
        let f = try Fixture {
            Self.store(&$0.local)
            // The cloud store holds the very objects of the local store.
            $0.cloud = $0.local
            $0.cloud.ubiquityMetadata = true
            $0.cloud.storeUUID = "3C2B1A09-8765-4321-ABCD-0123456789AB"
        }
        _ = try Self.damage(f.paths.localStore, in: f.tmp)
        let before = try f.snapshot()
        let r = try f.run(["rebuild", "--from", "local", "--salvage", "--dry-run", "--json"])
        #expect(r.status == 8, "\(r.stderr)")
        #expect(r.stderr.contains("objects the salvaged local store lacks (Book "), "\(r.stderr)")
        #expect(r.stderr.contains("--keep-old") && r.stderr.contains("--discard-cloud"), "\(r.stderr)")
        #expect(try f.snapshot() == before)
    }

    @Test(
        "rebuild --from local --salvage with the local store's first page (its schema) destroyed: exit 2 naming --schema-from and this layout's healthy stores; with --schema-from the run seeds from every row read"
    )
    func rebuildSchemaDestroyed() throws {
        let f = try Fixture { Self.store(&$0.local) }
        let damage = try Self.damage(f.paths.localStore, in: f.tmp, pages: [1])
        let before = try f.snapshot()
        let refused = try f.run(["rebuild", "--from", "local", "--discard-cloud", "--dry-run", "--json"])
        #expect(refused.status == 8, "\(refused.stderr)")
        #expect(refused.stderr.contains("--salvage"), "\(refused.stderr)")
        let copy = f.paths.cloudStore(f.options.activeUUID).path
        let noSchema = try f.run(["rebuild", "--from", "local", "--salvage", "--discard-cloud", "--dry-run", "--json"])
        #expect(noSchema.status == 2, "\(noSchema.stderr)")
        #expect(DataSafetyTests.error(noSchema) == "source-damaged")
        #expect(noSchema.stderr.contains("--schema-from") && noSchema.stderr.contains(copy), "\(noSchema.stderr)")
        #expect(try f.snapshot() == before)

        // A fresh store of the app's model (the cloud copy has history tables the local store never had).
        var fresh = FixtureStore.Options()
        (fresh.books, fresh.magazines, fresh.authors, fresh.shelves, fresh.tags, fresh.externalCovers) = (
            0, 0, 0, 0, 0, 0
        )
        fresh.storeUUID = "11111111-2222-3333-4444-555555555555"
        let sibling = f.tmp.path("sibling/Fresh.sqlite")
        try FixtureStore.write(to: sibling, fresh)
        let expected = try Self.salvageReport(f.paths.localStore, f.tmp, extra: ["--schema-from", sibling.path])
        let flags = ["rebuild", "--from", "local", "--salvage", "--schema-from", sibling.path, "--discard-cloud"]
        let dry = try f.run(flags + ["--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let salvage = try #require(Self.ledgerStore(dry, "local store")?["salvage"] as? [String: Any])
        #expect(DataSafetyTests.total(salvage["readable"]) == Self.objects(expected))
        let json = try OperationTests.apply(f, flags)
        #expect(OperationTests.state(json) == "E2")
        let scored = try SalvageDamageTests.score(
            .init(status: 1, report: expected), output: f.paths.localStore, original: damage.original,
            lostPages: damage.lost, map: damage.map)
        SalvageDamageTests.expectSound(scored)
        let undo = USM.run(["restore", try #require(json["snapshot"] as? String), "--yes"])
        #expect(undo.status == 0, "\(undo.stderr)")
        Self.expectBytes(f.paths.localStore, damage.bytes)
    }

    @Test(
        "migrate cloud-to-local on a damaged copy: refused naming --salvage; with it the ledger counts the loss, the local store holds the salvaged rows, the copy is never changed, a re-run is nothing to do, the undo gives back the local store"
    )
    func migrateFromDamagedCopy() throws {
        let f = try Fixture { Self.store(&$0.cloud) }
        let copy = f.paths.cloudStore(f.options.activeUUID)
        let damage = try Self.damage(copy, in: f.tmp)
        let expected = try Self.salvageReport(copy, f.tmp)
        let readable = Self.objects(expected)
        let localBytes = try Data(contentsOf: f.paths.localStore)
        let before = try f.snapshot()

        let refused = try f.run(["migrate", "cloud-to-local", "--replace", "--dry-run", "--json"])
        #expect(refused.status == 8, "\(refused.stderr)")
        #expect(refused.stderr.contains("usm-repair migrate cloud-to-local --salvage --replace"), "\(refused.stderr)")
        #expect(refused.stderr.contains("usm-repair salvage "), "\(refused.stderr)")

        // The local store holds objects the salvaged copy lacks: --replace is still needed.
        let replace = try f.run(["migrate", "cloud-to-local", "--salvage", "--dry-run", "--json"])
        #expect(replace.status == 8 && replace.stderr.contains("--replace"), "\(replace.stderr)")

        let dry = try f.run(["migrate", "cloud-to-local", "--salvage", "--replace", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let source = try #require(Self.ledgerStore(dry, "cloud store \(f.options.activeUUID)"))
        #expect((source["label"] as? String)?.hasSuffix("(damaged)") == true)
        #expect(source["fate"] as? String == "read")
        let salvage = try #require(source["salvage"] as? [String: Any])
        #expect(DataSafetyTests.total(salvage["readable"]) == readable)
        let local = try #require(Self.ledgerStore(dry, "local store"))
        #expect(local["fate"] as? String == "replaced" && local["salvage"] is NSNull)
        #expect(DataSafetyTests.total(local["after"]) == readable)
        let shows = DataSafetyTests.ledger(dry)["after"] as? [String: Any]
        #expect(shows?["store"] as? String == "local" && shows?["objects"] as? Int == readable)
        #expect(try f.snapshot() == before)

        let copyTree = try TreeSnapshot(copy.deletingLastPathComponent())
        let json = try OperationTests.apply(f, ["migrate", "cloud-to-local", "--salvage", "--replace"])
        #expect(OperationTests.state(json) == "E1")
        #expect(try TreeSnapshot(copy.deletingLastPathComponent()) == copyTree, "the damaged copy was changed")
        let report = try #require(try f.status().stores.first { $0.role == .local })
        #expect(report.health == .ok)
        #expect(report.entities.filter { !$0.system }.map(\.rows).reduce(0, +) == readable)
        let scored = try SalvageDamageTests.score(
            .init(status: 1, report: expected), output: f.paths.localStore, original: damage.original,
            lostPages: damage.lost, map: damage.map)
        #expect(scored.invented.isEmpty, "\(scored.invented.prefix(5))")
        #expect(scored.checkStatus == 0)

        let tree = try f.snapshot()
        let again = try f.run([
            "migrate", "cloud-to-local", "--salvage", "--replace", "--yes", "--json", "--detailed-exitcode",
        ])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.json["noOp"] as? Bool == true, "\(again.json["steps"] ?? []) \(again.json["notes"] ?? [])")
        #expect(try f.snapshot() == tree)

        let undo = USM.run(["restore", try #require(json["snapshot"] as? String), "--yes"])
        #expect(undo.status == 0, "\(undo.stderr)")
        #expect(try Data(contentsOf: f.paths.localStore) == localBytes)
        #expect(OperationTests.contentDifferences(try f.snapshot(), before).isEmpty)
        Self.expectBytes(copy, damage.bytes)
    }

    @Test(
        "migrate cloud-to-local --merge --salvage: the salvaged rows merged into the local store, which keeps its own; a re-run is nothing to do"
    )
    func mergeFromDamagedCopy() throws {
        let f = try Fixture { Self.store(&$0.cloud) }
        let copy = f.paths.cloudStore(f.options.activeUUID)
        _ = try Self.damage(copy, in: f.tmp)
        let readable = Self.objects(try Self.salvageReport(copy, f.tmp))
        let localBefore = FixtureStore.expectedRows(f.options.local).values.reduce(0, +)
        let args = ["migrate", "cloud-to-local", "--merge", "--allow-duplicates", "--salvage"]
        let dry = try f.run(args + ["--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let local = try #require(Self.ledgerStore(dry, "local store"))
        #expect(local["fate"] as? String == "merged")
        #expect(DataSafetyTests.total(local["after"]) == localBefore + readable)
        let json = try OperationTests.apply(f, args)
        #expect(OperationTests.state(json) == "E1")
        let report = try #require(try f.status().stores.first { $0.role == .local })
        #expect(report.health == .ok)
        #expect(report.entities.filter { !$0.system }.map(\.rows).reduce(0, +) == localBefore + readable)
        let again = try f.run(args + ["--yes", "--json"])
        #expect(again.status == 0 && again.json["noOp"] as? Bool == true, "\(again.stderr)\(again.json["steps"] ?? [])")
    }

    @Test("--salvage on a healthy store: the ordinary plan, with a note that there was nothing to salvage")
    func healthyStore() throws {
        let f = try Fixture()
        for args in [
            ["rebuild", "--from", "local", "--discard-cloud"], ["migrate", "cloud-to-local", "--replace"],
        ] {
            let plain = try f.run(args + ["--dry-run", "--json"])
            let salvaged = try f.run(args + ["--salvage", "--dry-run", "--json"])
            #expect(plain.status == 0 && salvaged.status == 0, "\(args): \(salvaged.stderr)")
            func steps(_ r: CLI.Result) -> [String] {
                let id = r.details["planID"] as? String ?? "?"
                return (r.json["steps"] as? [[String: Any]] ?? []).map {
                    "\($0["action"] ?? "") \(($0["paths"] as? [String] ?? []).map { $0.replacingOccurrences(of: id, with: "ID") })"
                }
            }
            #expect(steps(plain) == steps(salvaged), "\(args)")
            #expect(
                (salvaged.json["notes"] as? [String] ?? []).contains { $0.contains("healthy: --salvage has nothing") },
                "\(args): \(salvaged.json["notes"] ?? [])")
            #expect(
                DataSafetyTests.ledger(plain)["stores"] as? NSArray == DataSafetyTests.ledger(salvaged)["stores"]
                    as? NSArray)
        }
    }

    @Test(
        "a full disk while salvage builds its indexes fails the salvage (found by the failure walk: it was an index left out, exit 1)"
    )
    func indexOnFullDisk() throws {
        let tmp = try TempDir()
        let queue = try DatabaseQueue(path: tmp.path("s.sqlite").path)
        defer { try? queue.close() }
        let rows = [
            SchemaRow(
                type: "table", name: "ZITEM", tableName: "ZITEM", rootPage: 2,
                sql: "CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, ZNAME VARCHAR)"),
            SchemaRow(
                type: "index", name: "ZITEM_ZNAME_INDEX", tableName: "ZITEM", rootPage: 3,
                sql: "CREATE INDEX ZITEM_ZNAME_INDEX ON ZITEM (ZNAME)"),
        ]
        try queue.writeWithoutTransaction { db in
            let writer = try SalvageWriter(db: db, pageSize: 4096, autoVacuum: 0, encoding: .utf8)
            #expect(try writer.createTables(rows, roots: [:]).isEmpty)
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                    INSERT INTO ZITEM SELECT i, 1, hex(randomblob(40)) FROM n
                    """)
            // No page left: SQLite answers SQLITE_FULL, as on a full disk.
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            _ = try Int.fetchOne(db, sql: "PRAGMA max_page_count = \(pages)")
            var removed: [String: Int] = [:]
            let error = #expect(throws: DatabaseError.self) { try writer.finish(rows, removed: &removed) }
            #expect(error?.resultCode.primaryResultCode == .SQLITE_FULL)
            // What `Salvager` makes of it: out of space (75).
            #expect(error.map { StagedStore.wrapWrite($0, path: tmp.url).exitStatus } == .outOfSpace)
        }
    }

    @Test("--salvage and --schema-from where they do not belong: usage errors (64)")
    func usage() throws {
        let f = try Fixture()
        #expect(try f.run(["rebuild", "--from", "cloud", "--salvage", "--dry-run"]).status == 64)
        #expect(try f.run(["rebuild", "--from", "local", "--schema-from", "x.sqlite", "--dry-run"]).status == 64)
        #expect(try f.run(["migrate", "cloud-to-local", "--schema-from", "x.sqlite", "--dry-run"]).status == 64)
    }
}
