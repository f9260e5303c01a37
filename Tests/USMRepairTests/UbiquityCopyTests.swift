import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 32: what Core Data's ubiquity engine keeps in a copy (`Y_UBMETA`, `Y_UBRANGE`, `Y_UBKVS`,
/// the integer `ubiquitized` key, counters at a 1024-key block's end) belongs there, and a store
/// made for local use from a copy holds none of it, whatever strategy, recipe or operation made it.
@Suite("ubiquity copies", .timed)
struct UbiquityCopyTests {
    /// The cloud fixture store, shaped like the real copies.
    static func copy(_ tmp: TempDir, _ name: String = "S.sqlite") throws -> URL {
        var o = FixtureStore.Options()
        o.ubiquityMetadata = true
        let url = tmp.path(name)
        try FixtureStore.write(to: url, o)
        return url
    }

    /// The `Y_UB*` tables and the ubiquity metadata keys of a store, read from a private copy.
    static func ubiquity(_ store: URL) throws -> (tables: [String], keys: [String]) {
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let s = try #require(report.stores.first)
        return (s.tables?.ubiquity ?? [], s.metadata?.ubiquityKeys ?? [])
    }

    @Test("the fixtures' copies are shaped like the real ones, and check says nothing against their bookkeeping")
    func fixtureShape() throws {
        let tmp = try TempDir()
        let store = try Self.copy(tmp)
        let queue = try DatabaseQueue(path: store.path)
        try queue.read { db in
            for table in FixtureStore.Ubiquity.tables {
                #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0 > 0, "\(table) holds rows")
            }
            let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'Y_UBRANGE'")
            #expect(sql?.contains("PRIMARY_KEY") == true, "the real DDL, sic")
            #expect(try Int.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 4") == 1024)
            let plist = try #require(try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA"))
            let dict = try #require(
                try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any])
            #expect(dict["com.apple.coredata.ubiquity.ubiquitized"] as? Int == 1)
            // The integer 1, not a boolean (Foundation bridges both to NSNumber: read the encoding).
            let xml = try PropertyListSerialization.data(fromPropertyList: dict, format: .xml, options: 0)
            let text = String(decoding: xml, as: UTF8.self)
            #expect(
                text.contains("<key>com.apple.coredata.ubiquity.ubiquitized</key>\n\t<integer>1</integer>"), "\(text)")
        }
        try queue.close()
        let (_, errors, report) = try Migrate.check(store)
        #expect(errors.isEmpty, "\(errors)")
        #expect(report.tables?.ubiquity == ["Y_UBKVS", "Y_UBMETA", "Y_UBRANGE"])
        #expect(!report.problems.contains { $0.code == .ubiquityTablesInLocalStore || $0.code == .zmaxBehind })
    }

    @Test(
        "migrate-store from a copy: no Y_UB table and no ubiquity key, with every strategy",
        arguments: ["ios", "copy-entities"])
    func migrateStore(strategy: String) throws {
        let tmp = try TempDir()
        let source = try Self.copy(tmp)
        let report = try Migrate.run(source, tmp.path("D.sqlite"), strategy: strategy)
        let (tables, keys) = try Self.ubiquity(tmp.path("D.sqlite"))
        #expect(tables.isEmpty, "\(tables)")
        #expect(keys.isEmpty, "\(keys)")
        #expect(report.notes.contains { $0.contains("Y_UBMETA") }, "\(report.notes)")
        // Rows are all there; the counters stay at or above the copy's (never behind).
        #expect(try Migrate.check(tmp.path("D.sqlite")).rows == Migrate.check(source).rows)
    }

    @Test("the strip-ubiquity recipe, even with --keep-ubiquity-metadata, leaves no Y_UB table")
    func recipe() throws {
        let tmp = try TempDir()
        let source = try Self.copy(tmp)
        _ = try Migrate.run(
            source, tmp.path("D.sqlite"), strategy: "manual",
            options: RecipeTests.options("strip-ubiquity", keep: true))
        let (tables, keys) = try Self.ubiquity(tmp.path("D.sqlite"))
        #expect(tables.isEmpty && keys.isEmpty, "\(tables) \(keys)")
    }

    @Test("--keep-ubiquity-metadata alone keeps the copy's tables with its keys: a copy stays a copy")
    func keep() throws {
        let tmp = try TempDir()
        let source = try Self.copy(tmp)
        _ = try Migrate.run(
            source, tmp.path("D.sqlite"), strategy: "ios", options: MigrationOptions(keepUbiquityMetadata: true))
        let (tables, keys) = try Self.ubiquity(tmp.path("D.sqlite"))
        #expect(tables.count == 3 && !keys.isEmpty)
    }

    @Test("salvage of a copy writes a store without them")
    func salvage() throws {
        let tmp = try TempDir()
        let source = try Self.copy(tmp)
        let r = USM.run(["salvage", source.path, tmp.path("out.sqlite").path, "--yes", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let (tables, keys) = try Self.ubiquity(tmp.path("out.sqlite"))
        #expect(tables.isEmpty && keys.isEmpty, "\(tables) \(keys)")
    }

    @Test(
        "the operations that make the local store from the copy leave none of it there",
        arguments: [
            ["migrate", "cloud-to-local", "--replace"],
            ["migrate", "cloud-to-local", "--replace", "--strategy", "copy-entities"],
            ["rebuild", "--from", "cloud", "--replace"],
        ])
    func operations(command: [String]) throws {
        let f = try OperationTests.Fixture()
        _ = try OperationTests.apply(f, command)
        let (tables, keys) = try Self.ubiquity(f.paths.localStore)
        #expect(tables.isEmpty && keys.isEmpty, "\(command): \(tables) \(keys)")
        let local = try #require(try f.status().stores.first { $0.role == .local })
        #expect(!local.problems.contains { $0.code == .ubiquityTablesInLocalStore })
    }

    @Test("status and check name Y_UB tables in the local store, with advice; nothing against them in the copy")
    func problem() throws {
        let f = try OperationTests.Fixture()
        // A local store made by a tool that kept the copy's bookkeeping: the copy itself, placed.
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: f.paths.localStore.path + suffix)
        }
        try? FileManager.default.removeItem(
            at: f.paths.localStore.deletingLastPathComponent().appendingPathComponent(
                ".\(f.paths.localStore.deletingPathExtension().lastPathComponent)_SUPPORT"))
        var o = FixtureStore.Options()
        o.ubiquityMetadata = true
        try FixtureStore.write(to: f.paths.localStore, o)
        let r = try f.run(["check", "--json"])
        let stores = try #require(r.json["stores"] as? [[String: Any]])
        let local = try #require(stores.first { $0["role"] as? String == "local" })
        let codes = ((local["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
        #expect(codes.contains("ubiquity-tables-in-local-store"), "\(codes)")
        for cloud in stores where cloud["role"] as? String == "cloud" {
            let codes = ((cloud["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(!codes.contains("ubiquity-tables-in-local-store"))
        }
        let text = try f.run(["status"]).stdout
        #expect(text.contains("ubiquity-tables-in-local-store") && text.contains("--recipe strip-ubiquity"), "\(text)")
    }
}
