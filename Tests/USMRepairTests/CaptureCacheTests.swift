import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// One capture per store per command (issue 33): the build that follows a plan's comparison works
/// from the comparison's private copies and digests, and never from a capture older than the store.
@Suite("migration: each store captured once per command", .timed)
struct CaptureCacheTests {
    struct Stores {
        let tmp: TempDir
        let local: StoreFileSet
        let cloud: StoreFileSet

        init() throws {
            tmp = try TempDir()
            var options = FixtureStore.Options()
            options.walOnlyBooks = 2
            try FixtureStore.write(to: tmp.path("local/Local.sqlite"), FixtureStore.Options())
            try FixtureStore.write(to: tmp.path("cloud/Cloud.sqlite"), options)
            try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
            local = StoreFileSet(main: tmp.path("local/Local.sqlite"))
            cloud = StoreFileSet(main: tmp.path("cloud/Cloud.sqlite"))
        }
    }

    @Test("the build after the comparison copies, checks and hashes the source no second time")
    func buildReusesTheComparisonsCapture() throws {
        let s = try Stores()
        try CaptureCache.scope {
            let cache = try #require(CaptureCache.current)
            let comparison = try StoreComparison.compare(s.local, s.cloud)
            #expect(cache.counts == CaptureCache.Counts(captures: 2, digestReads: 1, quickChecksReused: 0))
            let report = try Migrate.engine.build(source: s.cloud, staged: s.tmp.path("out/Local.sqlite"))
            // Nothing captured or hashed again, and the provenance is the comparison's digest.
            #expect(cache.counts == CaptureCache.Counts(captures: 2, digestReads: 1, quickChecksReused: 0))
            #expect(report.source.digest == comparison.digestB)
            #expect(report.verification.digestsCompared > 0)
        }
    }

    @Test("a store written to after the comparison is captured again: the build carries its new content")
    func changedStoreIsCapturedAgain() throws {
        let s = try Stores()
        try CaptureCache.scope {
            let cache = try #require(CaptureCache.current)
            let comparison = try StoreComparison.compare(s.local, s.cloud)
            let queue = try DatabaseQueue(path: s.cloud.main.path)
            try queue.write { db in
                try db.execute(
                    sql: "UPDATE ZITEM SET ZTITLE = 'written after the plan' WHERE Z_PK = (SELECT MIN(Z_PK) FROM ZITEM)"
                )
            }
            try queue.close()
            let report = try Migrate.engine.build(source: s.cloud, staged: s.tmp.path("out/Local.sqlite"))
            // Captured again for the build, its quick_check beside the strategy (copy-entities).
            #expect(
                cache.counts
                    == CaptureCache.Counts(captures: 3, digestReads: 2, quickChecksReused: 0, checksBeside: 1))
            #expect(report.source.digest != nil)
            #expect(report.source.digest != comparison.digestB)
            let out = try DatabaseQueue(path: s.tmp.path("out/Local.sqlite").path)
            defer { try? out.close() }
            let titles = try out.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE ZTITLE = 'written after the plan'")
            }
            #expect(titles == 1)
        }
    }

    @Test("the layout's quick_check of a store stands for the capture's while the store is unchanged")
    func quickCheckOncePerStore() throws {
        let s = try Stores()
        try CaptureCache.scope {
            let cache = try #require(CaptureCache.current)
            let inspected = StoreInspector(depth: .status).inspect(
                s.cloud, role: .store, confinement: Confinement(root: s.cloud.directory))
            #expect(inspected.integrity == "ok")
            let captured = try cache.capture(s.cloud, role: "source")
            #expect(captured.report.integrity == "ok" && captured.report.integrityCheck == "quick_check")
            #expect(cache.counts.quickChecksReused == 1)
        }
    }

    @Test("a store damaged after the layout's quick_check is checked again by the capture, and refused")
    func damagedAfterTheQuickCheck() throws {
        let s = try Stores()
        // Fold the -wal in, so that the damage lands in pages the store reads.
        let queue = try DatabaseQueue(path: s.local.main.path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
        try CaptureCache.scope {
            let cache = try #require(CaptureCache.current)
            let inspected = StoreInspector(depth: .status).inspect(
                s.local, role: .store, confinement: Confinement(root: s.local.directory))
            #expect(inspected.integrity == "ok")
            // Every page after the first two overwritten in place (same size, new mtime and ctime).
            let handle = try FileHandle(forUpdating: s.local.main)
            let size = try handle.seekToEnd()
            let pageSize: UInt64 = 4096
            var page = pageSize * 2
            while page < size {
                try handle.seek(toOffset: page + 8)
                try handle.write(contentsOf: Data(repeating: 0xA5, count: 64))
                page += pageSize
            }
            try handle.close()
            #expect(throws: USMError.self) { _ = try cache.capture(s.local, role: "source") }
            #expect(cache.counts.quickChecksReused == 0)
        }
    }

    @Test(
        "ios and copy-entities check their source beside the strategy; a dry run, none and a recipe before (issue 33)")
    func checkBesideTheStrategy() throws {
        let s = try Stores()
        for (strategy, beside) in [("ios", 1), ("copy-entities", 1), ("none", 0)] {
            try CaptureCache.scope {
                let cache = try #require(CaptureCache.current)
                let staged = s.tmp.path("out/\(strategy).sqlite")
                let report = try Migrate.engine.build(source: s.cloud, staged: staged, strategy: strategy)
                #expect(cache.counts.checksBeside == beside, "\(strategy)")
                #expect(report.verification.integrity == "ok")
                // Settled: a later user of the same capture in this command finds it checked.
                let again = try cache.capture(s.cloud, role: "source")
                #expect(again.report.integrity == "ok")
                #expect(cache.counts.captures == (strategy == "none" ? 2 : 1), "\(strategy)")
            }
        }
        try CaptureCache.scope {
            let cache = try #require(CaptureCache.current)
            _ = try Migrate.engine.preview(
                source: s.cloud, shownAs: StoreFileSet(main: s.tmp.path("out/dry.sqlite")), strategy: "ios",
                options: MigrationOptions(), mergeInto: nil, mode: .create)
            #expect(cache.counts.checksBeside == 0)
            // A recipe's SQL is never run on a store not yet checked.
            let recipe = try Migrate.engine.build(
                source: s.cloud, staged: s.tmp.path("out/manual.sqlite"), strategy: "manual",
                options: RecipeTests.options("fix-counters"))
            #expect(recipe.recipe == "fix-counters")
            #expect(cache.counts.checksBeside == 0)
            #expect(cache.counts.captures == 1)
        }
    }

    @Test("the copies a command captured are removed when it ends")
    func copiesRemovedAtTheEnd() throws {
        let s = try Stores()
        let copy = try CaptureCache.scope { () throws -> URL in
            let cache = try #require(CaptureCache.current)
            let copy = try cache.capture(s.cloud, role: "source").copy
            #expect(FileManager.default.fileExists(atPath: copy.path))
            return copy
        }
        #expect(!FileManager.default.fileExists(atPath: copy.path))
    }
}

@Suite("planning: a replacement's comparison does not match objects by identity", .timed)
struct ReplacementComparisonTests {
    @Test(
        "without matching, the counts, the losses and the digest are the merge comparison's; only matches are left out")
    func replacementComparison() throws {
        let s = try CaptureCacheTests.Stores()
        let full = try StoreComparison.compare(s.local, s.cloud)
        let replacing = try StoreComparison.compare(s.local, s.cloud, matching: false)
        #expect(!full.matchedInA.isEmpty)
        #expect(replacing.matchedInA.isEmpty)
        #expect(replacing.objectsA == full.objectsA && replacing.objectsB == full.objectsB)
        #expect(replacing.missingFromB == full.missingFromB && replacing.presentInA == full.presentInA)
        #expect(replacing.digestB == full.digestB)
    }
}
