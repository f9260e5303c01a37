import Foundation
import Testing
import GRDB
import TestSupport
@testable import USMRepairCore

/// `status` on Core Data-shaped fixture stores and containers.
@Suite("status", .timed)
struct StatusTests {
    @Test("a single store: entities, inheritance, WAL-only rows, metadata")
    func singleStore() throws {
        let tmp = try TempDir()
        var options = FixtureStore.Options()
        options.walOnlyBooks = 3
        options.history = true
        let store = tmp.path("Library.sqlite")
        try FixtureStore.write(to: store, options)
        let before = try TreeSnapshot(tmp.url)

        let result = USM.run(["status", "--store", store.path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = result.json
        let stores = try #require(json["stores"] as? [[String: Any]])
        let s = try #require(stores.first)
        #expect(s["role"] as? String == "store")
        #expect(s["health"] as? String == "ok")
        #expect(s["walPresent"] as? Bool == true)
        #expect(s["storeUUID"] as? String == options.storeUUID)
        #expect(s["ubiquityMetadata"] as? Bool == false)
        let entities = try #require(s["entities"] as? [[String: Any]])
        var rows: [String: Int] = [:]
        var parents: [String: String] = [:]
        for e in entities {
            rows[e["name"] as! String] = e["rows"] as? Int
            if let p = e["parent"] as? String { parents[e["name"] as! String] = p }
        }
        for (name, expected) in FixtureStore.expectedRows(options) {
            #expect(rows[name] == expected, "rows of \(name)")
        }
        #expect(parents == ["Book": "Item", "Magazine": "Item"])
        // History entities are counted too, so the rows add up to the store's objects.
        #expect(rows["CHANGE"] == options.books + options.magazines)
        #expect(rows.values.reduce(0, +) == s["objects"] as? Int)
        let tables = try #require(s["tables"] as? [String: Any])
        #expect(tables["join"] as? [String] == ["Z_1TAGS"])
        #expect(tables["history"] as? [String] == ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"])
        #expect(tables["ordered"] as? [String] == ["ZITEM.Z_FOK_SHELF"])
        let toOne = try #require(tables["toOne"] as? [[String: Any]])
        #expect(
            toOne.map { "\($0["table"]!).\($0["column"]!)->\($0["destinationTable"]!)" } == [
                "ZITEM.ZAUTHOR->ZAUTHOR", "ZITEM.ZSHELF->ZSHELF",
            ])
        let attributes = try #require(tables["attributes"] as? [String: [String]])
        #expect(attributes["ZITEM"] == ["ZISSUE", "ZCREATED", "ZTITLE", "ZCOVER"])
        #expect((tables["joinColumns"] as? [String: [String: Int]])?["Z_1TAGS"] == ["Z_1ITEMS": 1, "Z_6TAGS": 6])
        #expect(s["externalDataFiles"] as? Int == options.externalCovers)

        // Reading never writes: not a byte, not a new file.
        #expect(try TreeSnapshot(tmp.url) == before)
    }

    @Test("rows that exist only in the -wal are seen, and the -wal stays as it was")
    func walOnlyRows() throws {
        let tmp = try TempDir()
        var options = FixtureStore.Options()
        options.walOnlyBooks = 5
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store, options)
        let wal = try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal"))
        let shm = try Data(contentsOf: URL(fileURLWithPath: store.path + "-shm"))
        #expect(wal.count > 0)

        let report = try Inspection(options: LayoutOptions(store: store), depth: .status).run()
        let books = report.stores[0].entities.first { $0.name == "Book" }
        #expect(books?.rows == options.books + 5)
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal")) == wal)
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path + "-shm")) == shm)
    }

    @Test("an .xcappdata container: local and cloud stores, markers, preferences")
    func container() throws {
        let tmp = try TempDir()
        let root = tmp.path("Notes.xcappdata")
        var options = FixtureContainer.Options()
        options.corruptedUUID = options.activeUUID
        let paths = try FixtureContainer.write(to: root, options)
        let before = try TreeSnapshot(tmp.url)

        let result = USM.run(["status", "--container", root.path, "--json"])
        #expect(
            result.status == 1, "the active store marked corrupt is an error a script must notice: \(result.stderr)")
        let json = result.json
        #expect(json["cloudEnabled"] as? Bool == true)
        let active = try #require(json["activeStore"] as? [String: Any])
        #expect(active["uuid"] as? String == options.activeUUID)
        #expect(active["cloudVersion"] as? Int == 1)
        let corruption = try #require(json["corruption"] as? [String: Any])
        #expect(corruption["uuid"] as? String == options.activeUUID)
        #expect(corruption["affectsActiveStore"] as? Bool == true)

        let stores = try #require(json["stores"] as? [[String: Any]])
        #expect(stores.map { $0["role"] as? String } == ["local", "cloud", "cloud"])
        let local = stores[0]
        #expect(local["path"] as? String == paths.localStore.path)
        #expect(local["uuid"] is NSNull)
        let cloud = try #require(stores.first { $0["uuid"] as? String == options.activeUUID })
        #expect(cloud["ubiquityMetadata"] as? Bool == true)
        #expect(cloud["active"] as? Bool == true)
        #expect(cloud["walPresent"] as? Bool == true)
        let advice = try #require(json["advice"] as? [String])
        #expect(advice.contains { $0.contains("marked corrupt") })
        let layout = try #require(json["layout"] as? [String: Any])
        #expect((layout["cloudContent"] as? [[String: Any]])?.count == 2)
        #expect(try TreeSnapshot(tmp.url) == before)

        // The text form says the same in a few lines.
        let text = USM.run(["status", "--container", root.path])
        #expect(text.status == 1)
        #expect(text.stdout.contains("active store marked corrupt"), "the summary line says it")
        #expect(text.stdout.contains("ACTIVE STORE MARKED CORRUPT"))
        #expect(text.stdout.contains("iCloud:       on"))
        #expect(!text.stdout.contains("\u{1B}["), "no colour when stdout is not a terminal")
    }

    @Test("explicit folders and XML preferences; a store with only cloud content has no copy here")
    func explicitFolders() throws {
        let tmp = try TempDir()
        var options = FixtureContainer.Options()
        options.xmlPreferences = true
        options.cloudEnabled = false
        options.activeStoreCopy = false
        let paths = try FixtureContainer.write(to: tmp.path("c"), options)
        let report = try Inspection(
            options: LayoutOptions(
                appDirectory: paths.appDir, cloudDirectory: paths.cloudDir, preferences: paths.prefs),
            depth: .status
        ).run()
        #expect(report.cloudEnabled == false)
        #expect(report.activeStore?.exists == false)
        #expect(report.activeStore?.content == true)
        #expect(!report.stores.contains { $0.uuid == options.activeUUID }, "no copy of it on this device")
        let active = try #require(report.layout.cloudStores.first { $0.uuid == options.activeUUID })
        #expect(active.copies.isEmpty && active.content && active.markers == ["StoreUUID+"])
        #expect(report.nextLaunch?.state == "E1", "iCloud is off")
        #expect(report.exitCode == .ok, "\(report.allProblems)")
    }

    @Test("cloud version 0: CloudStore.nosync in the ubiquity container and a StoreUUID marker")
    func cloudVersionZero() throws {
        let tmp = try TempDir()
        let cloudDir = tmp.path("ubiquity")
        let uuid = "11111111-2222-4333-8444-555555555555"
        let storeDir = cloudDir.appendingPathComponent("CloudStore.nosync")
        try FileManager.default.createDirectory(at: storeDir, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: cloudDir.appendingPathComponent("CloudLogs/\(uuid)/peer/UbiquityStore"),
            withIntermediateDirectories: true)
        try FixtureStore.write(to: storeDir.appendingPathComponent("\(uuid).sqlite"))
        try Data(uuid.utf8).write(to: cloudDir.appendingPathComponent("CloudLogs/StoreUUID"))

        let report = try Inspection(options: LayoutOptions(cloudDirectory: cloudDir), depth: .status).run()
        #expect(report.activeStore?.uuid == uuid)
        #expect(report.activeStore?.cloudVersion == 0)
        #expect(report.stores.count == 1)
        #expect(report.stores[0].cloudVersion == 0)
        #expect(report.stores[0].active == true)
        #expect(report.stores[0].health == .ok)
        #expect(report.cloudEnabled == nil)
    }

    @Test("--store-name selects another content name")
    func storeName() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("Journal.sqlite"))
        let report = try Inspection(options: LayoutOptions(appDirectory: tmp.url, storeName: "Journal"), depth: .status)
            .run()
        #expect(report.stores.first?.role == .local)
        #expect(report.stores.first?.health == .ok)
        let missing = try Inspection(options: LayoutOptions(appDirectory: tmp.url), depth: .status).run()
        #expect(missing.stores.first?.health == .missing)
        #expect(missing.advice.contains { $0.contains("No store was found") })
    }

    @Test("a store another connection holds in a write transaction: committed rows only, no wait")
    func lockedStore() throws {
        let tmp = try TempDir()
        var options = FixtureStore.Options()
        options.walOnlyBooks = 2
        let store = tmp.path("Busy.sqlite")
        try FixtureStore.write(to: store, options)
        var config = Configuration()
        config.allowsUnsafeTransactions = true
        let writer = try DatabaseQueue(path: store.path, configuration: config)
        try writer.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            try db.execute(sql: "INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (100, 4, 1, 'uncommitted')")
        }
        let r = USM.run(["status", "--store", store.path, "--json"])
        try writer.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        try writer.close()
        #expect(r.status == 0, "\(r.stderr)")
        let entities = ((r.json["stores"] as? [[String: Any]])?.first?["entities"] as? [[String: Any]]) ?? []
        #expect(entities.first { $0["name"] as? String == "Author" }?["rows"] as? Int == options.authors)
        #expect(entities.first { $0["name"] as? String == "Book" }?["rows"] as? Int == options.books + 2)
    }
}

/// The status report's JSON written in pieces is the same text as encoded whole.
@Suite("status JSON in pieces", .timed)
struct StatusJSONTests {
    @Test("writeJSON gives exactly json(), for stores with and without entities")
    func sameBytes() throws {
        let tmp = try TempDir()
        var options = FixtureContainer.Options()
        options.localStore = false
        let paths = try FixtureContainer.write(to: tmp.path("c"), options)
        let report = try Inspection(options: LayoutOptions(container: paths.root), depth: .check).run()
        #expect(report.stores.filter { !$0.entities.isEmpty }.count >= 2)
        #expect(report.stores.contains { $0.entities.isEmpty }, "a missing store has no entities")
        var pieces = ""
        try report.writeJSON { pieces += $0 }
        #expect(pieces == (try report.json()) + "\n")

        // More entities than one chunk.
        let store = tmp.path("Many.sqlite")
        try RawStore.write(to: store, "CREATE TABLE ZE1 (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER)") {
            db in
            for n in 1...2500 {
                try db.execute(sql: "INSERT INTO Z_PRIMARYKEY VALUES (?, ?, 0, 0)", arguments: [n, "E\(n)"])
            }
        }
        let many = try Inspection(options: LayoutOptions(store: store), depth: .status).run()
        var chunked = ""
        try many.writeJSON { chunked += $0 }
        #expect(chunked == (try many.json()) + "\n")
        let cli = USM.run(["status", "--store", store.path, "--json"])
        #expect((cli.json["stores"] as? [[String: Any]])?.first?["entities"] as? [Any] != nil)
        #expect(((cli.json["stores"] as? [[String: Any]])?.first?["entities"] as? [Any])?.count == 2500)
    }
}
