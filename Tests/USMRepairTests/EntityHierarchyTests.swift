import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// `Z_PRIMARYKEY` at scale and with broken `Z_SUPER` chains. Reading the schema and every check is
/// linear in its rows: a 50,000-deep chain and 200,000 flat rows complete (the time limit is only a
/// guard against a hang; quadratic code took minutes here), and a cycle is a problem, not a loop.
@Suite("entity hierarchies", .timed)
struct EntityHierarchyTests {
    @Test("a 50,000-deep Z_SUPER chain", .timeLimit(.minutes(1)))
    func deepChain() throws {
        let tmp = try TempDir()
        let store = tmp.path("Deep.sqlite")
        let depth = 50_000
        try RawStore.write(
            to: store,
            """
            CREATE TABLE ZE1 (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZVALUE INTEGER, ZE1 INTEGER);
            CREATE INDEX ZE1_ZE1_INDEX ON ZE1 (ZE1);
            CREATE TABLE Z_1LINKS (Z_1LINKS INTEGER, Z_\(depth)LINKED INTEGER);
            """
        ) { db in
            let insert = try db.makeStatement(sql: "INSERT INTO Z_PRIMARYKEY VALUES (?, ?, ?, ?)")
            for n in 1...depth { try insert.execute(arguments: [n, "E\(n)", n - 1, n == 1 ? 4 : 0]) }
            // Rows of the root, of the middle and of the deepest entity, all in the root's table.
            try db.execute(
                sql:
                    "INSERT INTO ZE1 VALUES (1, 1, 1, 0, NULL), (2, 25000, 1, 0, 1), (3, \(depth), 1, 0, 2), (4, \(depth), 1, 0, 99)"
            )
            try db.execute(sql: "INSERT INTO Z_1LINKS VALUES (1, 3), (2, 77)")
        }
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = try #require(report.stores.first)
        #expect(s.health == .ok)
        #expect(s.entities.count == depth)
        let rows = Dictionary(uniqueKeysWithValues: s.entities.map { ($0.number, $0.rows) })
        #expect(rows[1] == 1)
        #expect(rows[25000] == 1)
        #expect(rows[depth] == 2)
        #expect(s.objects == 4)
        #expect(s.entities.allSatisfy { $0.table == "ZE1" }, "every entity of the chain lives in its root's table")
        #expect(s.entities.first { $0.number == depth }?.parent == "E\(depth - 1)")
        // The checks ran over the whole hierarchy: the to-one key (ZE1.ZE1, any entity of the chain)
        // pointing at Z_PK 99 and the join row pointing at Z_PK 77 are dangling, nothing else.
        #expect(
            s.problems.map(\.code).filter { $0 != .metadataPlistNull } == [.danglingToOne, .danglingJoinRow],
            "\(s.problems)")
        #expect(s.tables?.toOne.first?.destinationEntities.count == depth)
    }

    @Test("200,000 flat Z_PRIMARYKEY rows", .timeLimit(.minutes(1)))
    func flatRows() throws {
        let tmp = try TempDir()
        let store = tmp.path("Flat.sqlite")
        let count = 200_000
        try RawStore.write(
            to: store,
            """
            CREATE TABLE ZE1 (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            CREATE TABLE ZE2 (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            -- Numbers from 16000 are Core Data's own entities, whose tables take an A prefix.
            CREATE TABLE AE199999 (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZE1 INTEGER);
            CREATE INDEX AE199999_ZE1_INDEX ON AE199999 (ZE1);
            CREATE TABLE Z_1LINKS (Z_1LINKS INTEGER, Z_199999LINKED INTEGER);
            """
        ) { db in
            let insert = try db.makeStatement(sql: "INSERT INTO Z_PRIMARYKEY VALUES (?, ?, 0, ?)")
            for n in 1...count { try insert.execute(arguments: [n, "E\(n)", n == 1 || n == 199_999 ? 2 : 1]) }
            try db.execute(sql: "INSERT INTO ZE1 VALUES (1, 1, 1), (2, 1, 1), (3, 1234, 1)")
            try db.execute(sql: "INSERT INTO ZE2 VALUES (1, 2, 1)")
            try db.execute(sql: "INSERT INTO AE199999 VALUES (1, 199999, 1, 2), (2, 199999, 1, 7)")
            try db.execute(sql: "INSERT INTO Z_1LINKS VALUES (1, 1), (3, 1)")
        }

        // Every row read (the limit lifted) and every check run: linear, or this would not finish.
        var config = Configuration()
        config.readonly = true
        let queue = try DatabaseQueue(path: store.path, configuration: config)
        try queue.read { db in
            let schema = try CoreDataSchema.read(db, entityLimit: .max)
            #expect(schema.entities.count == count)
            #expect(schema.problems.isEmpty)
            let counts = try StoreChecks.entityCounts(db, schema: schema)
            #expect(counts.rows[1] == 2)
            #expect(counts.rows[199_999] == 2)
            let missing = try #require(counts.problems.first { $0.code == .entityTableMissing })
            #expect(
                missing.count == 15_999 - 2,
                "numbers from 16000 are Core Data's own entities, which need no table of their own")
            #expect(
                counts.problems.filter { $0.code == .entityTableMissing }.count == 1,
                "one problem however many entities")
            #expect(counts.problems.first { $0.code == .entityWrongTable }?.count == 1)
            #expect(
                try StoreChecks.primaryKeyProblems(db, schema: schema).map(\.subject) == ["ZE1"], "Z_MAX 2 but Z_PK 3")
            #expect(
                try StoreChecks.toOneProblems(db, schema: schema).map(\.count) == [1],
                "AE199999.ZE1 = 7 points at nothing")
            #expect(
                try StoreChecks.joinProblems(db, schema: schema).map(\.count) == [1],
                "Z_1LINKS row (3, 1): no ZE1 row 3 of E1")
            #expect(try StoreChecks.unlistedTableProblems(db, schema: schema).isEmpty)
        }
        try queue.close()

        // What status and check do: the first 65,536 rows, and a problem saying so.
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = try #require(report.stores.first)
        #expect(s.entities.count == EntityRows.rowLimit)
        let tooMany = try #require(s.problems.first { $0.code == .tooManyEntities })
        #expect(tooMany.count == count)
        #expect(s.entities.first { $0.number == 1 }?.rows == 2)
        #expect(s.entities.first { $0.number == 2 }?.rows == 1)
        #expect(
            s.problems.contains { $0.code == .entityTableUnlisted && $0.subject == "AE199999" },
            "the table of an entity past the limit is not hidden: \(s.problems.map(\.code))")
    }

    @Test("a Z_SUPER cycle is a problem, not a loop", .timeLimit(.minutes(1)))
    func cycle() throws {
        let tmp = try TempDir()
        let store = tmp.path("Cycle.sqlite")
        try RawStore.write(
            to: store,
            """
            CREATE TABLE ZA (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            CREATE TABLE ZB (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            CREATE TABLE ZROOT (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZLOOP INTEGER);
            CREATE INDEX ZROOT_ZLOOP_INDEX ON ZROOT (ZLOOP);
            CREATE TABLE Z_5LOOPS (Z_5ROOTS INTEGER, Z_2LOOPS INTEGER);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'A', 3, 1), (2, 'B', 1, 1), (3, 'C', 2, 0), (4, 'Self', 4, 0),
                (5, 'Root', 0, 1), (6, 'Below', 2, 0), (7, 'Orphan', 99, 0), (8, 'Loop', 0, 0);
            INSERT INTO ZA VALUES (1, 1, 1);
            INSERT INTO ZB VALUES (1, 2, 1), (2, 6, 1);
            INSERT INTO ZROOT VALUES (1, 5, 1, 1);
            INSERT INTO Z_5LOOPS VALUES (1, 1);
            """)
        for depth in [StoreInspector.Depth.status, .check] {
            let report = try Inspection(options: LayoutOptions(store: store), depth: depth).run()
            let s = try #require(report.stores.first)
            let cycles = s.problems.filter { $0.code == .entitySuperCycle }
            #expect(cycles.count == 1)
            #expect(cycles.first?.count == 4, "A, B, C and Self")
            #expect(cycles.first?.message.contains("A (1)") == true, "\(cycles)")
            #expect(cycles.first?.message.contains("Self (4)") == true)
            let unknown = try #require(s.problems.first { $0.code == .entitySuperUnknown })
            #expect(unknown.message.contains("Orphan (7)"))
            #expect(unknown.message.contains("99"))
            // Every entity is listed once; rows are counted.
            #expect(s.entities.map(\.number) == [1, 2, 3, 4, 5, 6, 7, 8])
            #expect(s.objects == 4)
        }
        let cli = USM.run(["check", "--store", store.path])
        #expect(cli.status == 1)
        #expect(cli.stdout.contains("entity-super-cycle"))
    }
}
