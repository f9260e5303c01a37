import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// The comparison counts objects as multisets (issue 33 made its hash tables cheaper; the counts
/// must not move): equal objects repeated within one side count once per copy.
@Suite("planning: the comparison counts equal objects with their multiplicity", .timed)
struct StoreComparisonMultisetTests {
    /// Adds `copies` copies of the first Book of `store` (new `Z_PK`s, same values).
    static func duplicateFirstBook(_ store: URL, copies: Int) throws {
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        try queue.write { db in
            for _ in 0..<copies {
                try db.execute(
                    sql: """
                        CREATE TEMP TABLE copy AS SELECT * FROM ZITEM WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM WHERE Z_ENT = 2);
                        UPDATE temp.copy SET Z_PK = (SELECT MAX(Z_PK) + 1 FROM main.ZITEM);
                        INSERT INTO main.ZITEM SELECT * FROM temp.copy;
                        DROP TABLE temp.copy;
                        """)
            }
        }
    }

    @Test("three copies in A against two in B: one lost, two present, totals with every copy")
    func duplicatesCountWithMultiplicity() throws {
        let tmp = try TempDir()
        let a = tmp.path("a/Local.sqlite")
        let b = tmp.path("b/Local.sqlite")
        try FixtureStore.write(to: a, FixtureStore.Options())
        try FixtureStore.write(to: b, FixtureStore.Options())
        let base = try StoreComparison.compare(StoreFileSet(main: a), StoreFileSet(main: b), matching: false)
        #expect(base.lostCount == 0)
        #expect(base.duplicateCount == base.totalB)
        try Self.duplicateFirstBook(a, copies: 2)
        try Self.duplicateFirstBook(b, copies: 1)
        let c = try StoreComparison.compare(StoreFileSet(main: a), StoreFileSet(main: b), matching: false)
        let books = try #require(base.objectsA["Book"])
        #expect(c.objectsA["Book"] == books + 2)
        #expect(c.objectsB["Book"] == books + 1)
        // A holds the book three times, B twice: one of A's copies is missing from B, and both of
        // B's copies are already in A.
        #expect(c.missingFromB == ["Book": 1])
        #expect(c.presentInA["Book"] == (base.presentInA["Book"] ?? 0) + 1)
        #expect(c.duplicateCount == c.totalB)
        // The other way round: nothing of B is missing from A, and only two of A's three copies
        // are in B.
        let reverse = try StoreComparison.compare(StoreFileSet(main: b), StoreFileSet(main: a), matching: false)
        #expect(reverse.lostCount == 0)
        #expect(reverse.presentInA["Book"] == books + 1)
        #expect(reverse.duplicateCount == reverse.totalB - 1)
    }

    @Test("the entities are hashed on two lanes of about equal work; one entity to hash, one lane")
    func lanes() throws {
        let entity = CoreDataSchema.Entity(number: 1, name: "E", superNumber: 0, max: 0, table: "ZE", rootNumber: 1)
        func pair(_ name: String, _ na: Int, _ nb: Int, b: Bool = true) -> StoreComparison.Pair {
            StoreComparison.Pair(name: name, a: entity, b: b ? entity : nil, columns: [], na: na, nb: nb)
        }
        let split = StoreComparison.lanes([
            pair("Item", 268_000, 90_000), pair("Note", 268_000, 90_000), pair("Tag", 30_000, 10_000),
            pair("Folder", 3_000, 1_000), pair("Gone", 0, 5), pair("OnlyA", 50, 0, b: false),
        ])
        #expect(split.here.map(\.name) == ["Note", "Tag"])
        #expect(split.there.map(\.name) == ["Item", "Folder"])
        let one = StoreComparison.lanes([pair("Item", 10, 10), pair("Gone", 0, 3)])
        #expect(one.here.map(\.name) == ["Item"] && one.there.isEmpty)
    }
}
