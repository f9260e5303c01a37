import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// The real Core Data stores of ../shared/corpus/real (skipped with a note where the corpus is absent).
@Suite(
    "real corpus", .timed, .enabled(if: Corpus.directory != nil, "../shared/corpus/real is not beside this checkout"))
struct CorpusTests {
    /// What SQLite itself sees in a copy of the store (WAL applied): rows per Z_ENT over every table
    /// that has Z_PK and Z_ENT columns, found from the columns rather than from Core Data's naming rules.
    static func sqlite3Counts(_ store: URL) throws -> [Int: Int] {
        let tmp = try TempDir()
        let copy = try Corpus.copy(store, into: tmp.url)
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        return try queue.read { db in
            let tables = try String.fetchAll(
                db,
                sql: """
                    SELECT m.name FROM sqlite_master m WHERE m.type = 'table'
                      AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'Z_ENT')
                      AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'Z_PK')
                    """)
            var counts: [Int: Int] = [:]
            for table in tables {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT Z_ENT, COUNT(*) FROM \(quoted) WHERE Z_ENT IN (SELECT Z_ENT FROM Z_PRIMARYKEY) GROUP BY Z_ENT
                        """)
                {
                    counts[row[0], default: 0] += row[1] as Int
                }
            }
            return counts
        }
    }

    @Test("status and check read every corpus store, and count what sqlite3 counts", arguments: Corpus.stores())
    func counts(store: URL) throws {
        let folder = store.deletingLastPathComponent()
        let before = try TreeSnapshot(folder)
        let expected = try Self.sqlite3Counts(store)
        for depth in [StoreInspector.Depth.status, .check] {
            let report = try Inspection(options: LayoutOptions(store: store), depth: depth).run()
            let s = try #require(report.stores.first)
            #expect(s.health == .ok, "\(store.lastPathComponent): \(s.problems)")
            #expect(s.integrity == "ok")
            var ours: [Int: Int] = [:]
            for e in s.entities where e.rows > 0 { ours[e.number] = e.rows }
            #expect(ours == expected.filter { $0.value > 0 }, "\(store.lastPathComponent)")
            #expect(s.objects == expected.values.reduce(0, +))
            // No real store breaks an invariant beyond the notes about its sidecars and metadata.
            let allowed: Set<String> = ["wal-header-without-wal", "metadata-plist-null", "duplicate-objects"]
            #expect(
                s.problems.filter { !allowed.contains($0.code.rawValue) }.isEmpty,
                "\(store.lastPathComponent): \(s.problems)")
        }
        #expect(try TreeSnapshot(folder) == before)
    }

    @Test("a writable copy stays byte-identical, -wal and -shm included", arguments: Corpus.stores())
    func readOnly(store: URL) throws {
        let tmp = try TempDir()
        _ = try Corpus.copy(store, into: tmp.url)
        let before = try TreeSnapshot(tmp.url)
        let r = USM.run(["check", "--store", tmp.url.appendingPathComponent(store.lastPathComponent).path, "--json"])
        #expect(r.status == 0 || r.status == 1)
        #expect(try TreeSnapshot(tmp.url) == before)
    }

    @Test("relationships come from the store's model cache; a broken key is found")
    func modelCacheRelationships() throws {
        let source = try #require(Corpus.stores().first { $0.lastPathComponent == "SampleModel_V1.sqlite" })
        let tmp = try TempDir()
        let copy = try Corpus.copy(source, into: tmp.url)
        try FixtureStore.mutate(
            copy, "UPDATE ZCAR SET ZOWNER = 9999 WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZCAR WHERE ZOWNER IS NOT NULL)")
        let report = try Inspection(options: LayoutOptions(store: copy), depth: .check).run()
        let s = try #require(report.stores.first)
        #expect(s.tables?.relationshipSource == "model-cache")
        #expect(s.problems.map(\.code.rawValue).contains("dangling-to-one"))
        #expect(s.problems.first { $0.code.rawValue == "dangling-to-one" }?.subject == "ZCAR.ZOWNER")
        #expect(report.exitCode == .problemsFound)
    }

    @Test("the store with a NULL Z_PLIST")
    func nullPlist() throws {
        let store = try #require(Corpus.stores().first { $0.lastPathComponent == "NotesV7.storedata" })
        let report = try Inspection(options: LayoutOptions(store: store), depth: .status).run()
        #expect(report.stores[0].metadata?.plist == "null")
        #expect(report.stores[0].storeUUID == "D25E1FF7-34FB-48F8-ADB6-B1C7A89F28C0")
        #expect(report.exitCode == .ok)
    }

    @Test(
        "bundles of real stores: byte-identical round trip, redacted copies that still pass check, and a redacted bundle no larger than the full one",
        arguments: Corpus.stores())
    func bundles(source: URL) throws {
        let tmp = try TempDir()
        // A copy: a corpus store is never opened in place.
        let folder = tmp.path("source")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let store = try Corpus.copy(source, into: folder)
        let before = try TreeSnapshot(folder)
        let full = tmp.path("full.tar.zst")
        #expect(USM.run(["archive", "--store", store.path, "-o", full.path, "-q"]).status == 0)
        #expect(USM.run(["restore", full.path, "--to", tmp.path("full").path, "-q"]).status == 0)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store.path + suffix) {
            let restored = tmp.path("full/store/\(store.lastPathComponent)\(suffix)")
            #expect(
                try Data(contentsOf: restored) == Data(contentsOf: URL(fileURLWithPath: store.path + suffix)),
                "\(suffix)")
        }
        let redacted = tmp.path("redacted.tar.zst")
        #expect(USM.run(["archive", "--store", store.path, "--redact", "-o", redacted.path, "-q"]).status == 0)
        #expect(USM.run(["restore", redacted.path, "--to", tmp.path("redacted").path, "-q"]).status == 0)
        let report = try Inspection(
            options: LayoutOptions(store: tmp.path("redacted/store/\(store.lastPathComponent)")), depth: .check
        ).run()
        let original = try CorpusFixtures.check(source).report  // the copy's rows (read once for the corpus suites)
        #expect(
            report.stores[0].problems.filter {
                !["metadata-plist-null", "duplicate-objects"].contains($0.code.rawValue)
            }.isEmpty,
            "\(report.stores[0].problems)")
        #expect(report.stores[0].objects == original.objects, "rows kept")
        // issue 31: removing the values never makes the bundle larger, on every corpus store.
        let fullBytes = try #require(FileStatus.lookup(full.path)?.size)
        let redactedBytes = try #require(FileStatus.lookup(redacted.path)?.size)
        #expect(redactedBytes <= fullBytes, "\(store.lastPathComponent): redacted \(redactedBytes) > full \(fullBytes)")
        #expect(try TreeSnapshot(folder) == before)
    }
}
