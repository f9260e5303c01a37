import CDigest
import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 28, finding 6: a value of hundreds of megabytes is read in pieces, never held whole, by
/// every check a migration runs; what it is compared by is still the whole value.
@Suite("memory: large values are hashed in pieces, compared as whole values", .timed)
struct LargeValueTests {
    static func sha256(_ data: Data) -> Data {
        var out = [UInt8](repeating: 0, count: 32)
        data.withUnsafeBytes { usm_sha256($0.baseAddress, data.count, &out) }
        return Data(out)
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test("usm_sha256 is SHA-256 (FIPS 180-4 vectors)")
    func sha256Vectors() {
        #expect(
            Self.hex(Self.sha256(Data("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Self.hex(Self.sha256(Data()))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Self.hex(Self.sha256(Data(repeating: UInt8(ascii: "a"), count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("usm_valueid of a 3 MiB value read in pieces equals the SHA-256 of the value read whole, BLOB or TEXT")
    func valueIdentityEqualsWholeHash() throws {
        let tmp = try TempDir()
        let queue = try DatabaseQueue(path: tmp.path("v.sqlite").path)
        var bytes = [UInt8](repeating: 0, count: 3 << 20)
        var state: UInt32 = 12345
        for i in bytes.indices {
            state = state &* 1_103_515_245 &+ 12345
            bytes[i] = UInt8(truncatingIfNeeded: state >> 16)
        }
        let blob = Data(bytes)
        let text = String(repeating: "a large title ", count: 300_000)
        try queue.write { db in
            try SchemaFacts.registerValueFunctions(db)
            try db.execute(sql: "CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, ZTITLE VARCHAR)")
            try db.execute(sql: "INSERT INTO ZITEM VALUES (1, ?), (2, ?)", arguments: [blob, text])
            let id = SchemaFacts.identityValue(database: "main", table: "ZITEM", column: "ZTITLE")
            let pieces = try Data.fetchOne(db, sql: "SELECT usm_valueid('main', 'ZITEM', 'ZTITLE', 1)")
            #expect(pieces == Self.sha256(blob))
            #expect(try Data.fetchOne(db, sql: "SELECT \(id.value) FROM ZITEM WHERE Z_PK = 1") == Self.sha256(blob))
            #expect(try Bool.fetchOne(db, sql: "SELECT \(id.large) FROM ZITEM WHERE Z_PK = 1") == true)
            let textID = try Data.fetchOne(db, sql: "SELECT usm_valueid('main', 'ZITEM', 'ZTITLE', 2)")
            #expect(textID == Self.sha256(Data(text.utf8)))
            // A small value is its own identity (the flag is 1 or NULL).
            #expect(try Bool.fetchOne(db, sql: "SELECT \(id.large) FROM (SELECT 1 AS Z_PK, x'00' AS ZTITLE)") == nil)
        }
        try queue.close()
    }

    @Test("check: two books with equal 3 MiB covers are duplicates; one byte changed, they are not")
    func largeValuesInIdentity() throws {
        let tmp = try TempDir()
        let url = try IdentityTests.store(tmp)
        var cover = Data(repeating: 9, count: 3 << 20)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: "UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK IN (3, 100)", arguments: [cover])
        }
        #expect(try IdentityTests.duplicates(url) == ["Author": 1, "Book": 1])
        cover[1 << 20] = 10
        try queue.write { db in
            try db.execute(sql: "UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK = 100", arguments: [cover])
        }
        try queue.close()
        #expect(try IdentityTests.duplicates(url) == ["Author": 1])
    }

    @Test("copy-entities carries a 20 MB value in a string column (a BLOB) whole; verified, byte for byte")
    func copyEntitiesLargeValue() throws {
        let tmp = try TempDir()
        let source = tmp.path("src/A.sqlite")
        var options = FixtureStore.Options()
        options.externalCovers = 0
        try FixtureStore.write(to: source, options)
        var title = Data(repeating: 0x41, count: 20_000_000)
        title[123_456] = 0x42
        let queue = try DatabaseQueue(path: source.path)
        try queue.write { db in
            try db.execute(
                sql: "UPDATE ZITEM SET ZTITLE = ? WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM)", arguments: [title])
        }
        try queue.close()
        for strategy in ["copy-entities", "ios"] {
            let out = tmp.path("\(strategy)/B.sqlite")
            try FileManager.default.createDirectory(at: tmp.path(strategy), withIntermediateDirectories: true)
            let r = USM.run(["migrate-store", source.path, out.path, "--strategy", strategy, "--json"])
            #expect(r.status == 0, "\(strategy): \(r.stderr)")
            let result = try DatabaseQueue(path: out.path)
            let copied = try result.read { db in
                try Data.fetchOne(db, sql: "SELECT ZTITLE FROM ZITEM WHERE typeof(ZTITLE) = 'blob'")
            }
            try result.close()
            #expect(copied == title, "\(strategy)")
        }
    }
}

/// Issue 28, finding 6: salvage reads a store's schema from its pages; a schema row longer than a
/// definition may be is refused before it is assembled, and the schema text kept is bounded.
@Suite("memory: salvage bounds the schema text it reads", .timed)
struct SalvageSchemaMemoryTests {
    static func store(_ tmp: TempDir, definitions: Int, bytes: Int) throws -> URL {
        let url = tmp.path("src/S.sqlite")
        try FixtureStore.write(to: url, HostileSchemaTests.options())
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            for i in 0..<definitions {
                try db.execute(
                    sql:
                        "CREATE TABLE ZNOTE\(i) (Z_PK INTEGER PRIMARY KEY, ZTEXT VARCHAR DEFAULT '\(String(repeating: "x", count: bytes))')"
                )
            }
        }
        try queue.close()
        return url
    }

    @Test("a 3 MB schema row: salvage and --dry-run refuse it unread (hostile-schema, exit 2), nothing written")
    func oneLargeRow() throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, definitions: 1, bytes: 3_000_000)
        let out = try HostileSchemaTests.folder(tmp, "out/o.sqlite")
        for extra in [["--dry-run"], []] {
            let r = USM.run(["salvage", source.path, out.path, "--json"] + extra)
            HostileSchemaTests.expectHostile(r, "salvage \(extra)")
            #expect(r.stderr.contains("schema rows are over"), "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
        // The walk itself: the record is not assembled, only counted.
        let store = try DamagedStore(files: StoreFileSet(main: source))
        store.maxPayload = SchemaDefinition.maxDefinitionBytes
        let collector = SchemaCollector(encoding: store.header.encoding)
        var tables = [SalvageTable.schema]
        var rows = [SalvageReport.TableRows(name: "sqlite_schema")]
        store.walk(0, tables: &tables, rows: &rows, sink: collector)
        #expect(store.oversized == 1)
        #expect(store.payload.count < SchemaDefinition.maxDefinitionBytes)
        #expect(!collector.ordered.contains { $0.name == "ZNOTE0" })
    }

    @Test("20 schema rows of 1 MB each (20 MB together): refused once 16 MiB is kept, exit 2")
    func manyRows() throws {
        let tmp = try TempDir()
        let source = try Self.store(tmp, definitions: 20, bytes: 1_000_000)
        let out = try HostileSchemaTests.folder(tmp, "out/o.sqlite")
        let r = USM.run(["salvage", source.path, out.path, "--dry-run", "--json"])
        HostileSchemaTests.expectHostile(r, "salvage --dry-run")
        #expect(r.stderr.contains("over \(SchemaDefinition.maxSchemaBytes) bytes together"), "\(r.stderr)")
        let store = try DamagedStore(files: StoreFileSet(main: source))
        let collector = SchemaCollector(encoding: store.header.encoding)
        var tables = [SalvageTable.schema]
        var rows = [SalvageReport.TableRows(name: "sqlite_schema")]
        store.walk(0, tables: &tables, rows: &rows, sink: collector)
        #expect(collector.overLimit)
        #expect(collector.ordered.compactMap(\.sql).reduce(0) { $0 + $1.utf8.count } <= SchemaDefinition.maxSchemaBytes)
    }
}

/// Issue 28, finding 6: a `--model` XML nested deeper than a model nests is refused as soon as the
/// parser gets there (memory does not grow with the nesting); a model that nests five deep reads.
@Suite("memory: a model's XML is bounded in depth and elements", .timed)
struct ModelLimitTests {
    @Test("1,000 nested elements inside <model>: model-invalid (exit 2), naming the limit; 64 deep still reads")
    func nested() throws {
        let tmp = try TempDir()
        let deep = tmp.path("deep.xml")
        let n = 1000
        try Data(
            ("<?xml version=\"1.0\"?><model>" + String(repeating: "<a>", count: n) + String(repeating: "</a>", count: n)
                + "</model>").utf8
        ).write(to: deep)
        #expect {
            try ModelFile.load(deep)
        } throws: { error in
            "\(error)".contains("nested more than \(ModelFile.maxDepth) deep")
        }
        // At the limit (an entity inside 61 wrappers and <model>): accepted.
        let wrap = ModelFile.maxDepth - 3
        let ok = tmp.path("ok.xml")
        try Data(
            ("<?xml version=\"1.0\"?><model>" + String(repeating: "<a>", count: wrap)
                + "<entity name=\"Car\"><attribute name=\"plate\" attributeType=\"String\"/></entity>"
                + String(repeating: "</a>", count: wrap) + "</model>").utf8
        ).write(to: ok)
        #expect(try ModelFile.load(ok).entities.map(\.name) == ["Car"])
        try ModelFileTests.writeStore(tmp.path("s/S.sqlite"), persons: 1, cars: 1, prefix: "s")
        let r = USM.run([
            "migrate-store", tmp.path("s/S.sqlite").path, tmp.path("s/D.sqlite").path, "--model", deep.path, "--json",
        ])
        #expect(r.status == 2, "\(r.stderr)")
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "model-invalid")
        #expect(r.stdout.contains("nested more than") || r.stderr.contains("nested more than"))
        #expect(!FileManager.default.fileExists(atPath: tmp.path("s/D.sqlite").path))
    }

    @Test("more elements than the limit (flat): model-invalid, naming it")
    func manyElements() throws {
        let tmp = try TempDir()
        let flat = tmp.path("flat.xml")
        try Data(
            ("<?xml version=\"1.0\"?><model>" + String(repeating: "<a/>", count: ModelFile.maxElements + 1) + "</model>")
                .utf8
        ).write(to: flat)
        #expect {
            try ModelFile.load(flat)
        } throws: { error in
            "\(error)".contains("more than \(ModelFile.maxElements) elements")
        }
    }
}
