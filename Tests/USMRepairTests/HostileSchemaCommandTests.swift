import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 28, finding 1 (every command that reads a store) and 5 (the step budget in real commands):
/// the gaps `HostileSchemaTests` leaves. A schema row whose text goes on after its statement
/// (`…; ATTACH 'victim' AS v; DELETE FROM v.ZITEM; …`) is never run: the victim keeps its rows.
@Suite("hostile schema: every command reading a store, and the step budget in real commands", .timed)
struct HostileSchemaCommandTests {
    typealias H = HostileSchemaTests
    typealias Fixture = OperationTests.Fixture

    @Test(
        "stores and archive (full, --redact, --metadata-only) never run a store's schema text; --redact names hostile-schema"
    )
    func storesAndArchive() throws {
        let tmp = try TempDir()
        let source = tmp.path("src/S.sqlite")
        try FixtureStore.write(to: source, H.options())
        let victim = try H.victim(tmp)
        try H.plant(source, tail: H.attackTail(victim))
        _ = USM.run(["stores", "--store", source.path, "--json"])
        #expect(try H.victimRows(victim) == 3, "stores")
        for (name, extra) in [("full", []), ("redacted", ["--redact"]), ("meta", ["--metadata-only"])] {
            let bundle = tmp.path("b/\(name).tar.zst")
            try FileManager.default.createDirectory(
                at: bundle.deletingLastPathComponent(), withIntermediateDirectories: true)
            let r = USM.run(["archive", "--store", source.path, "-o", bundle.path, "--json", "--verbose"] + extra)
            #expect(try H.victimRows(victim) == 3, "archive \(extra)")
            guard !extra.isEmpty else { continue }
            // The store is left out of a transformed bundle, and the reason names the refusal.
            #expect(
                r.stdout.contains("hostile-schema, so it cannot be")
                    || r.stderr.contains("hostile-schema, so it cannot be"),
                "archive \(extra): \(r.stdout.prefix(3000)) \(r.stderr)")
        }
    }

    @Test(
        "migrate-store with a recipe, and --into with the hostile store as source or as destination: hostile-schema (exit 2), nothing run or written"
    )
    func recipeAndMerge() throws {
        let tmp = try TempDir()
        let hostile = tmp.path("src/S.sqlite")
        try FixtureStore.write(to: hostile, H.options())
        let victim = try H.victim(tmp)
        try H.plant(hostile, tail: H.attackTail(victim))
        let recipe = try H.folder(tmp, "r/D.sqlite")
        H.expectHostile(
            USM.run(["migrate-store", hostile.path, recipe.path, "--recipe", "fix-counters", "--json"]), "--recipe")
        #expect(!FileManager.default.fileExists(atPath: recipe.path))
        // Into a healthy store: that store is left as it was.
        let healthy = tmp.path("h/H.sqlite")
        try FixtureStore.write(to: healthy, H.options())
        let before = try Data(contentsOf: healthy)
        H.expectHostile(
            USM.run(["migrate-store", hostile.path, healthy.path, "--into", "--strategy", "copy-entities", "--json"]),
            "--into (hostile source)")
        #expect(try Data(contentsOf: healthy) == before)
        // A healthy source into the hostile store.
        let hostileBefore = try Data(contentsOf: hostile)
        let other = tmp.path("o/O.sqlite")
        try FixtureStore.write(to: other, H.options())
        H.expectHostile(
            USM.run(["migrate-store", other.path, hostile.path, "--into", "--strategy", "copy-entities", "--json"]),
            "--into (hostile destination)")
        #expect(try Data(contentsOf: hostile) == hostileBefore)
        #expect(try H.victimRows(victim) == 3)
    }

    @Test(
        "migrate cloud-to-local --salvage on a damaged cloud copy whose schema row attaches another database: hostile-schema (exit 2), nothing written"
    )
    func cloudToLocalSalvage() throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.cloud)
            $0.localStore = false
        }
        let uuid = f.options.activeUUID
        let copy = f.paths.cloudStore(uuid)
        let victim = try H.victim(f.tmp)
        try H.plant(copy, tail: H.attackTail(victim))
        _ = try SalvageRepairTests.damage(copy, in: f.tmp)
        let before = try f.snapshot()
        for extra in [["--dry-run"], ["--yes"]] {
            let r = try f.run(["migrate", "cloud-to-local", "--uuid", uuid, "--salvage", "--json"] + extra)
            H.expectHostile(r, "migrate cloud-to-local --salvage \(extra)")
            #expect(try H.victimRows(victim) == 3)
            #expect(try f.snapshot() == before)
        }
    }

    @Test(
        "the operations' --salvage on a damaged store whose schema row attaches another database: hostile-schema (exit 2), nothing written"
    )
    func operationsSalvage() throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.local)
            $0.markers = [:]
            $0.cache = .none
        }
        let victim = try H.victim(f.tmp)
        try H.plant(f.paths.localStore, tail: H.attackTail(victim))
        _ = try SalvageRepairTests.damage(f.paths.localStore, in: f.tmp)
        let before = try f.snapshot()
        for args in [
            ["rebuild", "--from", "local", "--keep-old", "--salvage", "--dry-run", "--json"],
            ["rebuild", "--from", "local", "--keep-old", "--salvage", "--yes", "--json"],
            ["migrate", "local-to-cloud", "--salvage", "--yes", "--json"],
        ] {
            let r = try f.run(args)
            H.expectHostile(r, args.joined(separator: " "))
            #expect(try H.victimRows(victim) == 3, "\(args)")
            #expect(try f.snapshot() == before, "\(args) changed the layout")
        }
    }

    /// A store of `rows` rows with an index whose expression the parser accepts (no printf,
    /// zeroblob, replace…) but that costs about 29,000 VM steps a row: `max()` of 120 `max()` of
    /// 120 keys, twice. Planted after the rows (writing them does not evaluate it).
    static func costly(_ tmp: TempDir, rows: Int) throws -> URL {
        let source = tmp.path("src/S.sqlite")
        try RawStore.write(
            to: source,
            """
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, \(rows));
            WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT \(rows))
            INSERT INTO ZITEM SELECT n, 1, 1, 'x' FROM c;
            CREATE INDEX ZITEM_COST ON ZITEM (abs(Z_PK));
            """)
        let leaf = "max(" + Array(repeating: "Z_PK", count: 120).joined(separator: ",") + ")"
        let middle = "max(" + Array(repeating: leaf, count: 120).joined(separator: ",") + ")"
        let top = "max(" + Array(repeating: middle, count: 2).joined(separator: ",") + ")"
        let queue = try DatabaseQueue(path: source.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(
                sql: "UPDATE sqlite_master SET sql = ? WHERE name = 'ZITEM_COST'",
                arguments: ["CREATE INDEX ZITEM_COST ON ZITEM (\(top))"])
        }
        try queue.close()
        #expect(SchemaDefinition.audit([("index", "ZITEM_COST", "CREATE INDEX ZITEM_COST ON ZITEM (\(top))")]) == nil)
        return source
    }

    @Test(
        "the step budget stops check, salvage (--dry-run too) and migrate-store (ios, copy-entities) on expressions the parser accepts: hostile-schema, exit 2, nothing written"
    )
    func stepBudgetInCommands() throws {
        // The floor lowered from 50 million to 25 million steps (for this test's task only: the
        // commands run in it), still above the store's own 100 a byte (its index text alone is
        // 170 KB), so each of the five runs stops after half the steps: the same refusal.
        try UntrustedDatabase.$minimumStepsOverride.withValue(25_000_000) {
            let tmp = try TempDir()
            // About 75 million steps to evaluate the index for every row, three times the budget.
            let source = try Self.costly(tmp, rows: 2600)
            #expect(
                UntrustedDatabase.budget(forBytes: UntrustedDatabase.storeBytes(source.path))
                    == UntrustedDatabase.minimumSteps)
            let check = USM.run(["check", "--store", source.path, "--json"])
            #expect(
                check.status == 2 && check.stdout.contains("hostile-schema") && check.stdout.contains("SQLite steps"))
            // The lowered floor is the budget the command ran with.
            #expect(check.stdout.contains("past 25000000 SQLite steps"), "\(check.stdout)")
            let out = try H.folder(tmp, "out/o.sqlite")
            for extra in [["--dry-run"], []] {
                let r = USM.run(["salvage", source.path, out.path, "--json"] + extra)
                H.expectHostile(r, "salvage \(extra)")
                #expect(r.stderr.contains("past 25000000 SQLite steps"), "\(r.stderr)")
                #expect(!FileManager.default.fileExists(atPath: out.path))
            }
            for strategy in ["ios", "copy-entities"] {
                let destination = try H.folder(tmp, "dst-\(strategy)/D.sqlite")
                let r = USM.run(["migrate-store", source.path, destination.path, "--strategy", strategy, "--json"])
                H.expectHostile(r, "migrate-store --strategy \(strategy)")
                #expect(!FileManager.default.fileExists(atPath: destination.path), "\(strategy)")
            }
        }
    }
}
