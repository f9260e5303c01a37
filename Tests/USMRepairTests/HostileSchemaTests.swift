import Foundation
import GRDB
import GRDBSQLite
import Testing
import TestSupport
@testable import USMRepairCore

/// Issue 28, findings 1 and 5: a store's schema text is data. A `sqlite_schema` row holding more
/// than one statement (SQLite loads only its first), a TEMP or another schema's object, or an
/// index whose expressions cost without bound is `hostile-schema` (exit 2): nothing of it runs,
/// nothing is written, and a database elsewhere stays as it was.
@Suite("hostile schema", .timed)
struct HostileSchemaTests {
    typealias Fixture = OperationTests.Fixture

    // MARK: - Parser

    @Test("one CREATE statement of each kind is accepted; comments and `;` inside strings and names are data")
    func parserAccepts() throws {
        let accepted: [(String, String, SchemaDefinition.Kind)] = [
            ("table", "CREATE TABLE ZTAG ( Z_PK INTEGER PRIMARY KEY, ZNAME VARCHAR )", .table),
            (
                "table", "CREATE TABLE \"a;b\" (x DEFAULT 'y; ATTACH ''z'' AS v', [c;d] INTEGER, `e;f`) -- ; DROP",
                .table
            ),
            ("table", "CREATE TABLE t(x) /* ; ATTACH 'x' AS v */ ;  -- trailing", .table),
            ("index", "CREATE UNIQUE INDEX IF NOT EXISTS i ON t (x COLLATE NOCASE) WHERE x > 0", .index),
            ("view", "CREATE VIEW v AS SELECT x FROM t WHERE x = ';'", .view),
            (
                "trigger",
                "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET x = CASE WHEN 1 THEN 2 END; DELETE FROM t WHERE x = ';'; END",
                .trigger
            ),
            ("table", "CREATE VIRTUAL TABLE f USING fts5(content)", .virtualTable),
            ("table", "CREATE TABLE sqlite_sequence(name,seq)", .table),
        ]
        for (type, sql, kind) in accepted {
            let parsed = try SchemaDefinition.parse(sql, type: type)
            #expect(parsed.kind == kind, "\(sql)")
            #expect(!parsed.statement.hasSuffix(";"))
        }
        #expect(try SchemaDefinition.parse("CREATE TABLE t(x) ; -- c").statement == "CREATE TABLE t(x)")
    }

    @Test(
        "a tail after the statement, TEMP, AS SELECT, another schema, other modules, costly functions, oversize: refused"
    )
    func parserRefuses() {
        let refused: [(String, String)] = [
            ("table", "CREATE TABLE ZTAG (x); ATTACH 'victim.sqlite' AS v; DELETE FROM v.ZITEM; DETACH v"),
            ("table", "CREATE TABLE t(x); VACUUM INTO '/tmp/x.db'"),
            ("table", "CREATE TABLE t(x);;"),
            ("table", "CREATE TEMP TABLE t(x)"),
            ("table", "CREATE TABLE t AS SELECT 1"),
            ("table", "CREATE TABLE v.t(x)"),
            ("table", "CREATE VIRTUAL TABLE f USING fts3tokenize(x)"),
            ("table", "CREATE TABLE t(x CHECK (length(printf('%.*c', 200000000, 'x')) > 0))"),
            ("index", "CREATE INDEX i ON t (length(printf('%.*c', 200000000 + Z_PK, 'x')))"),
            ("index", "CREATE INDEX i ON t (zeroblob(1000000000))"),
            ("trigger", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM t; END; ATTACH 'x' AS v"),
            ("trigger", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN ATTACH 'x' AS v; END"),
            ("table", "CREATE TABLE t(x) /* unterminated"),
            ("table", "CREATE TABLE t(x DEFAULT 'unterminated)"),
            ("index", "CREATE TABLE t(x)"),
            ("table", "DELETE FROM t"),
            ("table", "CREATE TABLE t(x \(String(repeating: "y", count: SchemaDefinition.maxDefinitionBytes)))"),
        ]
        for (type, sql) in refused {
            #expect(throws: SchemaDefinition.Refusal.self, "\(sql.prefix(80))") {
                try SchemaDefinition.parse(sql, type: type)
            }
        }
        let big = String(repeating: "x", count: 1 << 19)
        let rows = (0..<40).map { ("table", "t\($0)", Optional("CREATE TABLE t\($0)(a DEFAULT '\(big)')")) }
        #expect(SchemaDefinition.audit(rows)?.contains("bytes together") == true)
    }

    // MARK: - UntrustedDatabase

    @Test("an untrusted connection: defensive, untrusted schema, cell_size_check, no mmap, ATTACH denied, limits")
    func untrustedSettings() throws {
        let tmp = try TempDir()
        let store = tmp.path("s.sqlite")
        try RawStore.write(to: store, "CREATE TABLE t(x)")
        let other = tmp.path("other.sqlite")
        try RawStore.write(to: other, "CREATE TABLE ZITEM(x)")
        var config = Configuration()
        UntrustedDatabase.configure(&config, bytes: 4096)
        let queue = try DatabaseQueue(path: store.path, configuration: config)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            #expect(try Int.fetchOne(db, sql: "PRAGMA trusted_schema") == 0)
            #expect(try Int.fetchOne(db, sql: "PRAGMA cell_size_check") == 1)
            #expect(try Int.fetchOne(db, sql: "PRAGMA mmap_size") == 0)
            // Defensive mode: writable_schema is ignored, sqlite_master cannot be written.
            try db.execute(sql: "PRAGMA writable_schema = ON")
            #expect(throws: DatabaseError.self) {
                try db.execute(sql: "UPDATE sqlite_master SET sql = 'x' WHERE name = 't'")
            }
            #expect(throws: DatabaseError.self) {
                try db.execute(sql: "ATTACH DATABASE ? AS v", arguments: [other.path])
            }
            #expect(throws: DatabaseError.self) {
                try db.execute(sql: "VACUUM INTO ?", arguments: [tmp.path("v.db").path])
            }
            #expect(!FileManager.default.fileExists(atPath: tmp.path("v.db").path))
            #expect(throws: DatabaseError.self) { try db.execute(sql: "SELECT load_extension('x')") }
            let connection = db.sqliteConnection
            #expect(sqlite3_limit(connection, SQLITE_LIMIT_ATTACHED, -1) == 0)
            #expect(sqlite3_limit(connection, SQLITE_LIMIT_LENGTH, -1) == 16 << 20)
            #expect(sqlite3_limit(connection, SQLITE_LIMIT_EXPR_DEPTH, -1) == 500)
            // The tool's own attach alone is let through.
            try UntrustedDatabase.attaching(db) {
                try db.execute(sql: "ATTACH DATABASE ? AS v", arguments: [other.path])
            }
            try db.execute(sql: "DETACH DATABASE v")
            #expect(sqlite3_limit(connection, SQLITE_LIMIT_ATTACHED, -1) == 0)
        }
    }

    @Test("an untrusted connection stops past its step budget")
    func stepBudget() throws {
        let tmp = try TempDir()
        let store = tmp.path("s.sqlite")
        try RawStore.write(to: store, "CREATE TABLE t(x)")
        var config = Configuration()
        UntrustedDatabase.configure(&config, bytes: 4096)
        let queue = try DatabaseQueue(path: store.path, configuration: config)
        defer { try? queue.close() }
        try queue.read { db in
            #expect(throws: DatabaseError.self) {
                _ = try Int.fetchOne(
                    db,
                    sql:
                        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM (SELECT n FROM c LIMIT 100000000)"
                )
            }
            #expect(UntrustedDatabase.exhausted(db))
        }
    }

    // MARK: - Commands

    static func folder(_ tmp: TempDir, _ path: String) throws -> URL {
        let url = tmp.path(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        return url
    }

    static func options() -> FixtureStore.Options {
        var o = FixtureStore.Options()
        SalvageRepairTests.store(&o)
        return o
    }

    /// A victim database outside the layout, with 3 rows.
    static func victim(_ tmp: TempDir) throws -> URL {
        let url = tmp.path("outside/victim.sqlite")
        try RawStore.write(
            to: url, withBookkeeping: false, "CREATE TABLE ZITEM(x); INSERT INTO ZITEM VALUES (1), (2), (3)")
        return url
    }

    static func victimRows(_ url: URL) throws -> Int {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM ZITEM") ?? -1 }
    }

    /// Appends `tail` to the schema text of a user table of `store` (through writable_schema).
    static func plant(_ store: URL, tail: String) throws {
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            let table = try #require(
                try String.fetchOne(
                    db,
                    sql:
                        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%' AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE') ORDER BY name = 'ZTAG' DESC LIMIT 1"
                ))
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(
                sql: "UPDATE sqlite_master SET sql = sql || ? WHERE name = ?", arguments: [tail, table])
            try db.execute(sql: "PRAGMA writable_schema = OFF")
        }
    }

    static func attackTail(_ victim: URL) -> String {
        "; ATTACH '\(victim.path)' AS v; DELETE FROM v.ZITEM; DROP TABLE v.ZITEM; DETACH v"
    }

    static func expectHostile(_ r: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == 2, "\(what): \(r.status) \(r.stderr)", sourceLocation: sourceLocation)
        #expect(
            r.stdout.contains("hostile-schema") || r.stderr.contains("hostile-schema"),
            "\(what): \(r.stdout) \(r.stderr)",
            sourceLocation: sourceLocation)
    }

    @Test(
        "a damaged local store whose schema row attaches another database: status, check, rebuild --salvage --dry-run, salvage leave it alone"
    )
    func layoutCommands() throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.local)
            $0.markers = [:]
            $0.cache = .none
        }
        let victim = try Self.victim(f.tmp)
        try Self.plant(f.paths.localStore, tail: Self.attackTail(victim))
        _ = try SalvageRepairTests.damage(f.paths.localStore, in: f.tmp)
        let before = try f.snapshot()
        for args in [["status", "--json"], ["check", "--json"]] {
            let r = try f.run(args)
            #expect(r.stdout.contains("hostile-schema"), "\(args): \(r.stdout.prefix(2000))")
            #expect(!r.stdout.contains("salvage --dry-run"), "\(args) proposes salvage")
            #expect(try Self.victimRows(victim) == 3, "\(args)")
        }
        #expect(try f.run(["check", "--json"]).status == 2)
        // The store is not taken as a damaged one to salvage: the operation has no store to seed from.
        let rebuild = try f.run(["rebuild", "--from", "local", "--keep-old", "--salvage", "--dry-run", "--json"])
        #expect(rebuild.status != 0, "\(rebuild.stderr)")
        #expect(try Self.victimRows(victim) == 3)
        let out = f.tmp.path("salvaged/out.sqlite")
        try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
        Self.expectHostile(
            USM.run(["salvage", f.paths.localStore.path, out.path, "--dry-run", "--json"]), "salvage --dry-run")
        Self.expectHostile(USM.run(["salvage", f.paths.localStore.path, out.path, "--json"]), "salvage")
        #expect(!FileManager.default.fileExists(atPath: out.path))
        #expect(try Self.victimRows(victim) == 3)
        #expect(try f.snapshot() == before)
    }

    @Test(
        "a healthy store whose schema row attaches another database: status, check, migrate-store (each strategy), salvage refuse"
    )
    func storeCommands() throws {
        let tmp = try TempDir()
        let source = tmp.path("src/S.sqlite")
        try FixtureStore.write(to: source, Self.options())
        let victim = try Self.victim(tmp)
        try Self.plant(source, tail: Self.attackTail(victim))
        for args in [["status", "--store", source.path, "--json"], ["check", "--store", source.path, "--json"]] {
            let r = USM.run(args)
            #expect(r.stdout.contains("hostile-schema"), "\(args): \(r.stdout.prefix(1500)) \(r.stderr)")
        }
        for strategy in ["ios", "copy-entities", "none"] {
            let destination = tmp.path("dst-\(strategy)/D.sqlite")
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            Self.expectHostile(
                USM.run(["migrate-store", source.path, destination.path, "--strategy", strategy, "--json"]),
                "migrate-store --strategy \(strategy)")
            #expect(!FileManager.default.fileExists(atPath: destination.path), "\(strategy)")
        }
        let out = tmp.path("salvaged/out.sqlite")
        try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
        Self.expectHostile(USM.run(["salvage", source.path, out.path, "--json"]), "salvage")
        // As the sibling of another salvage (--schema-from).
        let other = tmp.path("other/O.sqlite")
        try FixtureStore.write(to: other, Self.options())
        Self.expectHostile(
            USM.run(["salvage", other.path, tmp.path("salvaged/o.sqlite").path, "--schema-from", source.path, "--json"]
            ),
            "salvage --schema-from")
        #expect(try Self.victimRows(victim) == 3)
    }

    @Test("a schema row ending in VACUUM INTO creates no file")
    func vacuumInto() throws {
        let tmp = try TempDir()
        let source = tmp.path("src/S.sqlite")
        try FixtureStore.write(to: source, Self.options())
        let planted = tmp.path("outside/x.db")
        try FileManager.default.createDirectory(
            at: planted.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.plant(source, tail: "; VACUUM INTO '\(planted.path)'")
        let out = tmp.path("salvaged/out.sqlite")
        try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
        Self.expectHostile(USM.run(["salvage", source.path, out.path, "--dry-run", "--json"]), "salvage --dry-run")
        Self.expectHostile(
            USM.run([
                "migrate-store", source.path, try Self.folder(tmp, "d/D.sqlite").path, "--strategy", "none", "--json",
            ]),
            "migrate-store")
        _ = USM.run(["archive", "--store", source.path, "--metadata-only", "-o", tmp.path("a.zip").path, "--json"])
        #expect(!FileManager.default.fileExists(atPath: planted.path))
    }

    @Test("an index whose expression is printf of 200 MB a row is refused, quickly and without writing")
    func costlyIndex() throws {
        let tmp = try TempDir()
        let source = tmp.path("src/S.sqlite")
        try RawStore.write(
            to: source,
            """
            CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 20);
            WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 20)
            INSERT INTO ZITEM SELECT n, 1, 1, 'x' FROM c;
            """)
        // Planted after the rows, so writing the fixture does not evaluate it.
        let queue = try DatabaseQueue(path: source.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE INDEX ZITEM_COST ON ZITEM (length(ZNAME))")
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(
                sql:
                    "UPDATE sqlite_master SET sql = 'CREATE INDEX ZITEM_COST ON ZITEM (length(printf(''%.*c'', 200000000 + Z_PK, ''x'')))' WHERE name = 'ZITEM_COST'"
            )
        }
        try queue.close()
        let r = USM.run(["check", "--store", source.path, "--json"])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stdout.contains("hostile-schema"))
        Self.expectHostile(
            USM.run([
                "migrate-store", source.path, try Self.folder(tmp, "d/D.sqlite").path, "--strategy", "ios", "--json",
            ]),
            "migrate-store")
        Self.expectHostile(
            USM.run(["salvage", source.path, try Self.folder(tmp, "s/o.sqlite").path, "--dry-run", "--json"]),
            "salvage --dry-run")
    }
}
