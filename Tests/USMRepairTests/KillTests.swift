import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// Kills at random instants, with a real SIGKILL (a process: the point), during an operation on a
/// larger store and during `migrate-store --overwrite`. Kills after every step run in process
/// (`StepRecoveryTests`, the fault walk).
@Suite("operations under SIGKILL", .timed)
struct KillTests {
    @Test(
        "SIGKILL at random instants (a real process) during rebuild and migrate-store --overwrite: recover gives back the old state or the new one, nothing lost",
        .timeLimit(.minutes(10)))
    func randomKills() throws {
        try Self.rebuildRandomKills()
        try Self.migrateStoreRandomKills()
    }

    /// `rebuild --from local --discard-cloud` on a larger store, killed 8 times: recover gives the
    /// old state or the new one, nothing of ours left, every book (WAL-only ones included) kept.
    static func rebuildRandomKills() throws {
        let template = try OperationTests.Fixture {
            $0.local.books = 20_000
            $0.local.walOnlyBooks = 4_000
            $0.local.externalCovers = 50
            $0.corruptedUUID = $0.activeUUID
        }
        let clean = try OperationTests.Fixture(copying: template)
        let started = Date()
        try OperationTests.apply(clean, ["rebuild", "--from", "local", "--discard-cloud"])
        let duration = Date().timeIntervalSince(started)
        let newState = try clean.snapshot()
        var rng = SeededRandom(seed: 7)
        var outcomes: [String] = []
        for _ in 0..<8 {
            let f = try OperationTests.Fixture(copying: template)
            let oldState = try f.snapshot()
            let process = try CLI.launch(["rebuild", "--from", "local", "--discard-cloud", "--yes"] + f.flags)
            Thread.sleep(forTimeInterval: duration * Double(rng.next() % 1000) / 1000)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let recovered = try f.run(["recover", "--json"])
            #expect(recovered.status == 0, "\(recovered.stderr)")
            let state = try f.snapshot()
            if state == oldState {
                outcomes.append("old")
            } else {
                #expect(OperationTests.contentDifferences(state, newState) == [], "neither the old nor the new state")
                outcomes.append("new")
            }
            for folder in f.paths.folders {
                #expect(!(try TreeSnapshot(folder)).entries.keys.contains { $0.contains(".usm-repair") })
            }
            // Nothing lost: the local store holds every book, WAL-only ones included.
            let local = try #require(try f.status().stores.first { $0.role == .local })
            #expect(local.entities.first { $0.name == "Book" }?.rows == 24_000)
        }
        print("random kills: \(outcomes.joined(separator: " ")) (clean run \(String(format: "%.2f", duration)) s)")
    }

    /// `migrate-store --overwrite` killed 4 times: recover gives the old store byte for byte or the
    /// new one, nothing of ours left beside it.
    static func migrateStoreRandomKills() throws {
        let probe = try TempDir()
        let (ps, pd) = try StepRecoveryTests.stores(probe, books: 30_000)
        let started = Date()
        #expect(USM.run(["migrate-store", ps.path, pd.path, "--overwrite", "--yes"]).status == 0)
        let duration = Date().timeIntervalSince(started)
        let newRows = try Migrate.check(pd).rows
        var rng = SeededRandom(seed: 11)
        var outcomes: [String] = []
        for _ in 0..<4 {
            let tmp = try TempDir()
            let (source, destination) = try StepRecoveryTests.stores(tmp, books: 30_000)
            let before = try TreeSnapshot(tmp.path("dst"))
            let process = try CLI.launch(["migrate-store", source.path, destination.path, "--overwrite", "--yes"])
            Thread.sleep(forTimeInterval: duration * Double(rng.next() % 1000) / 1000)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(USM.run(["recover", "--store", destination.path]).status == 0)
            if try TreeSnapshot(tmp.path("dst")) == before {
                outcomes.append("old")
            } else {
                #expect(try Migrate.check(destination).rows == newRows, "neither the old nor the new store")
                outcomes.append("new")
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: tmp.path("dst").path).allSatisfy {
                    !$0.hasPrefix(".usm-repair")
                })
        }
        print(
            "migrate-store random kills: \(outcomes.joined(separator: " ")) (clean run \(String(format: "%.2f", duration)) s)"
        )
    }
}
