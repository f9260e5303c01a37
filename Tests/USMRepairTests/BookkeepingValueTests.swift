import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Core Data's bookkeeping columns holding a value of a type Core Data never writes: reported as
/// `bookkeeping-value`, never a crash, in `status`, `check` and `archive`.
@Suite("bookkeeping values of unexpected types", .timed)
struct BookkeepingValueTests {
    /// One way of breaking a store, as SQL run on a fixture store.
    struct Breakage: Sendable, CustomTestStringConvertible {
        let name: String
        let sql: String
        /// The `subject` the problem names.
        let subject: String
        var testDescription: String { name }
    }

    static let breakages: [Breakage] = [
        .init(
            name: "Z_SUPER as text", sql: "UPDATE Z_PRIMARYKEY SET Z_SUPER = 'x' WHERE Z_ENT = 2",
            subject: "Z_PRIMARYKEY.Z_SUPER"),
        .init(
            name: "Z_SUPER as a blob", sql: "UPDATE Z_PRIMARYKEY SET Z_SUPER = x'0102' WHERE Z_ENT = 2",
            subject: "Z_PRIMARYKEY.Z_SUPER"),
        .init(
            name: "Z_SUPER as 1e300", sql: "UPDATE Z_PRIMARYKEY SET Z_SUPER = 1e300 WHERE Z_ENT = 2",
            subject: "Z_PRIMARYKEY.Z_SUPER"),
        .init(
            name: "Z_MAX as text", sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 'many' WHERE Z_ENT = 4",
            subject: "Z_PRIMARYKEY.Z_MAX"),
        .init(
            name: "Z_MAX as a blob", sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = x'00' WHERE Z_ENT = 4",
            subject: "Z_PRIMARYKEY.Z_MAX"),
        .init(
            name: "Z_MAX as 1e300", sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 1e300 WHERE Z_ENT = 4",
            subject: "Z_PRIMARYKEY.Z_MAX"),
        .init(
            name: "Z_NAME as a blob", sql: "UPDATE Z_PRIMARYKEY SET Z_NAME = x'ff00fe' WHERE Z_ENT = 3",
            subject: "Z_PRIMARYKEY.Z_NAME"),
        .init(
            name: "Z_NAME as NULL", sql: "UPDATE Z_PRIMARYKEY SET Z_NAME = NULL WHERE Z_ENT = 3",
            subject: "Z_PRIMARYKEY.Z_NAME"),
        .init(name: "Z_UUID as a blob", sql: "UPDATE Z_METADATA SET Z_UUID = x'ff00fe'", subject: "Z_METADATA.Z_UUID"),
        .init(
            name: "Z_UUID of 5,000 characters", sql: "UPDATE Z_METADATA SET Z_UUID = printf('%.*c', 5000, 'x')",
            subject: "Z_METADATA.Z_UUID"),
        .init(
            name: "Z_ENT as text in an entity table", sql: "UPDATE ZITEM SET Z_ENT = 'abc' WHERE Z_PK = 1",
            subject: "ZITEM.Z_ENT"),
        .init(
            name: "Z_ENT as a real in an entity table", sql: "UPDATE ZAUTHOR SET Z_ENT = 4.5 WHERE Z_PK = 1",
            subject: "ZAUTHOR.Z_ENT"),
        .init(
            name: "Z_PK as text in an entity table without a rowid key",
            sql: """
                CREATE TABLE ZNOTE (Z_PK INTEGER, Z_ENT INTEGER, Z_OPT INTEGER, ZTEXT VARCHAR);
                INSERT INTO Z_PRIMARYKEY VALUES (7, 'Note', 0, 2);
                INSERT INTO ZNOTE VALUES (1, 7, 1, 'a'), ('two', 7, 1, 'b');
                """,
            subject: "ZNOTE.Z_PK"),
    ]

    @Test("status, check and archive report the value and go on", arguments: breakages)
    func reported(_ breakage: Breakage) throws {
        let tmp = try TempDir()
        let store = tmp.path("in/Library.sqlite")
        try FixtureStore.write(to: store)
        try FixtureStore.mutate(store, breakage.sql)
        let before = try TreeSnapshot(tmp.path("in"))

        for command in ["status", "check"] {
            let r = USM.run([command, "--store", store.path, "--json"])
            #expect(
                [0, 1].contains(r.status), "\(command) \(breakage.name): exit \(r.status)\n\(r.stderr.suffix(500))")
            let problems = ((r.json["stores"] as? [[String: Any]])?.first?["problems"] as? [[String: Any]]) ?? []
            let found = problems.first { $0["code"] as? String == "bookkeeping-value" }
            #expect(found?["subject"] as? String == breakage.subject, "\(command) \(breakage.name): \(problems)")
            #expect(found?["severity"] as? String == "error")
        }
        let check = USM.run(["check", "--store", store.path])
        #expect(check.status == 1, "an error fails check")
        #expect(check.stdout.contains("bookkeeping-value"))

        let output = tmp.path("out/bundle.tar.zst")
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        let archive = USM.run(["archive", "--store", store.path, "-o", output.path, "-q"])
        #expect(archive.status == 0, "archive \(breakage.name): exit \(archive.status)\n\(archive.stderr.suffix(500))")
        #expect(FileManager.default.fileExists(atPath: output.path))
        #expect(try TreeSnapshot(tmp.path("in")) == before, "reading never writes")
    }

    @Test("the other values of the store are still read")
    func restStillRead() throws {
        let tmp = try TempDir()
        let store = tmp.path("Library.sqlite")
        try FixtureStore.write(to: store)
        try FixtureStore.mutate(
            store,
            "UPDATE Z_PRIMARYKEY SET Z_MAX = 'many' WHERE Z_ENT = 4; UPDATE ZITEM SET Z_ENT = 'abc' WHERE Z_PK = 1")
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = try #require(report.stores.first)
        #expect(s.health == .ok)
        #expect(s.storeUUID == FixtureStore.Options().storeUUID)
        let rows = Dictionary(uniqueKeysWithValues: s.entities.map { ($0.name, $0.rows) })
        #expect(rows["Book"] == FixtureStore.Options().books - 1, "the row with a text Z_ENT is not counted as a Book")
        #expect(rows["Author"] == FixtureStore.Options().authors)
        let zent = try #require(s.problems.first { $0.subject == "ZITEM.Z_ENT" })
        #expect(zent.code == .bookkeepingValue)
        #expect(zent.count == 1)
        // An unreadable Z_MAX is not read as 0: no made-up zmax-behind.
        #expect(!s.problems.contains { $0.code == .zmaxBehind })
    }

    @Test("a -wal copied from another store: no crash, and the mismatch is named")
    func foreignWAL() throws {
        let tmp = try TempDir()
        var a = FixtureStore.Options()
        a.walOnlyBooks = 40
        a.seed = 5
        try FixtureStore.write(to: tmp.path("a/Library.sqlite"), a)
        var b = FixtureStore.Options()
        b.walOnlyBooks = 2
        b.books = 200
        try FixtureStore.write(to: tmp.path("b/Library.sqlite"), b)
        let store = tmp.path("b/Library.sqlite")
        try FileManager.default.removeItem(atPath: store.path + "-wal")
        try FileManager.default.copyItem(atPath: tmp.path("a/Library.sqlite-wal").path, toPath: store.path + "-wal")
        let before = try TreeSnapshot(tmp.url)
        for command in ["status", "check"] {
            let r = USM.run([command, "--store", store.path, "--json"])
            #expect([0, 1, 2].contains(r.status), "\(command): exit \(r.status)\n\(r.stderr.suffix(500))")
            let codes =
                ((r.json["stores"] as? [[String: Any]])?.first?["problems"] as? [[String: Any]])?.compactMap {
                    $0["code"] as? String
                } ?? []
            #expect(codes.contains("wal-mismatch"), "the -shm records other salts than the -wal: \(codes)")
        }
        // Without the -shm nothing says whose -wal it is; reading must still not crash.
        try FileManager.default.removeItem(atPath: store.path + "-shm")
        let r = USM.run(["check", "--store", store.path, "--json"])
        #expect([0, 1, 2].contains(r.status), "exit \(r.status)\n\(r.stderr.suffix(500))")
        let a2 = USM.run(["archive", "--store", store.path, "-o", tmp.path("out.tar.zst").path, "-q"])
        #expect([0, 1, 2].contains(a2.status), "exit \(a2.status)\n\(a2.stderr.suffix(500))")
        var after = try TreeSnapshot(tmp.url).entries
        after.removeValue(forKey: "out.tar.zst")
        after.removeValue(forKey: "out.tar.zst.sha256")
        var expected = before.entries
        expected.removeValue(forKey: "b/Library.sqlite-shm")
        #expect(after == expected)
    }
}
