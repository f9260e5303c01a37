import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Merges and `dedupe` beyond identity itself (issue 29): models that differ refused while
/// planning, `matched` in the ledger, ordered relationships, external data, history rows.
@Suite("merges and dedupe")
struct MergeIdentityTests {
    typealias Fixture = OperationTests.Fixture

    static func snapshots(_ dir: URL) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
    }

    @Test("a merge of stores whose models differ is refused while planning: dry run and run exit alike, no snapshot")
    func modelsDiffer() throws {
        let f = try Fixture()
        // The local store has no Tag entity: the cloud store's tags have nowhere to go.
        try FixtureStore.mutate(
            f.paths.localStore, "DELETE FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'; DROP TABLE ZTAG; DROP TABLE Z_1TAGS;")
        let before = try f.snapshot()
        let snaps = f.tmp.path("snaps")
        let dry = try f.run(["migrate", "cloud-to-local", "--merge", "--dry-run", "--json"])
        let run = try f.run(["migrate", "cloud-to-local", "--merge", "--yes", "--json", "--snapshot-dir", snaps.path])
        #expect(
            dry.status != 0 && dry.status == run.status, "\(dry.status) \(dry.stderr) / \(run.status) \(run.stderr)")
        #expect(dry.stderr.contains("Tag"), "\(dry.stderr)")
        #expect(Self.snapshots(snaps).isEmpty, "no snapshot written: \(Self.snapshots(snaps))")
        #expect(try f.snapshot() == before)
        // migrate-store --into alike.
        let tmp = try TempDir()
        try MergeFixture.write(to: tmp.path("A.sqlite"), .a, prefix: "src")
        try FixtureStore.write(to: tmp.path("d/B.sqlite"))
        try FixtureStore.mutate(
            tmp.path("d/B.sqlite"),
            "DELETE FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'; DROP TABLE ZTAG; DROP TABLE Z_1TAGS;")
        let args = ["migrate-store", tmp.path("A.sqlite").path, tmp.path("d/B.sqlite").path, "--into", "--json"]
        let storeDry = USM.run(args + ["--dry-run"])
        let storeRun = USM.run(args + ["--snapshot-dir", tmp.path("snaps").path])
        #expect(storeDry.status == 2 && storeRun.status == 2, "\(storeDry.stderr) / \(storeRun.stderr)")
        #expect(storeDry.stderr.contains("differ"), "\(storeDry.stderr)")
        #expect(Self.snapshots(tmp.path("snaps")).isEmpty, "\(Self.snapshots(tmp.path("snaps")))")
    }
}

extension MergeIdentityTests {
    /// Copies `n` tags of the store at `url` (new keys above every existing one): `n` duplicates.
    static func duplicateTags(_ url: URL, _ n: Int) throws {
        try FixtureStore.mutate(
            url,
            """
            INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME)
              SELECT Z_PK + 100000, Z_ENT, Z_OPT, ZNAME FROM ZTAG ORDER BY Z_PK LIMIT \(n);
            UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT MAX(Z_PK) FROM ZTAG) WHERE Z_NAME = 'Tag';
            """)
    }

    static func duplicateProblems(_ json: [String: Any], store: String) -> [String: Int] {
        let stores = json["stores"] as? [[String: Any]] ?? []
        var found: [String: Int] = [:]
        for s in stores where (s["path"] as? String)?.hasSuffix(store) == true {
            for p in s["problems"] as? [[String: Any]] ?? [] where p["code"] as? String == "duplicate-objects" {
                found[p["subject"] as? String ?? "?"] = p["count"] as? Int
            }
        }
        return found
    }

    @Test("status reports duplicate-objects per entity with advice whose dry run holds: dedupe for the local store")
    func statusLocal() throws {
        let f = try Fixture()
        let clean = try f.run(["status", "--json"])
        let already = Self.duplicateProblems(clean.json, store: "UbiquityStore.sqlite")
        try Self.duplicateTags(f.paths.localStore, 3)
        let r = try f.run(["status", "--json"])
        let found = Self.duplicateProblems(r.json, store: "UbiquityStore.sqlite")
        #expect(found["Tag"] == (already["Tag"] ?? 0) + 3, "\(found) \(r.stdout)")
        let actions = r.json["actions"] as? [[String: Any]] ?? []
        let dedupe = actions.first { ($0["command"] as? [String])?.dropFirst().first == "dedupe" }
        #expect(dedupe?["dryRun"] as? String == "accepted", "\(actions)")
        #expect((dedupe?["command"] as? [String])?.contains("--dry-run") == true)
        // The advice's command removes them: status then reports none.
        let args = Array((dedupe?["command"] as? [String] ?? []).dropFirst().filter { $0 != "--dry-run" })
        #expect(USM.run(args + ["--yes", "--snapshot-dir", f.tmp.path("snaps").path]).status == 0)
        let after = try f.run(["status", "--json"])
        #expect(Self.duplicateProblems(after.json, store: "UbiquityStore.sqlite").isEmpty)
        #expect(
            !((after.json["actions"] as? [[String: Any]]) ?? []).contains {
                ($0["command"] as? [String])?.dropFirst().first == "dedupe"
            })
    }

    @Test("status: duplicates in the active cloud copy are advised through the local store (migrate, dedupe, rebuild)")
    func statusCloud() throws {
        let f = try Fixture()
        let copy = f.paths.cloudStore(f.options.activeUUID)
        try Self.duplicateTags(copy, 2)
        let r = try f.run(["status", "--json"])
        #expect((Self.duplicateProblems(r.json, store: copy.lastPathComponent)["Tag"] ?? 0) >= 2, "\(r.stdout)")
        let actions = r.json["actions"] as? [[String: Any]] ?? []
        let route = actions.first { ($0["text"] as? String)?.contains("rebuild --from local") == true }
        #expect(route?["dryRun"] as? String == "accepted", "\(actions)")
        #expect(
            (route?["command"] as? [String])?.starts(with: ["usm-repair", "migrate", "cloud-to-local"]) == true,
            "\(String(describing: route))")
        #expect((route?["text"] as? String)?.contains("dedupe") == true)
    }
}

extension MergeIdentityTests {
    static func matchedOf(_ json: [String: Any]) -> [String: Int]? {
        let stores = (json.details["ledger"] as? [String: Any])?["stores"] as? [[String: Any]] ?? []
        return stores.first { $0["fate"] as? String == "merged" }?["matched"] as? [String: Int]
    }

    @Test("the ledger of a merge says per entity how many incoming objects were matched (plan, report, text)")
    func ledgerMatched() throws {
        let f = try Fixture()
        let dry = try f.run(["migrate", "cloud-to-local", "--merge", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let planned = try #require(Self.matchedOf(dry.json), "\(dry.stdout)")
        #expect((planned["Shelf"] ?? 0) > 0, "\(planned)")
        let text = try f.run(["migrate", "cloud-to-local", "--merge", "--dry-run"])
        #expect(text.stdout.contains("matched (already there, not copied again): ") && text.stdout.contains("Shelf "))
        let run = try OperationTests.apply(f, ["migrate", "cloud-to-local", "--merge"])
        #expect(Self.matchedOf(run) == planned.filter { $0.value > 0 }, "\(String(describing: Self.matchedOf(run)))")
        // Other stores say null; --allow-duplicates matches nothing.
        let g = try Fixture()
        let copied = try g.run(["migrate", "cloud-to-local", "--merge", "--allow-duplicates", "--dry-run", "--json"])
        #expect(Self.matchedOf(copied.json) == [:], "\(copied.stdout)")
    }
}

extension MergeIdentityTests {
    @Test(
        "rebuild --from cloud --merge: the local store keeps its objects, gains the cloud's once, and seeds the new store"
    )
    func rebuildFromCloudMerge() throws {
        let f = try Fixture()
        let refused = try f.run(["rebuild", "--from", "cloud", "--dry-run"])
        #expect(refused.status == 8 && refused.stderr.contains("rebuild --from cloud --merge"), "\(refused.stderr)")
        let local = try DataSafetyTests.localRows(f)
        let dry = try f.run(["rebuild", "--from", "cloud", "--merge", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let matched = try #require(Self.matchedOf(dry.json), "\(dry.stdout)")
        let json = try OperationTests.apply(f, ["rebuild", "--from", "cloud", "--merge"])
        #expect(Self.matchedOf(json) == matched.filter { $0.value > 0 })
        let after = try DataSafetyTests.localRows(f)
        for (name, n) in local { #expect((after[name] ?? 0) >= n, "\(name): \(after) \(local)") }
        #expect(after.values.reduce(0, +) > local.values.reduce(0, +))
        #expect(OperationTests.state(json) != nil)
        #expect(try f.run(["rebuild", "--from", "local", "--merge"]).status == 64)
        #expect(try f.run(["rebuild", "--from", "cloud", "--merge", "--replace"]).status == 64)
    }
}

extension MergeIdentityTests {
    @Test("dedupe keeps order: a removed copy's ordered to-many (one-to-many, many-to-many) comes after the survivor's")
    func dedupeOrdered() throws {
        let tmp = try TempDir()
        let url = try IdentityTests.store(tmp)
        // Shelf 100 is a copy of shelf 1 and holds items 1 and 5 (positions between shelf 1's);
        // book 100 (a copy of book 3) holds tag 2 at position 6, before book 3's tags 1 and 3.
        try FixtureStore.mutate(
            url,
            """
            INSERT INTO ZSHELF SELECT 100, Z_ENT, Z_OPT, ZNAME FROM ZSHELF WHERE Z_PK = 1;
            UPDATE ZITEM SET ZSHELF = 100 WHERE Z_PK IN (1, 5);
            INSERT INTO Z_1TAGS VALUES (100, 2, 6);
            """)
        let before = try DatabaseQueue(path: url.path).read { (db: Database) throws in
            try Int.fetchAll(db, sql: "SELECT Z_PK FROM ZITEM WHERE ZSHELF = 1 ORDER BY Z_FOK_SHELF")
        }
        #expect(try IdentityTests.dedupe(url)["Shelf"] == 1)
        let queue = try DatabaseQueue(path: url.path)
        try queue.read { (db: Database) throws in
            #expect(
                try Int.fetchAll(db, sql: "SELECT Z_PK FROM ZITEM WHERE ZSHELF = 1 ORDER BY Z_FOK_SHELF, Z_PK")
                    == before + [1, 5])
            #expect(
                try Int.fetchAll(db, sql: "SELECT COUNT(DISTINCT Z_FOK_SHELF) = COUNT(*) FROM ZITEM WHERE ZSHELF = 1")
                    == [1], "no two items at one position")
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM Z_1TAGS WHERE Z_1ITEMS = 3")
            #expect(
                try Int.fetchAll(db, sql: "SELECT Z_6TAGS FROM Z_1TAGS WHERE Z_1ITEMS = 3 ORDER BY Z_FOK_1ITEMS")
                    == [1, 3, 2], "\(rows)")
        }
        try queue.close()
    }
}

extension MergeIdentityTests {
    @Test("dedupe removes a removed copy's external-data file only when nothing else names it")
    func dedupeExternalData() throws {
        let tmp = try TempDir()
        let url = tmp.path("s/S.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("s"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: try IdentityTests.store(tmp), to: url)
        let support = tmp.path("s/.S_SUPPORT/_EXTERNAL_DATA")
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        let kept = "11111111-1111-4111-8111-111111111111"
        let own = "22222222-2222-4222-8222-222222222222"
        for name in [kept, own] { try Data(name.utf8).write(to: support.appendingPathComponent(name)) }
        func reference(_ name: String) -> String {
            "x'02" + Data(name.utf8).map { String(format: "%02x", $0) }.joined() + "00'"
        }
        // Books 3, 100 and 101 share a title (one group by --key Book=title): 3 and 101 name one
        // file, 100 its own.
        try FixtureStore.mutate(
            url,
            """
            UPDATE ZITEM SET ZCOVER = \(reference(kept)) WHERE Z_PK IN (3, 101);
            UPDATE ZITEM SET ZCOVER = \(reference(own)) WHERE Z_PK = 100;
            """)
        let run = USM.run([
            "dedupe", "--store", url.path, "--key", "Book=title", "--yes", "--json", "--snapshot-dir",
            tmp.path("snaps").path,
        ])
        #expect(
            run.status == 0 && (run.details["removed"] as? [String: Int])?["Book"] == 2, "\(run.stdout)\(run.stderr)")
        #expect(
            FileManager.default.fileExists(atPath: support.appendingPathComponent(kept).path), "still named by book 3")
        #expect(
            !FileManager.default.fileExists(atPath: support.appendingPathComponent(own).path), "named by nothing now")
        #expect(try Migrate.check(url).errors.isEmpty)
    }
}

extension MergeIdentityTests {
    /// The stores the merge tests merge: `A.sqlite` (side a) into `d/B.sqlite` (side b), the same
    /// objects on both sides (prefix `same`), each item with its ordered shelf and tags.
    static func mergePair(_ tmp: TempDir) throws -> (source: URL, destination: URL) {
        let source = tmp.path("A.sqlite")
        let destination = tmp.path("d/B.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("d"), withIntermediateDirectories: true)
        try MergeFixture.write(to: source, .a, prefix: "same")
        try MergeFixture.write(to: destination, .b, prefix: "same")
        return (source, destination)
    }

    @Test(
        "the model's uniqueness constraint is a key by itself: incoming objects with a code already there are matched")
    func constraintKeys() throws {
        let tmp = try TempDir()
        let (source, destination) = try Self.mergePair(tmp)
        // Same codes (Item.code is unique), other titles: the same objects by the constraint.
        try FixtureStore.mutate(source, "UPDATE ZITEM SET ZTITLE = ZTITLE || ' (edited)'")
        let report = try Migrate.run(source, destination, mode: .merge, snapshots: tmp.path("snapshots"))
        #expect(report.matched["Book"] == 5 && report.matched["Magazine"] == 2, "\(report.matched)")
        let (rows, errors, _) = try Migrate.check(destination)
        #expect(errors.isEmpty, "\(errors)")
        #expect(rows["Book"] == 5 && rows["Magazine"] == 2, "\(rows)")
    }
}

extension MergeIdentityTests {
    @Test("dedupe keeps persistent history consistent: a change recorded for a removed copy names its survivor")
    func dedupeHistory() throws {
        let tmp = try TempDir()
        let url = tmp.path("S.sqlite")
        var o = FixtureStore.Options()
        o.history = true
        try FixtureStore.write(to: url, o)
        try MergeIdentityTests.duplicateTags(url, 1)
        let copy = try DatabaseQueue(path: url.path).read { (db: Database) throws in
            try Int.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM ZTAG") ?? 0
        }
        try FixtureStore.mutate(
            url,
            "INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID) VALUES (9000, 16001, 1, 0, 6, \(copy), 1)"
        )
        #expect(try IdentityTests.dedupe(url)["Tag", default: 0] >= 1)
        let queue = try DatabaseQueue(path: url.path)
        try queue.read { (db: Database) throws in
            let named = try Int.fetchOne(db, sql: "SELECT ZENTITYPK FROM ACHANGE WHERE Z_PK = 9000")
            #expect(named != copy, "the removed copy is named no more")
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZTAG WHERE Z_PK = ?", arguments: [named]) == 1)
            #expect(
                try Int.fetchOne(
                    db,
                    sql:
                        "SELECT COUNT(*) FROM ACHANGE c WHERE c.ZENTITY = 6 AND NOT EXISTS (SELECT 1 FROM ZTAG t WHERE t.Z_PK = c.ZENTITYPK)"
                ) == 0)
        }
        try queue.close()
    }
}

extension MergeIdentityTests {
    @Test("a merge keeps order: incoming objects of a matched parent's ordered to-many come after its own")
    func mergeOrdered() throws {
        let tmp = try TempDir()
        let (source, destination) = try Self.mergePair(tmp)
        // Two new books on shelf 1 of the source, placed before its other items.
        try FixtureStore.mutate(
            source,
            """
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZSHELF, Z_FOK_SHELF, ZTITLE, ZCODE)
              SELECT 5000, 2, 1, (SELECT MIN(Z_PK) FROM ZAUTHOR), (SELECT MIN(Z_PK) FROM ZSHELF), 1, 'new first', 'code-new-1';
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZSHELF, Z_FOK_SHELF, ZTITLE, ZCODE)
              SELECT 5001, 2, 1, (SELECT MIN(Z_PK) FROM ZAUTHOR), (SELECT MIN(Z_PK) FROM ZSHELF), 2, 'new second', 'code-new-2';
            UPDATE Z_PRIMARYKEY SET Z_MAX = 5001 WHERE Z_ENT IN (1, 2, 3);
            """)
        let shelf = try DatabaseQueue(path: destination.path).read { (db: Database) throws in
            try Int.fetchOne(
                db, sql: "SELECT Z_PK FROM ZSHELF WHERE ZNAME = (SELECT ZNAME FROM ZSHELF ORDER BY Z_PK LIMIT 1)") ?? 0
        }
        let before = try DatabaseQueue(path: destination.path).read { (db: Database) throws in
            try String.fetchAll(
                db, sql: "SELECT ZTITLE FROM ZITEM WHERE ZSHELF = ? ORDER BY Z_FOK_SHELF", arguments: [shelf])
        }
        let sourceShelf = try DatabaseQueue(path: source.path).read { (db: Database) throws in
            try String.fetchOne(db, sql: "SELECT ZNAME FROM ZSHELF ORDER BY Z_PK LIMIT 1")
        }
        let report = try Migrate.run(source, destination, mode: .merge, snapshots: tmp.path("snapshots"))
        #expect(report.matched["Shelf"] == 2, "\(report.matched)")
        let queue = try DatabaseQueue(path: destination.path)
        try queue.read { (db: Database) throws in
            let target =
                try Int.fetchOne(db, sql: "SELECT Z_PK FROM ZSHELF WHERE ZNAME = ?", arguments: [sourceShelf]) ?? 0
            let titles = try String.fetchAll(
                db, sql: "SELECT ZTITLE FROM ZITEM WHERE ZSHELF = ? ORDER BY Z_FOK_SHELF, Z_PK", arguments: [target])
            let old = target == shelf ? before : Array(titles.dropLast(2))
            #expect(titles == old + ["new first", "new second"], "\(titles)")
        }
        try queue.close()
    }
}

extension MergeIdentityTests {
    /// The tags of the item with `code` in the store at `url`, in the order of its ordered
    /// many-to-many (the join table's `Z_FOK_` column), with whether no two share a position.
    static func orderedTags(_ url: URL, code: String) throws -> (tags: [String], distinct: Bool) {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { (db: Database) throws in
            let join =
                try String.fetchOne(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'Z_[0-9]*TAGS'") ?? "?"
            let items =
                try String.fetchOne(
                    db, sql: "SELECT name FROM pragma_table_info('\(join)') WHERE name GLOB 'Z_[0-9]*ITEMS'") ?? "?"
            let order = "Z_FOK_" + items.dropFirst(2)
            let from =
                "FROM \(join) j JOIN ZITEM i ON i.Z_PK = j.\(items) JOIN ZTAG g ON g.Z_PK = j.Z_6TAGS WHERE i.ZCODE = ?"
            let tags = try String.fetchAll(
                db, sql: "SELECT g.ZNAME \(from) ORDER BY j.\(order), g.ZNAME", arguments: [code])
            let distinct =
                try Bool.fetchOne(db, sql: "SELECT COUNT(DISTINCT j.\(order)) = COUNT(*) \(from)", arguments: [code])
                ?? false
            return (tags, distinct)
        }
    }

    @Test(
        "a merge keeps the order of an ordered many-to-many: a matched object's incoming pairs come after its own, in their order (engine and migrate-store --into)"
    )
    func mergeOrderedManyToMany() throws {
        for viaCLI in [false, true] {
            let tmp = try TempDir()
            let (source, destination) = try Self.mergePair(tmp)
            // Item 1 holds tags 1 and 3 on both sides (positions 1024 and 3072). The source adds tag 2
            // and a new tag to it, placed before its other tags.
            try FixtureStore.mutate(
                source,
                """
                INSERT INTO ZTAG VALUES (50, 6, 1, 'same tag new');
                INSERT INTO Z_1TAGS SELECT i.Z_PK, g.Z_PK, 2 FROM ZITEM i, ZTAG g WHERE i.ZCODE = 'code-same-1' AND g.ZNAME = 'same tag 2';
                INSERT INTO Z_1TAGS SELECT i.Z_PK, 50, 1 FROM ZITEM i WHERE i.ZCODE = 'code-same-1';
                UPDATE Z_PRIMARYKEY SET Z_MAX = 50 WHERE Z_ENT = 6;
                """)
            let before = try Self.orderedTags(destination, code: "code-same-1")
            #expect(before.tags == ["same tag 1", "same tag 3"], "\(before)")
            #expect(
                try Self.orderedTags(source, code: "code-same-1").tags == [
                    "same tag new", "same tag 2", "same tag 1", "same tag 3",
                ])
            if viaCLI {
                let run = USM.run([
                    "migrate-store", source.path, destination.path, "--into", "--json", "--snapshot-dir",
                    tmp.path("snaps").path,
                ])
                #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            } else {
                let report = try Migrate.run(source, destination, mode: .merge, snapshots: tmp.path("snapshots"))
                #expect(report.matched["Book"] == 5, "\(report.matched)")
            }
            let after = try Self.orderedTags(destination, code: "code-same-1")
            #expect(
                after.tags == ["same tag 1", "same tag 3", "same tag new", "same tag 2"],
                "the destination's own pairs first, then the incoming ones in the source's order: \(after.tags)")
            #expect(after.distinct, "no two tags at one position")
            // A matched item that gained nothing keeps its list as it was.
            #expect(try Self.orderedTags(destination, code: "code-same-2").tags == ["same tag 2"])
            #expect(try Migrate.check(destination).errors.isEmpty)
        }
    }
}
