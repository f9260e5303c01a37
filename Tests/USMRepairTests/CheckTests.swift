import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `check`: every invariant, one broken at a time, found with its code and exit code 1.
@Suite("check", .timed)
struct CheckTests {
    /// Writes a fixture store, breaks it with `sql`, and returns check's report on it.
    func checkBroken(
        _ sql: String?, options: FixtureStore.Options = FixtureStore.Options(),
        after: ((URL) throws -> Void)? = nil
    ) throws -> (report: StatusReport, exit: Int32, codes: [String]) {
        let tmp = try TempDir()
        let store = tmp.path("Library.sqlite")
        try FixtureStore.write(to: store, options)
        if let sql { try FixtureStore.mutate(store, sql) }
        try after?(store)
        let before = try TreeSnapshot(tmp.url)
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let cli = USM.run(["check", "--store", store.path, "--json"])
        #expect(try TreeSnapshot(tmp.url) == before, "check must not write")
        return (report, cli.status, report.allProblems.map(\.code.rawValue))
    }

    @Test("a sound store passes every invariant")
    func clean() throws {
        let r = try checkBroken(nil)
        #expect(r.codes == [])
        #expect(r.exit == 0)
        #expect(r.report.stores[0].integrityCheck == "integrity_check")
        #expect(r.report.stores[0].integrity == "ok")
        #expect(r.report.stores[0].tables?.toOneKeys == 2, "ZAUTHOR and ZSHELF found from the index names")
    }

    @Test("Z_MAX behind the largest Z_PK of a hierarchy")
    func zmax() throws {
        let r = try checkBroken("UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_ENT IN (1, 2, 3)")
        #expect(r.codes == ["zmax-behind"])
        #expect(r.exit == 1)
    }

    @Test("a Z_ENT nobody knows, and one from another hierarchy")
    func unknownEntity() throws {
        let r = try checkBroken("UPDATE ZITEM SET Z_ENT = 77 WHERE Z_PK = 1; UPDATE ZITEM SET Z_ENT = 4 WHERE Z_PK = 2")
        // The join rows of those two items no longer point at an Item either.
        #expect(Set(r.codes) == ["entity-unknown", "entity-wrong-table", "dangling-join-row"])
        #expect(r.exit == 1)
    }

    @Test("a to-one key pointing at a missing row")
    func danglingToOne() throws {
        let r = try checkBroken("UPDATE ZITEM SET ZAUTHOR = 999 WHERE Z_PK = 1")
        #expect(r.codes == ["dangling-to-one"])
        #expect(r.report.allProblems.first?.subject == "ZITEM.ZAUTHOR")
        #expect(r.report.allProblems.first?.count == 1)
    }

    @Test("a to-one key pointing at a row of the wrong entity")
    func toOneWrongEntity() throws {
        // Row 1 of ZAUTHOR exists, but with a Z_ENT outside Author's hierarchy.
        let r = try checkBroken("UPDATE ZAUTHOR SET Z_ENT = 5 WHERE Z_PK = 1")
        #expect(r.codes.contains("dangling-to-one"))
    }

    @Test("join-table rows pointing at missing rows on either side")
    func danglingJoin() throws {
        let r = try checkBroken("INSERT INTO Z_1TAGS VALUES (500, 1); INSERT INTO Z_1TAGS VALUES (1, 60)")
        #expect(r.codes == ["dangling-join-row", "dangling-join-row"])
        #expect(Set(r.report.allProblems.compactMap(\.subject)) == ["Z_1TAGS.Z_1ITEMS", "Z_1TAGS.Z_6TAGS"])
    }

    @Test("external data: a reference without its file, and a file without a reference")
    func externalData() throws {
        let r = try checkBroken(nil) { store in
            let dir = store.deletingLastPathComponent().appendingPathComponent(".Library_SUPPORT/_EXTERNAL_DATA")
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
            try FileManager.default.removeItem(at: dir.appendingPathComponent(files[0]))
            try Data("nobody points here".utf8).write(to: dir.appendingPathComponent(UUID().uuidString))
        }
        #expect(r.codes == ["external-data-missing", "external-data-orphan"])
        #expect(r.exit == 1)
    }

    @Test("ubiquity metadata left in a local store")
    func ubiquityInLocal() throws {
        let tmp = try TempDir()
        var options = FixtureStore.Options()
        options.ubiquityMetadata = true
        try FixtureStore.write(to: tmp.path("UbiquityStore.sqlite"), options)
        let report = try Inspection(options: LayoutOptions(appDirectory: tmp.url), depth: .check).run()
        #expect(
            report.allProblems.filter { $0.severity != .info }.map(\.code.rawValue) == [
                "ubiquity-metadata-in-local-store", "ubiquity-tables-in-local-store",
            ])
        #expect(report.exitCode == .problemsFound)
        #expect(report.stores[0].ubiquityMetadata)
        // The same store as Core Data's copy of a cloud store is fine.
        let cloud = try TempDir()
        let uuid = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"
        let copy = cloud.path(
            "CloudStore/CoreDataUbiquitySupport/mobile~8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A/\(uuid)/7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E/store/\(uuid).sqlite"
        )
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FixtureStore.write(to: copy, options)
        let ok = try Inspection(options: LayoutOptions(appDirectory: cloud.url), depth: .check).run()
        #expect(ok.stores.map(\.location) == [.local, .coreDataCopy])
        #expect(ok.allProblems.filter { $0.severity != .info }.isEmpty, "\(ok.allProblems)")
        #expect(ok.exitCode == .ok)
    }

    @Test("a WAL store whose -wal is gone while its -shm remains")
    func walMissing() throws {
        var options = FixtureStore.Options()
        options.walOnlyBooks = 2
        let r = try checkBroken(nil, options: options) { store in
            try FileManager.default.removeItem(atPath: store.path + "-wal")
        }
        #expect(r.codes == ["wal-missing"])
        #expect(r.exit == 1)
    }

    @Test("a lone main file whose header says WAL: information, not a failure")
    func loneWALHeader() throws {
        var options = FixtureStore.Options()
        options.walOnlyBooks = 2
        let r = try checkBroken(nil, options: options) { store in
            try FileManager.default.removeItem(atPath: store.path + "-wal")
            try FileManager.default.removeItem(atPath: store.path + "-shm")
        }
        #expect(r.report.stores[0].walPresent == false)
        #expect(r.codes == ["wal-header-without-wal"])
        #expect(r.report.allProblems.first?.severity == .info)
        #expect(r.exit == 0, "SQLite leaves exactly this on every clean close")
        #expect(r.report.summary.errors == 0 && r.report.summary.warnings == 0)
        // The main file alone lacks the WAL-only rows: what the note is about.
        #expect(r.report.stores[0].entities.first { $0.name == "Book" }?.rows == FixtureStore.Options().books)
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store, options)
        try FileManager.default.removeItem(atPath: store.path + "-wal")
        try FileManager.default.removeItem(atPath: store.path + "-shm")
        let strict = USM.run(["check", "--store", store.path, "--strict"])
        #expect(strict.status == 0, "information never fails, not even with --strict")
        #expect(strict.stdout.contains("info    wal-header-without-wal"), "\(strict.stdout)")
    }

    @Test("errors fail check; warnings only with --strict")
    func strict() throws {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store)
        let dir = tmp.path(".S_SUPPORT/_EXTERNAL_DATA")
        try Data("nobody points here".utf8).write(to: dir.appendingPathComponent(UUID().uuidString))
        let plain = USM.run(["check", "--store", store.path, "--json"])
        #expect(plain.status == 0, "a warning alone does not fail check")
        #expect(plain.json["exitCode"] as? Int == 0)
        let strict = USM.run(["check", "--store", store.path, "--strict", "--json"])
        #expect(strict.status == 1)
        #expect(strict.json["exitStatus"] as? String == "problems-found")
        let accepted = USM.run(["check", "--store", store.path, "--strict", "--ignore", "external-data-orphan"])
        #expect(accepted.status == 0)
        #expect(USM.run(["status", "--store", store.path, "--strict"]).status == 64, "--strict is check's")
    }

    @Test("--ignore accepts a code: still reported, marked ignored, exit 0")
    func ignore() throws {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store)
        try FixtureStore.mutate(store, "UPDATE ZITEM SET ZAUTHOR = 999 WHERE Z_PK = 1")
        let plain = USM.run(["check", "--store", store.path, "--json"])
        #expect(plain.status == 1)
        let problem = ((plain.json["stores"] as? [[String: Any]])?.first?["problems"] as? [[String: Any]])?.first
        #expect(problem?["code"] as? String == "dangling-to-one")
        #expect(problem?["ignored"] as? Bool == false)
        let ignored = USM.run(["check", "--store", store.path, "--ignore", "dangling-to-one"])
        #expect(ignored.status == 0, "\(ignored.stdout)")
        #expect(ignored.stdout.contains("dangling-to-one [S.sqlite] (ignored)"), "\(ignored.stdout)")
        let json = USM.run(["check", "--store", store.path, "--ignore", "dangling-to-one", "--json"])
        let marked = ((json.json["stores"] as? [[String: Any]])?.first?["problems"] as? [[String: Any]])?.first
        #expect(marked?["ignored"] as? Bool == true)
        #expect(json.json["exitCode"] as? Int == 0)
        let unknown = USM.run(["check", "--store", store.path, "--ignore", "no-such-code"])
        #expect(unknown.status == 64)
    }

    @Test("leftover temporary stores in a layout")
    func leftovers() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("UbiquityStore.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("CloudStore"), withIntermediateDirectories: true)
        try FixtureStore.write(to: tmp.path("CloudStore/MigrationSource.sqlite"))
        let report = try Inspection(options: LayoutOptions(appDirectory: tmp.url), depth: .check).run()
        #expect(report.problems.filter { $0.severity != .info }.map(\.code.rawValue) == ["leftover-temp-store"])
        #expect(report.exitCode == .ok, "a warning fails only --strict")
        let strict = try Inspection(options: LayoutOptions(appDirectory: tmp.url), depth: .check, strict: true).run()
        #expect(strict.exitCode == .problemsFound)
        #expect(report.layout.leftovers.map(\.kind) == ["MigrationSource"])
        #expect(
            !report.stores.contains { $0.path.hasSuffix("MigrationSource.sqlite") }, "a temp store is not a cloud store"
        )
        let status = try Inspection(options: LayoutOptions(appDirectory: tmp.url), depth: .status).run()
        #expect(status.exitCode == .ok, "status reports it without failing")
    }

    @Test("a damaged page fails integrity_check")
    func integrity() throws {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        var options = FixtureStore.Options()
        options.books = 400
        try FixtureStore.write(to: store, options)
        // Overwrite the middle of the file (table and index pages) with garbage.
        let handle = try FileHandle(forUpdating: store)
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 2)
        var rng = SeededRandom(seed: 7)
        try handle.write(contentsOf: Data((0..<8192).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
        try handle.close()
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = report.stores[0]
        #expect(s.health == .damaged)
        #expect(report.exitCode == .problemsFound || report.exitCode == .badInput)
        #expect(s.problems.contains { $0.code.rawValue == "integrity" || $0.code.rawValue == "sqlite-error" })
    }

    @Test("metadata: NULL Z_PLIST is a warning, garbage is an error")
    func metadataPlist() throws {
        let null = try checkBroken("UPDATE Z_METADATA SET Z_PLIST = NULL")
        #expect(null.codes == ["metadata-plist-null"])
        #expect(null.report.stores[0].health == .ok)
        let garbage = try checkBroken("UPDATE Z_METADATA SET Z_PLIST = x'00112233445566778899'")
        #expect(garbage.codes == ["metadata-plist-malformed"])
        let rows = try checkBroken("INSERT INTO Z_METADATA VALUES (2, 'X', NULL)")
        #expect(rows.codes == ["metadata-rows"])
    }

    @Test("every code a check can emit is registered")
    func registry() throws {
        #expect(ProblemCode.all.count == ProblemCode.allCases.count, "no duplicate codes")
        let r = try checkBroken("UPDATE Z_PRIMARYKEY SET Z_MAX = 0; UPDATE ZITEM SET ZAUTHOR = 999 WHERE Z_PK = 1")
        for code in r.codes { #expect(ProblemCode.all.contains(code)) }
    }
}
