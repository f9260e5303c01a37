import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Names found in a store go into SQL as identifiers quoted the SQL way (embedded `"` doubled), and
/// a table of the wrong shape is reported without stopping the other checks.
@Suite("identifiers and table shapes", .timed)
struct IdentifierQuotingTests {
    @Test("the quoting helper doubles embedded quotes")
    func helper() {
        #expect("ZITEM".sqlIdentifier == "\"ZITEM\"")
        #expect("Z\"Q".sqlIdentifier == "\"Z\"\"Q\"")
        #expect("\"\"".sqlIdentifier == "\"\"\"\"\"\"")
        #expect("a b;--".sqlIdentifier == "\"a b;--\"")
    }

    @Test("no SQL in the core quotes a name GRDB's way (which does not double quotes)")
    func oneHelper() throws {
        let core = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/USMRepairCore")
        let files =
            FileManager.default.enumerator(atPath: core.path)?.compactMap { $0 as? String }.filter {
                $0.hasSuffix(".swift")
            } ?? []
        #expect(files.count > 10)
        for file in files {
            let text = try String(contentsOf: core.appendingPathComponent(file), encoding: .utf8)
            #expect(
                !text.contains(".quotedDatabaseIdentifier"),
                "\(file) quotes identifiers without doubling embedded quotes")
        }
    }

    /// The fixture store plus an entity, a join table, a trigger and columns whose names hold a `"`.
    static let quotedSQL = """
        CREATE TABLE "ZQUO""TE" (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, "ZTI""TLE" VARCHAR, "ZDA""TA" BLOB, ZAUTHOR INTEGER);
        CREATE INDEX "ZQUO""TE_ZAUTHOR_INDEX" ON "ZQUO""TE" (ZAUTHOR);
        CREATE TABLE "Z_7TA""GS" ("Z_7QUO""TES" INTEGER, "Z_6TA""GS" INTEGER);
        CREATE TRIGGER "tr""g" AFTER INSERT ON "ZQUO""TE" BEGIN SELECT 1; END;
        INSERT INTO Z_PRIMARYKEY VALUES (7, 'Quo"te', 0, 1);
        INSERT INTO "ZQUO""TE" VALUES (1, 7, 1, 'a', CAST(x'02' || '11111111-2222-4333-8444-555555555555' AS BLOB), 1),
            (2, 7, 1, 'b', NULL, 999);
        INSERT INTO "Z_7TA""GS" VALUES (1, 1), (2, 77);
        """

    @Test("a table, columns and a trigger named with a double quote are read and checked")
    func quotedNames() throws {
        let tmp = try TempDir()
        let store = tmp.path("in/S.sqlite")
        try FixtureStore.write(to: store)
        try FixtureStore.mutate(store, Self.quotedSQL)
        let before = try TreeSnapshot(tmp.path("in"))
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = try #require(report.stores.first)
        #expect(s.health == .ok, "\(s.problems)")
        #expect(s.entities.first { $0.name == "Quo\"te" }?.rows == 2)
        #expect(s.entities.first { $0.name == "Quo\"te" }?.table == "ZQUO\"TE")
        let subjects = Set(s.problems.map { "\($0.code.rawValue) \($0.subject ?? "")" })
        #expect(
            subjects == [
                "dangling-to-one ZQUO\"TE.ZAUTHOR", "dangling-join-row Z_7TA\"GS.Z_6TA\"GS",
                "external-data-missing ZQUO\"TE.ZDA\"TA",
                "zmax-behind ZQUO\"TE",
            ], "\(s.problems)")

        // archive --redact and --metadata-only rewrite the store through the same names.
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        for mode in ["--redact", "--metadata-only"] {
            let bundle = tmp.path("out/b\(mode).tar.zst")
            let a = USM.run(["archive", "--store", store.path, mode, "-o", bundle.path, "--json"])
            #expect(a.status == 0, "\(mode): \(a.stdout.suffix(800)) \(a.stderr.suffix(500))")
            let target = tmp.path("restored\(mode)")
            #expect(USM.run(["restore", bundle.path, "--to", target.path, "-q"]).status == 0)
            let copy = target.appendingPathComponent("store/S.sqlite")
            #expect(
                FileManager.default.fileExists(atPath: copy.path), "\(mode): the store is in the bundle, not left out")
            let restored = try Inspection(options: LayoutOptions(store: copy), depth: .status).run().stores[0]
            #expect(restored.entities.first { $0.name == "Quo\"te" }?.rows == (mode == "--redact" ? 2 : 0))
        }
        #expect(try TreeSnapshot(tmp.path("in")) == before)
    }

    @Test("an entity table without Z_ENT: entity-table-shape, and every other check still runs")
    func tableWithoutZENT() throws {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store)
        // ZSHELF is the destination of ZITEM.ZSHELF; a dangling author key is planted as well.
        try FixtureStore.mutate(
            store, "ALTER TABLE ZSHELF DROP COLUMN Z_ENT; UPDATE ZITEM SET ZAUTHOR = 999 WHERE Z_PK = 1")
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = try #require(report.stores.first)
        #expect(s.health == .ok)
        #expect(s.readFailure == nil)
        #expect(Set(s.problems.map(\.code)) == [.entityTableShape, .danglingToOne], "\(s.problems)")
        #expect(s.problems.first { $0.code == .entityTableShape }?.subject == "ZSHELF")
        #expect(s.entities.first { $0.name == "Book" }?.rows == FixtureStore.Options().books)
        let cli = USM.run(["check", "--store", store.path])
        #expect(cli.status == 1)
        #expect(cli.stdout.contains("entity-table-shape"))
    }
}
