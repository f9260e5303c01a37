import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Merges and `dedupe` beyond identity itself (issue 29): models that differ refused while
/// planning, `matched` in the ledger, ordered relationships, external data, history rows.
@Suite("merges and dedupe")
struct MergeIdentityTests {
    typealias Fixture = OperationTests.Fixture

    static func snapshots(_ dir: URL) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
    }

    @Test("a merge of stores whose models differ is refused while planning: dry run and run exit alike, no snapshot")
    func modelsDiffer() throws {
        let f = try Fixture()
        // The local store has no Tag entity: the cloud store's tags have nowhere to go.
        try FixtureStore.mutate(
            f.paths.localStore, "DELETE FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'; DROP TABLE ZTAG; DROP TABLE Z_1TAGS;")
        let before = try f.snapshot()
        let snaps = f.tmp.path("snaps")
        let dry = try f.run(["migrate", "cloud-to-local", "--merge", "--dry-run", "--json"])
        let run = try f.run(["migrate", "cloud-to-local", "--merge", "--yes", "--json", "--snapshot-dir", snaps.path])
        #expect(
            dry.status != 0 && dry.status == run.status, "\(dry.status) \(dry.stderr) / \(run.status) \(run.stderr)")
        #expect(dry.stderr.contains("Tag"), "\(dry.stderr)")
        #expect(Self.snapshots(snaps).isEmpty, "no snapshot written: \(Self.snapshots(snaps))")
        #expect(try f.snapshot() == before)
        // migrate-store --into alike.
        let tmp = try TempDir()
        try MergeFixture.write(to: tmp.path("A.sqlite"), .a, prefix: "src")
        try FixtureStore.write(to: tmp.path("d/B.sqlite"))
        try FixtureStore.mutate(
            tmp.path("d/B.sqlite"),
            "DELETE FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'; DROP TABLE ZTAG; DROP TABLE Z_1TAGS;")
        let args = ["migrate-store", tmp.path("A.sqlite").path, tmp.path("d/B.sqlite").path, "--into", "--json"]
        let storeDry = USM.run(args + ["--dry-run"])
        let storeRun = USM.run(args + ["--snapshot-dir", tmp.path("snaps").path])
        #expect(storeDry.status == 2 && storeRun.status == 2, "\(storeDry.stderr) / \(storeRun.stderr)")
        #expect(storeDry.stderr.contains("differ"), "\(storeDry.stderr)")
        #expect(Self.snapshots(tmp.path("snaps")).isEmpty, "\(Self.snapshots(tmp.path("snaps")))")
    }
}
