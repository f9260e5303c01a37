import Foundation
import GRDB
import GRDBSQLite
import Testing
import TestSupport
@testable import USMRepairCore

/// `IdentityKey` (`usm_idkey`): equal keys exactly when the values are equal as `IS` says.
@Suite("Identity key", .timed)
struct IdentityKeyTests {
    /// Values that look alike: numbers as integers and reals, text, BLOBs, NULL and empty values,
    /// strings holding what the encoding writes (tags, lengths, NUL bytes).
    static let values = [
        "NULL", "0", "0.0", "-0.0", "1", "1.0", "'1'", "x'01'", "x'31'", "1.5", "-1", "''", "x''",
        "'a'", "x'61'", "'ab'", "'a' || char(0)", "x'6100'", "char(0)", "x'00'", "x'0000000001'",
        "x'0100000000000000'", "9007199254740992", "9007199254740992.0", "9007199254740993",
        "9223372036854775807", "9.223372036854775807e18", "-9223372036854775808", "-9.223372036854775808e18",
        "1e300", "'NULL'",
    ]

    /// Fewer, for lists of four (every combination is tried).
    static let few = ["NULL", "1", "1.0", "'1'", "x'01'", "''", "x''", "'a'", "'ab'", "x'61'", "char(0)", "x'00'"]

    static func withKeys<T>(_ values: [String] = values, _ body: (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue()
        return try queue.inDatabase { db in
            try IdentityKey.register(db)
            let rows = values.map { "(\($0))" }.joined(separator: ", ")
            try db.execute(sql: "CREATE TEMP TABLE v AS SELECT column1 AS x FROM (VALUES \(rows))")
            return try body(db)
        }
    }

    @Test(
        "one value: keys are equal exactly when the values are (1 IS 1.0; 1, '1' and x'01' differ; NULL, '' and x'' differ)"
    )
    func oneValue() throws {
        try Self.withKeys { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM v") == Self.values.count)
            let wrong = try String.fetchAll(
                db,
                sql: """
                    SELECT quote(a.x) || ' / ' || quote(b.x) FROM v a, v b
                    WHERE (usm_idkey(a.x) = usm_idkey(b.x)) IS NOT (a.x IS b.x)
                    """)
            #expect(wrong == [])
            // The pairs SQLite itself calls equal across storage classes are there, and keyed alike.
            #expect(try Bool.fetchOne(db, sql: "SELECT usm_idkey(1) = usm_idkey(1.0)") == true)
            #expect(try Bool.fetchOne(db, sql: "SELECT usm_idkey(-0.0) = usm_idkey(0)") == true)
            #expect(
                try Bool.fetchOne(db, sql: "SELECT usm_idkey(9007199254740993) = usm_idkey(9007199254740992.0)")
                    == false)
            #expect(try String.fetchOne(db, sql: "SELECT typeof(usm_idkey(NULL))") == "blob")
        }
    }

    @Test("usm_idhash: values equal as IS says hash alike (1 and 1.0, 0 and -0.0), lists too; these differ otherwise")
    func idHash() throws {
        try Self.withKeys { db in
            try SchemaFacts.registerValueFunctions(db)
            // Equal under IS: equal hashes (what a merge's candidates rely on). Not equal: on these
            // values the 64-bit hashes differ as well.
            let wrong = try String.fetchAll(
                db,
                sql: """
                    SELECT quote(a.x) || ' / ' || quote(b.x) FROM v a, v b
                    WHERE (usm_idhash(a.x) = usm_idhash(b.x)) IS NOT (a.x IS b.x)
                    """)
            #expect(wrong == [])
            let pairs = try String.fetchAll(
                db,
                sql: """
                    SELECT quote(a.x) || ' ' || quote(b.x) FROM v a, v b, v c, v d
                    WHERE (usm_idhash(a.x, b.x) = usm_idhash(c.x, d.x)) IS NOT (a.x IS c.x AND b.x IS d.x)
                    LIMIT 5
                    """)
            #expect(pairs == [])
            let wide = (0..<250).map { "x\($0 % 7)" }
            let nested = IdentityKey.hashExpression(wide.map { _ in "1" })
            #expect(nested.components(separatedBy: "usm_idhash(").count > 2, "nested past 100 values")
            #expect(
                try Int64.fetchOne(db, sql: "SELECT \(nested)")
                    == Int64.fetchOne(db, sql: "SELECT \(IdentityKey.hashExpression(wide.map { _ in "1.0" }))"))
        }
    }

    @Test(
        "lists of values: keys are equal exactly when every value is (no separator can be forged), nested past 100 values"
    )
    func lists() throws {
        try Self.withKeys(Self.few) { db in
            let wrong = try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM v a, v b, v c, v d
                    WHERE (usm_idkey(a.x, b.x) = usm_idkey(c.x, d.x)) IS NOT (a.x IS c.x AND b.x IS d.x)
                    """)
            #expect(wrong == 0)
            // A key of one value never equals a key of two, whatever they hold.
            #expect(
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM v a, v b, v c WHERE usm_idkey(a.x) = usm_idkey(b.x, c.x)") == 0)
            // More values than one call takes: nested, still one key per list.
            let many = (0..<250).map { "\($0)" }
            var other = many
            other[170] = "'170'"
            let sql = "SELECT \(IdentityKey.expression(many)) = \(IdentityKey.expression(other))"
            #expect(sql.contains("usm_idkey(usm_idkey("))
            #expect(try Bool.fetchOne(db, sql: sql) == false)
            let same = "SELECT \(IdentityKey.expression(many)) = \(IdentityKey.expression(many.map { "\($0).0" }))"
            #expect(try Bool.fetchOne(db, sql: same) == true)
        }
    }

    @Test("DuplicateGroups on a table wider than one key call: copies found, a difference in the last column seen")
    func wideTable() throws {
        let tmp = try TempDir()
        let url = try IdentityTests.store(tmp)
        // 150 more attributes on the author table (Core Data names them Z<NAME>).
        let columns = (0..<150).map { "ZEXTRA\($0)" }
        try FixtureStore.mutate(url, columns.map { "ALTER TABLE ZAUTHOR ADD COLUMN \($0) VARCHAR;" }.joined())
        try FixtureStore.mutate(url, "UPDATE ZAUTHOR SET " + columns.map { "\($0) = 'v'" }.joined(separator: ", "))
        #expect(try IdentityTests.groups(url) == ["Author": 1, "Book": 1])
        try FixtureStore.mutate(url, "UPDATE ZAUTHOR SET ZEXTRA149 = 'w' WHERE Z_PK = 100")
        #expect(try IdentityTests.groups(url) == [:])
        try FixtureStore.mutate(url, "UPDATE ZAUTHOR SET ZEXTRA149 = x'77' WHERE Z_PK = 1")
        #expect(try IdentityTests.groups(url) == [:])
        try FixtureStore.mutate(url, "UPDATE ZAUTHOR SET ZEXTRA149 = 'w' WHERE Z_PK = 1")
        #expect(try IdentityTests.groups(url) == ["Author": 1, "Book": 1])
    }

    @Test(
        "DuplicateGroups reads a large value in pieces, never whole (a connection whose length limit is below it), and tells it from a small value holding its SHA-256"
    )
    func largeValues() throws {
        let tmp = try TempDir()
        let url = try IdentityTests.store(tmp)
        let cover = Data(repeating: 9, count: 3 << 20)
        let digest = LargeValueTests.sha256(cover)
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        func groups() throws -> [String: Int] {
            try queue.writeWithoutTransaction { db in
                // Any value of more than 2 MiB SQLite would hold whole is now an error (SQLITE_TOOBIG).
                let previous = sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, 2 << 20)
                defer { sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, previous) }
                let schema = try CoreDataSchema.readMain(db)
                let groups = try DuplicateGroups.find(db, schema: schema, keys: [:])
                defer { try? groups.drop(db) }
                return try groups.duplicates(db)
            }
        }
        try queue.write { db in
            try db.execute(sql: "UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK IN (3, 100)", arguments: [cover])
        }
        #expect(try groups() == ["Author": 1, "Book": 1])
        // The copy's cover is the digest of the original's: a different value.
        try queue.write { db in
            try db.execute(sql: "UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK = 100", arguments: [digest])
        }
        #expect(try groups() == ["Author": 1])
        var other = cover
        other[1 << 20] = 10
        try queue.write { db in
            try db.execute(sql: "UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK = 100", arguments: [other])
        }
        #expect(try groups() == ["Author": 1])
    }
}
