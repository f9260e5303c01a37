import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// `ObjectIdentity`: objects equal by entity, attributes and (refined) to-one targets; merges that
/// add nothing twice.
@Suite("Object identity", .timed)
struct IdentityTests {
    /// A MergeFixture store (prefix `p`: authors 1-3, book 3 by author 1) without the uniqueness
    /// constraint, with author 100 a copy of author 1, book 100 a copy of book 3 by author 100 (a
    /// copy of its author: a duplicate) and book 101 a copy of book 3 by author 2 (not one).
    static func store(_ tmp: TempDir) throws -> URL {
        let url = tmp.path("S.sqlite")
        try MergeFixture.write(to: url, .a, prefix: "p")
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        try queue.write { (db: Database) throws in
            try db.execute(
                sql: """
                    DROP INDEX Z_Item_UNIQUE_code;
                    CREATE TEMP TABLE a AS SELECT * FROM ZAUTHOR WHERE Z_PK = 1; UPDATE a SET Z_PK = 100;
                    INSERT INTO ZAUTHOR SELECT * FROM a;
                    CREATE TEMP TABLE b AS SELECT * FROM ZITEM WHERE Z_PK = 3;
                    UPDATE b SET Z_PK = 100, ZAUTHOR = 100; INSERT INTO ZITEM SELECT * FROM b;
                    UPDATE b SET Z_PK = 101, ZAUTHOR = 2; INSERT INTO ZITEM SELECT * FROM b;
                    """)
            #expect(try Int.fetchOne(db, sql: "SELECT ZAUTHOR FROM ZITEM WHERE Z_PK = 3") == 1)
        }
        return url
    }

    static func duplicates(_ url: URL, keys: [String] = []) throws -> [String: Int] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db in
            let schema = try CoreDataSchema.readMain(db)
            let identity = try ObjectIdentity.classify(
                db,
                sides: [
                    .init(
                        database: "main", schema: schema,
                        keys: schema.toOneKeys + (try SchemaFacts.inferredKeys(db, schema: schema)),
                        indexed: try SchemaFacts.indexedKeyColumns(db, schema: schema))
                ], keys: try ObjectIdentity.parseKeys(keys, schema: schema))
            defer { try? identity.drop(db) }
            return try identity.duplicates(db)
        }
    }

    @Test("refinement: equal books by two copies of one author are duplicates; by two different authors they are not")
    func refinement() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        #expect(try Self.duplicates(url) == ["Author": 1, "Book": 1])
        // The copy's author differs in an attribute: neither the author nor the book is a copy.
        try FixtureStore.mutate(url, "UPDATE ZAUTHOR SET ZNAME = 'someone else' WHERE Z_PK = 100")
        #expect(try Self.duplicates(url) == [:])
    }

    /// Per entity, the copies `DuplicateGroups` (what `dedupe` removes) finds in `url`.
    static func groups(_ url: URL, keys: [String] = []) throws -> [String: Int] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db in
            let schema = try CoreDataSchema.readMain(db)
            let groups = try DuplicateGroups.find(
                db, schema: schema,
                keys: try ObjectIdentity.constraintKeys(
                    db, schema: schema, explicit: try ObjectIdentity.parseKeys(keys, schema: schema)))
            defer { try? groups.drop(db) }
            return try groups.duplicates(db)
        }
    }

    @Test(
        "dedupe's grouping (GROUP BY, only objects with a copy) finds what the refinement of every object finds: cycles, three copies, --key, dangling keys"
    )
    func groupsAgreeWithRefinement() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        // Author ↔ favorite book is a cycle of to-one keys; each step changes what is a copy.
        let steps = [
            "",
            "UPDATE ZAUTHOR SET ZFAVORITE = 3 WHERE Z_PK = 1; UPDATE ZAUTHOR SET ZFAVORITE = 100 WHERE Z_PK = 100",
            "UPDATE ZAUTHOR SET ZFAVORITE = 101 WHERE Z_PK = 100",
            "UPDATE ZAUTHOR SET ZFAVORITE = 3 WHERE Z_PK = 100",
            "CREATE TEMP TABLE b AS SELECT * FROM ZITEM WHERE Z_PK = 3; UPDATE b SET Z_PK = 102; INSERT INTO ZITEM SELECT * FROM b",
            "UPDATE ZITEM SET ZAUTHOR = 999 WHERE Z_PK IN (101, 102)",
            "UPDATE ZITEM SET ZAUTHOR = 998 WHERE Z_PK = 102",
        ]
        var seen: Set<[String: Int]> = []
        for step in steps {
            if !step.isEmpty { try FixtureStore.mutate(url, step) }
            for keys in [[], ["Book=title"], ["Author=name"]] {
                let expected = try Self.duplicates(url, keys: keys)
                #expect(try Self.groups(url, keys: keys) == expected, "after \(step), keys \(keys)")
                seen.insert(expected)
            }
        }
        #expect(seen.count > 3, "the steps change what is a copy")
    }

    @Test(
        "a run finds the groups once: the build installs its count's de-duplicated copy, unless the store changed since"
    )
    func buildReusesTheCount() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        let store = StoreFileSet(main: url)
        func build(_ work: DedupeWork, _ name: String) throws -> MigrationReport {
            try FileManager.default.createDirectory(at: tmp.path(name), withIntermediateDirectories: true)
            return try DedupeChange.build(
                source: store, staged: tmp.path("\(name)/S.sqlite"), shownAs: store, keys: [], newest: false,
                work: work
            ).0
        }
        func count(_ name: String, _ sql: String) throws -> Int? {
            let queue = try DatabaseQueue(path: tmp.path("\(name)/S.sqlite").path)
            defer { try? queue.close() }
            return try queue.read { db in try Int.fetchOne(db, sql: sql) }
        }
        // Unchanged: what is installed is the count's copy (a mark made in it shows).
        let work = try DedupeWork.make(store, keys: [], newest: false)
        #expect(work.removed == ["Author": 1, "Book": 1])
        _ = try work.integrity.value()  // the removal (on another thread) is done
        let mark = try DatabaseQueue(path: work.captured.copy.path)
        try mark.write { db in try db.execute(sql: "UPDATE ZTAG SET ZNAME = 'counted' WHERE Z_PK = 1") }
        try mark.close()
        #expect(try build(work, "a").deduplicated == ["Author": 1, "Book": 1])
        #expect(try count("a", "SELECT COUNT(*) FROM ZTAG WHERE ZNAME = 'counted'") == 1)
        // Changed after the count (a third copy of the book): found again, the change kept.
        let stale = try DedupeWork.make(store, keys: [], newest: false)
        try FixtureStore.mutate(
            url,
            "CREATE TEMP TABLE b AS SELECT * FROM ZITEM WHERE Z_PK = 3; UPDATE b SET Z_PK = 102; INSERT INTO ZITEM SELECT * FROM b"
        )
        #expect(try build(stale, "b").deduplicated == ["Author": 1, "Book": 2])
        #expect(try count("b", "SELECT COUNT(*) FROM ZITEM WHERE Z_PK IN (3, 100, 102)") == 1)
    }

    /// Scratch whose private copies go below `tmp` (so a rename into `tmp` stays on one file system).
    static func scratch(_ tmp: TempDir) throws -> Scratch {
        let base = tmp.path("scratch-tmp")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        return Scratch(folder: tmp.path("scratch"), temporaryBase: base)
    }

    @Test(
        "the build renames its count's de-duplicated copy into staging (no second write of the store); a second build of the same count captures again"
    )
    func buildRenamesTheCount() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        let store = StoreFileSet(main: url)
        func build(_ work: DedupeWork, _ name: String) throws -> MigrationReport {
            try FileManager.default.createDirectory(at: tmp.path(name), withIntermediateDirectories: true)
            return try DedupeChange.build(
                source: store, staged: tmp.path("\(name)/S.sqlite"), shownAs: store, keys: [], newest: false,
                work: work
            ).0
        }
        // The private copy on the staging folder's file system (tests' folders may be on /dev/shm).
        let work = try Scratch.$current.withValue(Self.scratch(tmp)) {
            try DedupeWork.make(store, keys: [], newest: false)
        }
        let copy = work.captured.copy.path
        let inode = try #require(FileStatus.lookup(copy)?.inode)
        #expect(try build(work, "a").deduplicated == ["Author": 1, "Book": 1])
        // The same file, moved: the private copy is gone, its other name (the capture's) too.
        let staged = tmp.path("a/S.sqlite").path
        #expect(FileStatus.lookup(staged)?.inode == inode)
        #expect(FileStatus.links(staged) == 1)
        #expect(FileStatus.lookup(copy) == nil)
        for sidecar in ["-wal", "-shm", "-journal"] { #expect(FileStatus.lookup(staged + sidecar) == nil) }
        let queue = try DatabaseQueue(path: staged)
        let (mode, books) = try queue.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA journal_mode"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE Z_PK IN (3, 100)")
            )
        }
        try queue.close()
        #expect(mode == "wal" && books == 1)
        // The count's copy is used once: the next build of it captures the store and removes again.
        #expect(try build(work, "b").deduplicated == ["Author": 1, "Book": 1])
        #expect(FileStatus.lookup(tmp.path("b/S.sqlite").path)?.inode != inode)
    }

    @Test(
        "dedupe's result is integrity-checked beside the snapshot (the count's copy, final): its lines decide the verification; a failing line is refused"
    )
    func integrityBesideTheSnapshot() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        let store = StoreFileSet(main: url)
        let work = try Scratch.$current.withValue(Self.scratch(tmp)) {
            try DedupeWork.make(store, keys: [], newest: false)
        }
        // The counts are known before the removal ends; then the copy is folded (no side file) and checked.
        #expect(work.removed == ["Author": 1, "Book": 1])
        #expect(try work.integrity.value().get() == ["ok"])
        for suffix in ["-wal", "-journal"] { #expect(FileStatus.lookup(work.captured.copy.path + suffix) == nil) }
        // The verification reads the lines it is given instead of checking again: a failing line
        // refuses the result, "ok" passes it.
        try FileManager.default.createDirectory(at: tmp.path("v"), withIntermediateDirectories: true)
        let staged = StoreFileSet(main: tmp.path("v/S.sqlite"))
        try StagedStore.copyWhole(from: url, to: staged.main)
        try FixtureStore.mutate(staged.main, "UPDATE Z_PRIMARYKEY SET Z_MAX = 1000")  // the fixture's are behind
        let source = work.captured.report.entities  // the store before: what the staged copy holds
        func verify(_ lines: [String]) -> String? {
            var report = MigrationReport(
                strategy: "dedupe", mode: "overwrite", dryRun: false, source: .init(path: url.path, storeUUID: nil),
                destination: .init(path: url.path, storeUUID: nil))
            do {
                _ = try DedupeChange.verify(
                    staged: staged, sourceEntities: source, inherited: { [] }, removed: [:], integrity: { lines },
                    report: &report)
                return nil
            } catch let USMError.verificationFailed(_, detail) {
                return detail
            } catch {
                return "\(error)"
            }
        }
        #expect(verify(["ok"]) == nil)
        let refused = verify(["*** in database main ***\nPage 7: never used"])
        #expect(refused?.contains("integrity_check") == true, "\(refused ?? "passed")")
    }

    @Test(
        "the build's placing of the count: side files folded in first; a rename that fails (EXDEV) copies page by page and keeps the private copy"
    )
    func placeFallsBackToACopy() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        // The store in WAL with rows only in its -wal: the count's copy holds them in its WAL too.
        let wal = try DatabaseQueue(path: url.path)
        try wal.writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try db.execute(sql: "UPDATE ZTAG SET ZNAME = 'in the wal' WHERE Z_PK = 1")
        }
        let store = StoreFileSet(main: url)
        let work = try Scratch.$current.withValue(Self.scratch(tmp)) {
            try DedupeWork.make(store, keys: [], newest: false)
        }
        try wal.close()
        let copy = work.captured.copy.path
        try FileManager.default.createDirectory(at: tmp.path("x"), withIntermediateDirectories: true)
        let staged = tmp.path("x/S.sqlite")
        var asked: [String] = []
        try work.place(at: staged) { from, to in
            asked = [from, to]
            return EXDEV
        }
        #expect(asked == [copy, staged.path])
        // Copied: a file of its own, the private copy left whole (the next build may use it).
        #expect(FileStatus.lookup(staged.path)?.inode != FileStatus.lookup(copy)?.inode)
        #expect(FileStatus.lookup(copy) != nil)
        for sidecar in ["-wal", "-shm", "-journal"] {
            #expect(FileStatus.lookup(staged.path + sidecar) == nil)
            #expect(FileStatus.lookup(copy + sidecar) == nil)
        }
        let queue = try DatabaseQueue(path: staged.path)
        let (mode, tags, books) = try queue.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA journal_mode"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZTAG WHERE ZNAME = 'in the wal'"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE Z_PK IN (3, 100)")
            )
        }
        try queue.close()
        #expect(mode == "delete" && tags == 1 && books == 1)
        // The real rename then moves the same copy (its WAL rows with it).
        try FileManager.default.createDirectory(at: tmp.path("y"), withIntermediateDirectories: true)
        let inode = FileStatus.lookup(copy)?.inode
        try work.place(at: tmp.path("y/S.sqlite"))
        #expect(FileStatus.lookup(tmp.path("y/S.sqlite").path)?.inode == inode)
        #expect(FileStatus.lookup(copy) == nil)
    }

    @Test(
        "dedupe's verification tells an error the store already had (inherited, from check without a second integrity_check) from a new one (refused)"
    )
    func dedupeInheritsErrors() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        // A book (not a copy) by an author that does not exist: an error the store has before.
        try FixtureStore.mutate(url, "UPDATE ZITEM SET ZAUTHOR = 9999 WHERE Z_PK = 101")
        let store = StoreFileSet(main: url)
        for reuse in [true, false] {
            let name = reuse ? "a" : "b"
            try FileManager.default.createDirectory(at: tmp.path(name), withIntermediateDirectories: true)
            let work = reuse ? try DedupeWork.make(store, keys: [], newest: false) : nil
            let report = try DedupeChange.build(
                source: store, staged: tmp.path("\(name)/S.sqlite"), shownAs: store, keys: [], newest: false,
                work: work
            ).0
            #expect(report.deduplicated == ["Author": 1, "Book": 1])
            #expect(report.verification.problems.isEmpty, "\(report.verification.problems)")
            #expect(report.verification.inherited.contains { $0.code == .danglingToOne }, "reuse \(reuse)")
        }
        // A join row to no object is new in the result (the source has none): refused.
        let captured = try MigrationEngine.capture(store, into: tmp.path("c"), role: "store")
        let errors = { (r: StoreReport) in Set(r.problems.filter { $0.severity == .error }.map(\.code)) }
        #expect(errors(captured.inheritedCheck()) == errors(captured.fullCheck()))
        let staged = tmp.path("d/S.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("d"), withIntermediateDirectories: true)
        try StagedStore.copyWhole(from: captured.copy, to: staged)
        let join = try DatabaseQueue(path: staged.path)
        try join.write { db in
            let table = try String.fetchOne(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z\\_%TAGS' ESCAPE '\\'")
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(table ?? "none"))").compactMap {
                String.fromDatabaseValue($0["name"] as DatabaseValue)
            }
            #expect(columns.count >= 2, "join table \(table ?? "none")")
            try db.execute(
                sql: "INSERT INTO \(table ?? "none") (\(columns[0]), \(columns[1])) VALUES (999999, 999999)")
        }
        try join.close()
        var report = MigrationReport(
            strategy: "dedupe", mode: "overwrite", dryRun: false, source: .init(path: url.path, storeUUID: nil),
            destination: .init(path: url.path, storeUUID: nil))
        var failure: String?
        do {
            _ = try DedupeChange.verify(
                staged: StoreFileSet(main: staged), sourceEntities: captured.report.entities,
                inherited: { captured.inheritedCheck().problems }, removed: [:], report: &report)
        } catch let USMError.verificationFailed(_, detail) {
            failure = detail
        }
        #expect(failure?.hasPrefix("dangling-join-row") == true, "\(failure ?? "passed")")
        #expect(report.verification.inherited.contains { $0.code == .danglingToOne })
    }

    @Test("--key: an entity identified by some attributes only (relationships then not compared); bad keys refused")
    func keys() throws {
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        #expect(try Self.duplicates(url, keys: ["Book=title"]) == ["Author": 1, "Book": 2])
        #expect(try Self.duplicates(url, keys: ["Author=name", "Book=code"]) == ["Author": 1, "Book": 2])
        #expect(throws: USMError.self) { try Self.duplicates(url, keys: ["Book=nosuch"]) }
        #expect(throws: USMError.self) { try Self.duplicates(url, keys: ["Nobody=title"]) }
        #expect(throws: USMError.self) { try Self.duplicates(url, keys: ["Book"]) }
    }

    @Test("a merge adds nothing twice: objects already there matched and counted, relationships joined, no pair twice")
    func mergeMatches() throws {
        let tmp = try TempDir()
        let source = tmp.path("A.sqlite")
        let destination = tmp.path("d/B.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("d"), withIntermediateDirectories: true)
        // The same data in another numbering, with one more tag (and its pairs with existing items).
        try MergeFixture.write(to: source, .a, prefix: "same", tags: 4)
        try MergeFixture.write(to: destination, .b, prefix: "same", tags: 3)
        let expected = try MergeFixture.relationships(source).sorted()
        #expect(try MergeFixture.relationships(destination).sorted() != expected)
        let report = try Migrate.run(source, destination, mode: .merge, snapshots: tmp.path("snapshots"))
        #expect(report.matched == ["Book": 5, "Magazine": 2, "Author": 3, "Shelf": 2, "Tag": 3])
        #expect(report.deduplicated.values.allSatisfy { $0 == 0 })
        let (rows, errors, _) = try Migrate.check(destination)
        #expect(errors.isEmpty, "\(errors)")
        #expect(rows["Book"] == 5 && rows["Magazine"] == 2 && rows["Author"] == 3 && rows["Tag"] == 4, "\(rows)")
        #expect(try MergeFixture.relationships(destination).sorted() == expected)
        // --allow-duplicates keeps the old behaviour: everything copied.
        let again = tmp.path("e/B.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("e"), withIntermediateDirectories: true)
        try MergeFixture.write(to: again, .b, prefix: "same", tags: 3)
        try FixtureStore.mutate(again, "DROP INDEX Z_Item_UNIQUE_code")
        var options = MigrationOptions()
        options.allowDuplicates = true
        let copied = try Migrate.run(source, again, mode: .merge, options: options, snapshots: tmp.path("snapshots"))
        #expect(copied.matched.isEmpty)
        #expect(try Migrate.check(again).rows["Book"] == 10)
    }

    @Test(
        "across sides, ranking only the objects two sides share matches what ranking every object matches (refinement, dangling keys, copies within one side)"
    )
    func acrossSidesAgreesWithRankingAll() throws {
        let tmp = try TempDir()
        let source = tmp.path("A.sqlite")
        let destination = tmp.path("B.sqlite")
        try MergeFixture.write(to: source, .a, prefix: "same", tags: 4)
        try MergeFixture.write(to: destination, .b, prefix: "same", tags: 3)
        // Book (.a 2, .b 3) by authors (.a 4, .b 1); ZISSUE/ZRATING are one-sided (not compared).
        try FixtureStore.mutate(
            source,
            """
            INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (500, 4, 1, 'shared author'), (501, 4, 1, 'source only');
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZTITLE) VALUES
                (500, 2, 1, 500, 'by the shared author'), (501, 2, 1, 501, 'by another author'),
                (502, 2, 1, 999, 'dangling'), (503, 2, 1, 998, 'dangling elsewhere'), (504, 2, 1, NULL, 'no author');
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZCOVER) VALUES (505, 2, 1, 'seven', 7);
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZTITLE) VALUES (506, 2, 1, 601, 'by a copy');
            """)
        try FixtureStore.mutate(
            destination,
            """
            INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES
                (600, 1, 1, 'shared author'), (601, 1, 1, 'destination copy'), (602, 1, 1, 'destination copy');
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZTITLE) VALUES
                (600, 3, 1, 600, 'by the shared author'), (601, 3, 1, 600, 'by another author'),
                (602, 3, 1, 999, 'dangling'), (603, 3, 1, 997, 'dangling elsewhere'), (604, 3, 1, NULL, 'no author'),
                (605, 3, 1, 601, 'by a copy'), (606, 3, 1, 602, 'by a copy');
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZCOVER) VALUES (607, 3, 1, 'seven', 7.0);
            """)
        let queue = try DatabaseQueue(path: destination.path)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [source.path])
            let sides: [ObjectIdentity.Side] = [
                try .of(db, schema: try CoreDataSchema.load(from: destination), database: "main"),
                try .of(db, schema: try CoreDataSchema.load(from: source), database: "src"),
            ]
            var results: [[String]] = []
            var counts: [[String: Int]] = []
            for rankingAll in [false, true] {
                let identity = try ObjectIdentity.classify(db, sides: sides, rankingAll: rankingAll)
                counts.append(try identity.matched(db, side: 1))
                var pairs: [String] = []
                for table in ["ZAUTHOR", "ZITEM", "ZSHELF", "ZTAG"] {
                    _ = try identity.writeMatches(db, table: table, side: 1, into: "usm_test_matches")
                    pairs += try String.fetchAll(
                        db, sql: "SELECT '\(table) ' || src_pk || ' -> ' || dst_pk FROM temp.usm_test_matches")
                    try db.execute(sql: "DROP TABLE temp.usm_test_matches")
                }
                results.append(pairs.sorted())
                try identity.drop(db)
            }
            #expect(results[0] == results[1])
            #expect(counts[0] == counts[1])
            let matched = Set(results[0])
            #expect(matched.contains("ZAUTHOR 500 -> 600") && matched.contains("ZITEM 500 -> 600"))
            #expect(matched.contains("ZITEM 502 -> 602"), "the same dangling key on both sides")
            #expect(matched.contains("ZITEM 504 -> 604"))
            #expect(matched.contains("ZITEM 505 -> 607"), "7 IS 7.0: ranked alike, so hashed alike")
            // 506's author is dangling (601 is no author of the source); 605's is the destination's 601.
            #expect(!matched.contains { ["ZITEM 501 ", "ZITEM 503 ", "ZITEM 506 "].contains(where: $0.hasPrefix) })
            #expect(counts[0]["Book"] == 5 + 4, "\(counts[0])")
        }
    }

    static func dedupe(_ url: URL, newest: Bool = false, keys: [String] = []) throws -> [String: Int] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.writeWithoutTransaction { db in
            let schema = try CoreDataSchema.readMain(db)
            return try Deduplicator(keys: try ObjectIdentity.parseKeys(keys, schema: schema), newest: newest).run(db)
        }
    }

    @Test("dedupe: one object per group survives, references repointed, join pairs united once, Z_MAX not behind")
    func dedupe() throws {
        for newest in [false, true] {
            let tmp = try TempDir()
            let url = try Self.store(tmp)
            // Book 4 is by the author's copy; the book's copy has tag 1 (its original's too) and tag 2 (not).
            try FixtureStore.mutate(
                url,
                "UPDATE ZITEM SET ZAUTHOR = 100 WHERE Z_PK = 4; INSERT INTO Z_1TAGS VALUES (100, 1, 5), (100, 2, 6)")
            #expect(try Self.dedupe(url, newest: newest) == ["Author": 1, "Book": 1])
            let queue = try DatabaseQueue(path: url.path)
            try queue.read { (db: Database) throws in
                let author = newest ? 100 : 1
                let book = newest ? 100 : 3
                #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZAUTHOR WHERE Z_PK IN (1, 100)") == 1)
                #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE Z_PK IN (3, 100)") == 1)
                #expect(try Int.fetchOne(db, sql: "SELECT ZAUTHOR FROM ZITEM WHERE Z_PK = 4") == author)
                #expect(try Int.fetchOne(db, sql: "SELECT ZAUTHOR FROM ZITEM WHERE Z_PK = \(book)") == author)
                #expect(try Int.fetchOne(db, sql: "SELECT ZAUTHOR FROM ZITEM WHERE Z_PK = 101") == 2, "not a copy")
                #expect(
                    try Int.fetchAll(db, sql: "SELECT Z_6TAGS FROM Z_1TAGS WHERE Z_1ITEMS = \(book) ORDER BY 1") == [
                        1, 2, 3,
                    ])
                #expect(
                    try Int.fetchOne(
                        db, sql: "SELECT COUNT(*) FROM Z_1TAGS WHERE Z_1ITEMS NOT IN (SELECT Z_PK FROM ZITEM)")
                        == 0)
                #expect(try Int.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'") ?? 0 >= 101)
                #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok")
            }
            try queue.close()
            #expect(try Self.dedupe(url, newest: newest) == [:], "a second run: nothing to do")
        }
        // --key: books by title only, so the copy by another author goes too.
        let tmp = try TempDir()
        let url = try Self.store(tmp)
        #expect(try Self.dedupe(url, keys: ["Book=title"]) == ["Author": 1, "Book": 2])
    }

    @Test(
        "dedupe command: dry run changes nothing; a run removes the copies after a snapshot that restores them; again: nothing to do"
    )
    func dedupeCommand() throws {
        let tmp = try TempDir()
        let url = tmp.path("s/S.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("s"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: try Self.store(tmp), to: url)
        let original = try Data(contentsOf: url)
        let dry = USM.run(["dedupe", "--store", url.path, "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            dry.details["removed"] as? [String: Int] == ["Author": 1, "Book": 1] && dry.json["dryRun"] as? Bool == true)
        #expect(try Data(contentsOf: url) == original, "a dry run changes nothing")
        let run = USM.run(["dedupe", "--store", url.path, "--yes", "--json", "--snapshot-dir", tmp.path("snaps").path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.details["removed"] as? [String: Int] == ["Author": 1, "Book": 1] && run.json["changed"] as? Bool == true
        )
        #expect(try Migrate.check(url).rows["Book"] == 6 && (try Migrate.check(url).errors.isEmpty))
        #expect(run.json["exitCode"] as? Int == 0)
        let again = USM.run(["dedupe", "--store", url.path, "--yes", "--json"])
        #expect(again.status == 0 && again.json["noOp"] as? Bool == true, "\(again.stderr)")
        let snapshot = run.json["snapshot"] as? String ?? ""
        #expect(USM.run(["restore", snapshot, "--to", tmp.path("restored").path, "-q"]).status == 0)
        #expect(try Migrate.check(tmp.path("restored/s/S.sqlite")).rows["Book"] == 7)
        // A cloud copy is refused with the route that works.
        let cloud = tmp.path("CoreDataUbiquitySupport/p/local/store/S.sqlite")
        try FileManager.default.createDirectory(
            at: cloud.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: url, to: cloud)
        let refused = USM.run(["dedupe", "--store", cloud.path, "--yes"])
        #expect(refused.status == 8 && refused.stderr.contains("rebuild --from local"), "\(refused.stderr)")
        #expect(USM.run(["dedupe", "--store", url.path, "--keep", "sometimes"]).status == 64)
    }

    @Test("check reports duplicate-objects (a warning) per entity with the dedupe that removes them; none after it")
    func checkReports() throws {
        let tmp = try TempDir()
        let url = tmp.path("s/S.sqlite")
        try FileManager.default.createDirectory(at: tmp.path("s"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: try Self.store(tmp), to: url)
        try FixtureStore.mutate(url, "UPDATE Z_PRIMARYKEY SET Z_MAX = 200")  // the copies' keys are above it
        let r = USM.run(["check", "--store", url.path, "--json"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("duplicate-objects") && r.stdout.contains("usm-repair dedupe --store"), "\(r.stdout)")
        #expect(USM.run(["check", "--store", url.path, "--strict"]).status == 1)
        #expect(
            USM.run(["dedupe", "--store", url.path, "--yes", "--snapshot-dir", tmp.path("snaps").path]).status == 0)
        #expect(!USM.run(["check", "--store", url.path, "--json"]).stdout.contains("duplicate-objects"))
    }
}
