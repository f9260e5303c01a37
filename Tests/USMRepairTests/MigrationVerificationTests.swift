import Foundation
import GRDB
import Synchronization
import Testing
import TestSupport
@testable import USMRepairCore

/// The verification of a staged store keeps every promise however it is scheduled (issue 15): the
/// split integrity check finds what one `integrity_check` finds, and the verifier refuses a result
/// with damaged pages, an index out of step with its table, a broken invariant or a changed row.
@Suite("migration: verification keeps its promises", .timed)
struct MigrationVerificationTests {
    /// A source captured as the engine captures it, its whole-store copy staged as `ios` stages it,
    /// and the digests the engine reads while a strategy runs.
    struct Staged {
        let tmp: TempDir
        let source: CapturedStore
        let staged: URL
        let inputs: InputDigests

        init(prepare: (URL) throws -> Void = { _ in }) throws {
            tmp = try TempDir()
            var options = FixtureStore.Options()
            options.walOnlyBooks = 2
            options.externalCovers = 0  // the verifier checks external data too; this staged copy has none to carry
            try FixtureStore.write(to: tmp.path("src/A.sqlite"), options)
            try prepare(tmp.path("src/A.sqlite"))
            source = try MigrationEngine.capture(
                StoreFileSet(main: tmp.path("src/A.sqlite")), into: tmp.path("capture"), role: "source")
            staged = tmp.path("staged/A.sqlite")
            try FileManager.default.createDirectory(at: tmp.path("staged"), withIntermediateDirectories: true)
            try StagedStore.copyWhole(from: source.copy, to: staged)
            let digests = try ContentDigest.read(source.copy, schema: source.schema)
            inputs = InputDigests(
                source: digests.digests, sourceColumns: digests.columns, before: [:], beforeColumns: [:])
        }

        /// Runs the verifier as the engine does for `ios` (every row copied unchanged).
        func verify() throws -> MigrationReport {
            var report = MigrationReport(
                strategy: "ios", mode: "create", dryRun: false,
                source: .init(path: source.files.main.path, storeUUID: nil),
                destination: .init(path: staged.path, storeUUID: nil))
            let verifier = MigrationVerifier(
                source: source, destination: nil, policy: .all, outcome: MigrationOutcome(), keepUbiquity: true)
            try verifier.verify(staged: staged, inputs: inputs, report: &report)
            return report
        }

        /// The detail of the verification failure `verify()` throws, or nil when it passes.
        func failure() -> String? {
            do {
                _ = try verify()
                return nil
            } catch let USMError.verificationFailed(_, detail) {
                return detail
            } catch {
                return "unexpected error: \(error)"
            }
        }

        func sql(_ text: String) throws {
            let queue = try DatabaseQueue(path: staged.path)
            try queue.writeWithoutTransaction { db in try db.execute(sql: text) }
            try queue.close()
        }
    }

    /// Two read-only connections to `url`, as the inspector opens them for the split check.
    static func split(_ url: URL) throws -> [String] {
        var config = Configuration()
        config.readonly = true
        let a = try DatabaseQueue(path: url.path, configuration: config)
        let b = try DatabaseQueue(path: url.path, configuration: config)
        defer {
            try? a.close()
            try? b.close()
        }
        return try IntegrityCheck.run(a, b)
    }

    static func sqlite(_ url: URL, _ sql: String) throws -> [String] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { db in try String.fetchAll(db, sql: sql) }
    }

    @Test("an untouched copy passes: integrity ok, rows equal, every entity's digest compared")
    func untouched() throws {
        let s = try Staged()
        let report = try s.verify()
        #expect(report.verification.integrity == "ok")
        #expect(report.verification.rows == "equal")
        #expect(report.verification.digestsCompared >= 5)
        #expect(try Self.split(s.staged) == ["ok"])
    }

    @Test(
        "digests of a table's entities in one scan equal usm_digest grouped by Z_ENT; rows of no entity and empty entities are left out"
    )
    func digestsPerEntityInOneScan() throws {
        let s = try Staged()
        // Rows no entity of the table owns (an unknown Z_ENT, none at all) count for no entity.
        try s.sql(
            """
            INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (900001, 99, 1, 'stray'), (900002, NULL, 1, 'none');
            DELETE FROM ZITEM WHERE Z_ENT = 3;
            """)
        let schema = try CoreDataSchema.load(from: s.staged)
        let read = try ContentDigest.read(s.staged, schema: schema)
        // The same digests the old way: one usm_digest per Z_ENT group, over the same columns.
        let queue = try StagedStore.open(s.staged, readonly: true)
        defer { try? queue.close() }
        var expected: [String: ContentDigest] = [:]
        try queue.read { db in
            for table in schema.entityTables {
                let entities = schema.entities.filter { $0.table == table }
                guard let columns = entities.first.flatMap({ read.columns[$0.name] }) else { continue }
                let list = columns.map { ContentDigest.valueExpression(table: table, column: $0) }
                for row in try Row.fetchAll(
                    db,
                    sql:
                        "SELECT Z_ENT AS e, COUNT(*) AS n, usm_digest(\(list.joined(separator: ", "))) AS d FROM \(table.sqlIdentifier) GROUP BY Z_ENT"
                ) {
                    guard let e = row["e"] as Int?, let entity = entities.first(where: { $0.number == e }) else {
                        continue
                    }
                    expected[entity.name] = ContentDigest(rows: row["n"], sum: row["d"])
                }
            }
        }
        #expect(read.digests == expected)
        #expect(read.digests["Book"] != nil)
        #expect(schema.entities.contains { $0.number == 3 && $0.table == "ZITEM" })
        #expect(!read.digests.keys.contains { name in schema.entities.first { $0.name == name }?.number == 3 })
        // A row moved from one entity to another moves its hash: both digests change.
        try s.sql("UPDATE ZITEM SET Z_ENT = 3 WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM WHERE Z_ENT = 2)")
        let moved = try ContentDigest.read(s.staged, schema: schema)
        #expect(moved.digests["Book"]?.rows == (expected["Book"]?.rows ?? 0) - 1)
        #expect(moved.digests.count == expected.count + 1)
    }

    @Test("a row whose content changed after the build is refused (same count, different digest)")
    func changedRow() throws {
        let s = try Staged()
        try s.sql(
            "UPDATE ZITEM SET ZTITLE = ZTITLE || ' (changed)' WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM WHERE Z_ENT = 2)"
        )
        #expect(s.failure()?.contains("the content of Book differs") == true, "\(s.failure() ?? "passed")")
    }

    @Test(
        "a BLOB over the size read in pieces is still compared byte for byte: equal passes, one byte changed is refused"
    )
    func largeBlob() throws {
        let size = ContentDigest.largeBlob * 3
        var cover = Data(repeating: 7, count: size)
        let s = try Staged { url in
            let queue = try DatabaseQueue(path: url.path)
            try queue.write { db in
                try db.execute(
                    sql: "UPDATE ZITEM SET ZCOVER = ? WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM WHERE Z_ENT = 2)",
                    arguments: [cover])
            }
            try queue.close()
        }
        #expect(
            ContentDigest.valueExpression(table: "ZITEM", column: "ZCOVER").contains("usm_valuehash('ZITEM', 'ZCOVER'"))
        #expect(s.failure() == nil, "\(s.failure() ?? "")")
        cover[size / 2] = 8
        let queue = try DatabaseQueue(path: s.staged.path)
        try queue.write { db in
            try db.execute(
                sql: "UPDATE ZITEM SET ZCOVER = ? WHERE length(ZCOVER) = ?", arguments: [cover, size])
            #expect(db.changesCount == 1)
        }
        try queue.close()
        #expect(s.failure()?.contains("the content of Book differs") == true, "\(s.failure() ?? "passed")")
    }

    @Test("a missing row is refused by the row counts")
    func missingRow() throws {
        let s = try Staged()
        // Its join rows go with it, so no invariant of check is broken: only the counts can tell.
        try s.sql(
            "DELETE FROM Z_1TAGS WHERE Z_1ITEMS = (SELECT MAX(Z_PK) FROM ZITEM WHERE Z_ENT = 3); DELETE FROM ZITEM WHERE Z_PK = (SELECT MAX(Z_PK) FROM ZITEM WHERE Z_ENT = 3)"
        )
        #expect(s.failure()?.contains("rows per entity differ") == true, "\(s.failure() ?? "passed")")
    }

    @Test("an index out of step with its table is found by the integrity check (split or not) and refused")
    func indexOutOfStep() throws {
        let s = try Staged()
        // The index's entries were built for ZAUTHOR; its definition now says ZSHELF.
        try s.sql(
            "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = 'CREATE INDEX ZITEM_ZAUTHOR_INDEX ON ZITEM (ZSHELF)' WHERE name = 'ZITEM_ZAUTHOR_INDEX'; PRAGMA writable_schema = OFF"
        )
        #expect(
            try Self.sqlite(s.staged, "PRAGMA quick_check") == ["ok"],
            "quick_check does not compare indexes: only the per-table part can find this")
        let lines = try Self.split(s.staged)
        #expect(lines.contains { $0.contains("missing from index ZITEM_ZAUTHOR_INDEX") }, "\(lines)")
        #expect(s.failure() == "integrity_check failed")
    }

    @Test("a page no B-tree uses is found by the integrity check (the split one: its store-wide part) and refused")
    func pageNeverUsed() throws {
        let s = try Staged()
        try s.sql(
            "PRAGMA auto_vacuum = NONE; VACUUM; CREATE TABLE scratch (x); INSERT INTO scratch SELECT randomblob(3000) FROM ZITEM; DROP TABLE scratch"
        )
        #expect(try Self.sqlite(s.staged, "PRAGMA freelist_count").first.flatMap { Int($0) } ?? 0 > 0)
        // Forget the freelist in the header (trunk page and count): its pages now belong to nothing.
        let handle = try FileHandle(forUpdating: s.staged)
        try handle.seek(toOffset: 32)
        try handle.write(contentsOf: Data(count: 8))
        try handle.close()
        let tables = try Self.sqlite(s.staged, "SELECT name FROM sqlite_master WHERE type = 'table'")
        for table in tables {
            #expect(
                try Self.sqlite(s.staged, "PRAGMA integrity_check(\(table.sqlIdentifier))") == ["ok"],
                "per-table checks leave page accounting out: \(table)")
        }
        let lines = try Self.split(s.staged)
        #expect(lines.contains { $0.contains("never used") }, "\(lines)")
        #expect(s.failure() == "integrity_check failed")
    }

    @Test("a to-one key to no object (a check invariant at error level) is refused though rows and digests match")
    func danglingToOne() throws {
        let s = try Staged()
        try s.sql(
            "UPDATE ZITEM SET ZAUTHOR = 9999 WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM WHERE ZAUTHOR IS NOT NULL)")
        let detail = s.failure()
        #expect(detail != nil && detail != "integrity_check failed", "\(detail ?? "passed")")
    }

    @Test(
        "the verification leaves out only the search for duplicates, which can never refuse a result (issue 33)"
    )
    func duplicatesAreNeverAVerdict() throws {
        // The verifier skips `duplicateProblems` because its findings are warnings and the verdict
        // reads errors only; were they ever errors, the skip would weaken the verification.
        #expect(ProblemCode.duplicateObjects.severity != .error)
        // A dangling join row is still found by the same inspection that skips duplicates.
        let s = try Staged()
        try s.sql("INSERT INTO Z_1TAGS (Z_1ITEMS, Z_6TAGS) VALUES (999999, 999999)")
        let detail = s.failure()
        #expect(detail?.hasPrefix("dangling-join-row") == true, "\(detail ?? "passed")")
    }

    /// Drops the freelist from the header of the store at `url` after giving it free pages: pages
    /// that belong to no B-tree, which only the store-wide part of a check can see.
    static func orphanPages(_ url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE; PRAGMA auto_vacuum = NONE; VACUUM")
            try db.execute(
                sql:
                    "CREATE TABLE scratch (x); INSERT INTO scratch SELECT randomblob(3000) FROM ZITEM; DROP TABLE scratch"
            )
        }
        try queue.close()
        let handle = try FileHandle(forUpdating: url)
        try handle.seek(toOffset: 32)
        try handle.write(contentsOf: Data(count: 8))
        try handle.close()
    }

    @Test(
        "none checks what it reads: a source damaged elsewhere gives an empty store, damage in Z_PRIMARYKEY is refused")
    func noneChecksWhatItReads() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/A.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        try Self.orphanPages(tmp.path("src/A.sqlite"))
        #expect(try Self.sqlite(tmp.path("src/A.sqlite"), "PRAGMA quick_check").first != "ok")
        // copy-entities reads every row: the whole store is checked and the source refused.
        #expect {
            try Migrate.run(tmp.path("src/A.sqlite"), tmp.path("out/copy.sqlite"), strategy: "copy-entities")
        } throws: { error in
            if case .sourceDamaged? = error as? USMError { return true }
            return false
        }
        // none reads the schema and the bookkeeping tables, which are sound: its result is verified as always.
        let report = try Migrate.run(tmp.path("src/A.sqlite"), tmp.path("out/none.sqlite"), strategy: "none")
        #expect(report.verification.integrity == "ok")
        #expect(try Migrate.check(tmp.path("out/none.sqlite")).errors.isEmpty)

        // A damaged page in a table none reads is refused.
        try FixtureStore.write(to: tmp.path("src2/B.sqlite"))
        let (root, pageSize) = try {
            let queue = try DatabaseQueue(path: tmp.path("src2/B.sqlite").path)
            defer { try? queue.close() }
            return try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                return (
                    try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'Z_PRIMARYKEY'") ?? 0,
                    try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                )
            }
        }()
        #expect(root > 1)
        let handle = try FileHandle(forUpdating: tmp.path("src2/B.sqlite"))
        try handle.seek(toOffset: UInt64((root - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0xEE, count: 64))
        try handle.close()
        #expect {
            try Migrate.run(tmp.path("src2/B.sqlite"), tmp.path("out/none2.sqlite"), strategy: "none")
        } throws: { error in
            if case .sourceDamaged? = error as? USMError { return true }
            return false
        }
        #expect(!FileManager.default.fileExists(atPath: tmp.path("out/none2.sqlite").path))
    }

    @Test(
        "a merge whose stores hold one external-data file name with two contents is refused for that, though the check runs beside the copy"
    )
    func externalDataConflictComesFirst() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/A.sqlite"))
        var options = FixtureStore.Options()
        options.storeUUID = "0C6E1C2A-7B1D-4E55-9A3F-5D2B8C9E1F00"
        try FixtureStore.write(to: tmp.path("dst/B.sqlite"), options)
        let folder = tmp.path("dst/.B_SUPPORT/_EXTERNAL_DATA")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let sourceFolder = tmp.path("src/.A_SUPPORT/_EXTERNAL_DATA")
        #expect(names == (try FileManager.default.contentsOfDirectory(atPath: sourceFolder.path)).sorted())
        let name = try #require(names.first)
        try Data("not the source's bytes".utf8).write(to: folder.appendingPathComponent(name))
        let before = try Data(contentsOf: tmp.path("dst/B.sqlite"))
        // The check's external-data invariants wait for the copy; its refusal is the copy's own.
        #expect {
            try Migrate.run(
                tmp.path("src/A.sqlite"), tmp.path("dst/B.sqlite"), mode: .merge, snapshots: tmp.path("snapshots"))
        } throws: { error in
            guard case let .verificationFailed(_, detail)? = error as? USMError else { return false }
            return detail.contains(name) && detail.contains("different content")
        }
        #expect(try Data(contentsOf: tmp.path("dst/B.sqlite")) == before)
    }

    @Test(
        "a source whose quick_check fails is refused as damaged when the check runs beside the strategy (issue 33)",
        arguments: ["ios", "copy-entities"])
    func damageFoundBesideTheStrategy(strategy: String) throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/A.sqlite"))
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        // Pages no B-tree holds: nothing a strategy reads fails, only the store-wide quick_check sees them.
        try Self.orphanPages(tmp.path("src/A.sqlite"))
        try CaptureCache.scope {
            let cache = try #require(CaptureCache.current)
            // Not the result's verification (a page copy carries the orphans along, and its
            // integrity_check would fail): the source's own refusal, exit 65, the capture's message.
            #expect {
                try Migrate.run(tmp.path("src/A.sqlite"), tmp.path("out/B.sqlite"), strategy: strategy)
            } throws: { error in
                guard case let .sourceDamaged(path, detail)? = error as? USMError else { return false }
                return path == tmp.path("src/A.sqlite").path && detail.hasPrefix("SQLite quick_check failed")
            }
            #expect(cache.counts.checksBeside == 1)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path("out").path).isEmpty)
    }

    /// `check`'s inspection of `url` with the integrity check split or not.
    static func inspect(_ url: URL, split: Bool) -> StoreReport {
        var inspector = StoreInspector(depth: .check)
        inspector.splitsIntegrityCheck = split
        let files = StoreFileSet(main: url)
        return inspector.inspect(files, role: .store, confinement: Confinement(root: files.directory), privateCopy: url)
    }

    @Test("the split pays only with two cores idle beside the reading one (issue 33): never on 2 cores")
    func splitOnlyWhenItPays() {
        #expect(!IntegrityCheck.splitPays(cores: 2, load: 0))
        #expect(!IntegrityCheck.splitPays(cores: 4, load: 1.5))
        #expect(IntegrityCheck.splitPays(cores: 4, load: 0.5))
        #expect(IntegrityCheck.splitPays(cores: 16, load: 3))
        #expect(!IntegrityCheck.splitPays(cores: 16, load: nil), "an unknown load is not an idle machine")
        #expect(!IntegrityCheck.splitPays(cores: 16, load: .nan))
        // One connection's cache: a tenth of the store, between the split ones' together and 12 MiB.
        #expect(IntegrityCheck.singleCacheKiB(forBytes: 0) == 2 * IntegrityCheck.cacheKiB)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: 47 << 20) == 2 * IntegrityCheck.cacheKiB)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: 100 << 20) == 10_240)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: 155 << 20) == 12_288)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: .max) == 12_288)
        // With the process's memory known, up to 16 MiB where the 64 MiB budget leaves room
        // beside the rest of a verification (8 MiB), never below 12 MiB, never over a tenth.
        #expect(IntegrityCheck.singleCacheKiB(forBytes: 155 << 20, resident: 36 << 20) == 15_872)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: .max, resident: 36 << 20) == 16_384)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: .max, resident: 42 << 20) == 14_336)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: .max, resident: 44 << 20) == 12_288)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: .max, resident: 1 << 40) == 12_288)
        #expect(IntegrityCheck.singleCacheKiB(forBytes: 47 << 20, resident: 0) == 2 * IntegrityCheck.cacheKiB)
        #expect(Memory.residentBytes().map { $0 > 1 << 20 } ?? true)
        // Its own thread only with room for its cache and 10 MiB beside it.
        #expect(IntegrityCheck.roomForItsOwnThread(resident: 38 << 20, cacheKiB: 16_384))
        #expect(!IntegrityCheck.roomForItsOwnThread(resident: 39 << 20, cacheKiB: 16_384))
        #expect(IntegrityCheck.roomForItsOwnThread(resident: 46 << 20, cacheKiB: 8_192))
        #expect(!IntegrityCheck.roomForItsOwnThread(resident: 44 << 20, cacheKiB: 12_288))
        #expect(!IntegrityCheck.roomForItsOwnThread(resident: nil, cacheKiB: 2_048))
    }

    @Test("a job on its own thread starts at once while the dispatch pool is busy (issue 33)")
    func ownThreadStartsAtOnce() throws {
        let release = DispatchSemaphore(value: 0)
        let busy = ProcessInfo.processInfo.activeProcessorCount * 4
        for _ in 0..<busy { DispatchQueue.global(qos: .userInitiated).async { release.wait() } }
        // The pool is let go as soon as the job answered, or after 5 s whatever happens (a job
        // queued there would end only then).
        let released = Mutex(false)
        let letGo: @Sendable () -> Void = {
            let first = released.withLock { done in
                defer { done = true }
                return !done
            }
            guard first else { return }
            for _ in 0..<busy { release.signal() }
        }
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 5)
            letGo()
        }
        let started = Date()
        let own = Background(ownThread: true) { 42 }
        let answer = try own.value()
        let waited = Date().timeIntervalSince(started)
        letGo()
        #expect(answer == 42)
        #expect(waited < 2.5)
    }

    @Test("one integrity_check and the split one find the same damage: an index out of step, a page never used")
    func unsplitCheckFindsWhatTheSplitFinds() throws {
        let index = try Staged()
        try index.sql(
            "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = 'CREATE INDEX ZITEM_ZAUTHOR_INDEX ON ZITEM (ZSHELF)' WHERE name = 'ZITEM_ZAUTHOR_INDEX'; PRAGMA writable_schema = OFF"
        )
        let pages = try Staged()
        try Self.orphanPages(pages.staged)
        let clean = try Staged()
        for split in [false, true] {
            #expect(Self.inspect(clean.staged, split: split).integrity == "ok")
            let a = Self.inspect(index.staged, split: split)
            #expect(a.integrity == "failed")
            #expect(
                a.problems.contains { $0.code == .integrity && $0.message.contains("ZITEM_ZAUTHOR_INDEX") },
                "split \(split): \(a.problems.map(\.message))")
            let b = Self.inspect(pages.staged, split: split)
            #expect(b.integrity == "failed")
            #expect(
                b.problems.contains { $0.code == .integrity && $0.message.contains("never used") },
                "split \(split): \(b.problems.map(\.message))")
        }
    }

    @Test(
        "an error the source has is inherited, told without checking the source's pages again; a new one is refused"
    )
    func inheritedWithoutASecondIntegrityCheck() throws {
        // The source holds a to-one key to no object: its copy inherits it, the verification passes.
        let s = try Staged { url in
            let queue = try DatabaseQueue(path: url.path)
            try queue.write { db in
                try db.execute(
                    sql:
                        "UPDATE ZITEM SET ZAUTHOR = 9999 WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM WHERE ZAUTHOR IS NOT NULL)"
                )
            }
            try queue.close()
        }
        let report = try s.verify()
        #expect(report.verification.problems.isEmpty)
        #expect(report.verification.inherited.contains { $0.code == .danglingToOne })
        // What the verifier asks of the source: check's errors without its integrity_check.
        let inherited = s.source.inheritedCheck()
        #expect(inherited.integrity == "not-run")
        #expect(inherited.integrityCheck == nil)
        let full = s.source.fullCheck()
        #expect(full.integrity == "ok")
        let errors = { (r: StoreReport) in Set(r.problems.filter { $0.severity == .error }.map(\.code)) }
        #expect(errors(inherited) == errors(full))
        #expect(errors(inherited).contains(.danglingToOne))
        // A join row to no object is new in the result: refused.
        try s.sql("INSERT INTO Z_1TAGS (Z_1ITEMS, Z_6TAGS) VALUES (999999, 999999)")
        #expect(s.failure()?.hasPrefix("dangling-join-row") == true, "\(s.failure() ?? "passed")")
    }
}
