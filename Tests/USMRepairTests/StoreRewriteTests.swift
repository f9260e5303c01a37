import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Core Data's triggers are taken out and put back around rewrites; their text comes from the
/// store, so it is checked, never executed as a script.
@Suite("store rewrites", .timed)
struct StoreRewriteTests {
    /// A fixture store with one Core Data-style trigger whose text in sqlite_master is `sql`.
    static func storeWithTrigger(_ tmp: TempDir, appending tail: String?) throws -> URL {
        let store = tmp.path("store/T.sqlite")
        try FileManager.default.createDirectory(
            at: store.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FixtureStore.write(to: store)
        var sql =
            "CREATE TRIGGER Z_DA_ZTAG_count AFTER INSERT ON ZTAG FOR EACH ROW BEGIN UPDATE ZTAG SET ZNAME = ZNAME WHERE Z_PK = NEW.Z_PK; END"
        try FixtureStore.mutate(store, sql)
        if let tail {
            sql += tail
            try FixtureStore.mutate(
                store,
                """
                PRAGMA writable_schema = ON;
                UPDATE sqlite_master SET sql = '\(sql.replacingOccurrences(of: "'", with: "''"))' WHERE type = 'trigger';
                PRAGMA writable_schema = OFF;
                """)
        }
        return store
    }

    @Test("a well-formed trigger survives redaction and metadata-only copies")
    func triggerKept() throws {
        let tmp = try TempDir()
        let store = try Self.storeWithTrigger(tmp, appending: nil)
        for flag in ["--redact", "--metadata-only"] {
            let out = tmp.path("b\(flag).tar.zst")
            let r = USM.run(["archive", "--store", store.path, flag, "-o", out.path, "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let skipped = (r.json["skipped"] as? [[String: Any]]) ?? []
            #expect(!skipped.contains { $0["kind"] as? String == "store" }, "\(r.stdout)")
            let back = tmp.path("back\(flag)")
            #expect(USM.run(["restore", out.path, "--to", back.path]).status == 0)
            let queue = try DatabaseQueue(path: back.appendingPathComponent("store/T.sqlite").path)
            let count = try queue.read {
                try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'")
            }
            try queue.close()
            #expect(count == 1)
        }
    }

    @Test(
        "trigger text with a second statement is refused: no hang, nothing run, the store left out with its reason",
        .timeLimit(.minutes(1)))
    func injectedStatement() throws {
        let tmp = try TempDir()
        // Without the check, re-creating the trigger would run an endless recursive query.
        let store = try Self.storeWithTrigger(
            tmp, appending: "; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c")
        let before = try TreeSnapshot(store.deletingLastPathComponent())
        for flag in ["--redact", "--metadata-only"] {
            let out = tmp.path("out\(flag)/b.tar.zst")
            try FileManager.default.createDirectory(
                at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
            let r = USM.run(["archive", "--store", store.path, flag, "-o", out.path, "--json"])
            #expect(r.status == 0, "\(r.stderr)")
            let skipped = (r.json["skipped"] as? [[String: Any]]) ?? []
            // Left out: refused where its schema is read (hostile-schema), before any rewrite.
            #expect(
                skipped.contains { $0["kind"] as? String == "store" && $0["path"] as? String == "store/T.sqlite" },
                "\(r.stdout)")
        }
        #expect(try TreeSnapshot(store.deletingLastPathComponent()) == before, "the store is untouched")
    }

    @Test("the checks themselves: one CREATE TRIGGER statement, nothing else")
    func validation() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (x)")
            func check(_ sql: String) -> Bool {
                (try? StoreRewrite.validate(db, .init(name: "x", sql: sql), path: "p")) != nil
            }
            #expect(check("CREATE TRIGGER x AFTER INSERT ON t BEGIN SELECT 1; END"))
            // A TEMP trigger is not part of a stored schema: refused (issue 28).
            #expect(!check("create temp trigger x after insert on t begin select 1; end"))
            #expect(!check("CREATE TRIGGER x AFTER INSERT ON t BEGIN SELECT 1; END; DROP TABLE t"))
            #expect(!check("DROP TABLE t"))
            #expect(!check("CREATE TRIGGER x AFTER INSERT ON nowhere BEGIN SELECT 1; END"))
            #expect(!check(""))
        }
    }
}
