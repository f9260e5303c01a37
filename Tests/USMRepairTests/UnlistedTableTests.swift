import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Tables shaped like Core Data entity tables that no `Z_PRIMARYKEY` row accounts for: their rows
/// would be missing from every count, so they are reported with their row count.
@Suite("entity tables Z_PRIMARYKEY does not list", .timed)
struct UnlistedTableTests {
    func report(_ sql: String, depth: StoreInspector.Depth = .status) throws -> StoreReport {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        var options = FixtureStore.Options()
        options.history = true
        try FixtureStore.write(to: store, options)
        try FixtureStore.mutate(store, sql)
        return try #require(try Inspection(options: LayoutOptions(store: store), depth: depth).run().stores.first)
    }

    @Test("an empty Z_PRIMARYKEY hides every table's rows: each is reported with its rows")
    func empty() throws {
        let o = FixtureStore.Options()
        for depth in [StoreInspector.Depth.status, .check] {
            let s = try report("DELETE FROM Z_PRIMARYKEY", depth: depth)
            #expect(s.objects == 0)
            let unlisted = s.problems.filter { $0.code == .entityTableUnlisted }
            let counts = Dictionary(uniqueKeysWithValues: unlisted.map { ($0.subject ?? "", $0.count ?? -1) })
            #expect(
                counts == [
                    "ZITEM": o.books + o.magazines, "ZAUTHOR": o.authors, "ZSHELF": o.shelves, "ZTAG": o.tags,
                    "ACHANGE": o.books + o.magazines, "ATRANSACTION": 1, "ATRANSACTIONSTRING": 2,
                ], "\(s.problems)")
            #expect(unlisted.allSatisfy { $0.severity == .error })
        }
    }

    @Test("a hierarchy's rows lost from Z_PRIMARYKEY")
    func lostHierarchy() throws {
        let o = FixtureStore.Options()
        let s = try report("DELETE FROM Z_PRIMARYKEY WHERE Z_ENT IN (1, 2, 3)")
        let unlisted = s.problems.filter { $0.code == .entityTableUnlisted }
        #expect(unlisted.map(\.subject) == ["ZITEM"])
        #expect(unlisted.first?.count == o.books + o.magazines)
        #expect(unlisted.first?.message.contains("\(o.books + o.magazines) rows") == true)
    }

    @Test("tables that only look alike are left alone: join tables, bookkeeping, other prefixes")
    func notEntityTables() throws {
        let s = try report(
            """
            CREATE TABLE NOTES (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER);
            INSERT INTO NOTES VALUES (1, 1, 1);
            CREATE TABLE ZCACHE (Z_PK INTEGER PRIMARY KEY, ZVALUE BLOB);
            INSERT INTO ZCACHE VALUES (1, x'00');
            """)
        #expect(!s.problems.contains { $0.code == .entityTableUnlisted }, "\(s.problems)")
    }
}
