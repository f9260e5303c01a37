import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `migrate-store --overwrite` and `restore --to` are plans run by the one executor: killed after
/// any step, `recover` gives back the old state byte for byte, or the new one, with nothing of
/// ours left beside it. (Killed at random instants by a real SIGKILL: `KillTests`.) (Origin: the
/// "one mechanism for every change on disk" round; the file was OneMechanismTests.)
@Suite("recovery after every step: migrate-store --overwrite and restore --to")
struct StepRecoveryTests {
    /// A source and an existing destination store in folders of their own.
    static func stores(_ tmp: TempDir, books: Int = 6) throws -> (source: URL, destination: URL) {
        var s = FixtureStore.Options()
        s.books = books
        s.walOnlyBooks = 2
        s.seed = 3
        try FixtureStore.write(to: tmp.path("src/S.sqlite"), s)
        var d = FixtureStore.Options()
        d.storeUUID = "11111111-2222-4333-8444-555555555555"
        try FixtureStore.write(to: tmp.path("dst/D.sqlite"), d)
        return (tmp.path("src/S.sqlite"), tmp.path("dst/D.sqlite"))
    }

    static func planSteps(_ source: URL, _ destination: URL) throws -> [Plan.Step] {
        let request = MigrationRequest(
            source: StoreFileSet(main: source), destination: StoreFileSet(main: destination), strategy: "copy-entities",
            mode: .overwrite)
        let executor = PlanExecutor(
            snapshotDirectory: Migrate.state.appendingPathComponent("snapshots"),
            records: OperationRecords(stateFolder: Migrate.state))
        return try MigrateStoreChange(request: request, engine: Migrate.engine, executor: executor).prepare(
            dryRun: true
        )
        .plan.steps
    }

    @Test(
        "migrate-store --overwrite killed after every step: recover gives the old store byte for byte, or the new one; nothing left"
    )
    func migrateStoreKilledAfterEveryStep() throws {
        let probe = try TempDir()
        let (ps, pd) = try Self.stores(probe)
        let steps = try Self.planSteps(ps, pd)
        let commit = try #require(steps.firstIndex { $0.action == .commit })
        let clean = USM.run(["migrate-store", ps.path, pd.path, "--overwrite", "--yes"])
        #expect(clean.status == 0, "\(clean.stderr)")
        let newRows = try Migrate.check(pd).rows
        for n in 0..<(steps.count - 1) {
            let tmp = try TempDir()
            let (source, destination) = try Self.stores(tmp)
            let before = try TreeSnapshot(tmp.path("dst"))
            let killed = USM.run(
                ["migrate-store", source.path, destination.path, "--overwrite", "--yes"], hooks: .interrupt(after: n))
            #expect(killed.status == PlanExecutor.Hooks.interruptedStatus, "step \(n): \(killed.stderr)")
            let status = USM.run(["status", "--store", destination.path, "--json"])
            let codes = ((status.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(codes.contains("interrupted-operation"), "step \(n): status reports it: \(codes)")
            let recovered = USM.run(["recover", "--store", destination.path, "--json"])
            #expect(recovered.status == 0, "step \(n): \(recovered.stderr)")
            let outcome = (recovered.json["recovered"] as? [[String: Any]])?.first?["outcome"] as? String
            if n < commit {
                #expect(outcome == "undone", "step \(n)")
                #expect(try TreeSnapshot(tmp.path("dst")) == before, "step \(n): the old store byte for byte")
            } else {
                #expect(outcome == "finished", "step \(n)")
                #expect(try Migrate.check(destination).rows == newRows, "step \(n): the new store")
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: tmp.path("dst").path).allSatisfy {
                    !$0.hasPrefix(".usm-repair")
                },
                "step \(n): nothing of ours left")
        }
    }

    @Test(
        "an optional install never made (no external-data folder): killed after it, recover leaves what came to lie at its place"
    )
    func optionalInstallNeverMadeKeepsWhatIsThere() throws {
        let tmp = try TempDir()
        // No external data on either side: the staged store needs no external-data folder.
        var s = FixtureStore.Options()
        s.externalCovers = 0
        try FixtureStore.write(to: tmp.path("src/S.sqlite"), s)
        var d = FixtureStore.Options()
        d.externalCovers = 0
        d.storeUUID = "11111111-2222-4333-8444-555555555555"
        try FixtureStore.write(to: tmp.path("dst/D.sqlite"), d)
        let (source, destination) = (tmp.path("src/S.sqlite"), tmp.path("dst/D.sqlite"))
        let steps = try Self.planSteps(source, destination)
        let optional = try #require(
            steps.firstIndex {
                if case .install(_, _, true) = $0.action { return true }
                return false
            })
        guard case let .install(_, place, _) = steps[optional].action else { return }
        #expect(FileStatus.lookup(place) == nil, "the destination has no external-data folder")
        let killed = USM.run(
            ["migrate-store", source.path, destination.path, "--overwrite", "--yes"],
            hooks: .interrupt(after: optional))
        #expect(killed.status == PlanExecutor.Hooks.interruptedStatus, "\(killed.stderr)")
        #expect(FileStatus.lookup(place) == nil, "nothing was installed there")
        // The customer's folder comes to lie where nothing was installed (the app, a copy back).
        let keep = URL(fileURLWithPath: place).appendingPathComponent("customer.bin")
        try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: true)
        try Data("the customer's".utf8).write(to: keep)
        let recovered = USM.run(["recover", "--store", destination.path, "--json"])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(
            (recovered.json["recovered"] as? [[String: Any]])?.first?["outcome"] as? String == "undone",
            "\(recovered.stdout)")
        #expect(
            FileManager.default.contents(atPath: keep.path) == Data("the customer's".utf8),
            "the undo moved only what the operation installed")
    }

    @Test(
        "restore --to killed after every step: recover gives the old folder byte for byte, or the restored one; nothing left"
    )
    func restoreToKilledAfterEveryStep() throws {
        func setup(_ tmp: TempDir) throws -> (archive: URL, target: URL) {
            let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
            let archive = tmp.path("b.tar.zst")
            #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
            let target = tmp.path("t")
            try FileManager.default.createDirectory(
                at: target.appendingPathComponent("container"), withIntermediateDirectories: true)
            try Data("older work".utf8).write(to: target.appendingPathComponent("container/notes.txt"))
            return (archive, target)
        }
        var n = 0
        var sawOld = false
        var sawNew = false
        while true {
            let tmp = try TempDir()
            let (archive, target) = try setup(tmp)
            let before = try TreeSnapshot(target)
            // What a clean run of the same archive makes, for comparison.
            let reference = tmp.path("reference")
            try FileManager.default.copyItem(at: target, to: reference)
            #expect(USM.run(["restore", archive.path, "--to", reference.path, "--yes"]).status == 0)
            let restored = try TreeSnapshot(reference)
            let killed = USM.run(["restore", archive.path, "--to", target.path, "--yes"], hooks: .interrupt(after: n))
            if killed.status == 0 { break }  // past the last step: nothing to stop
            #expect(killed.status == PlanExecutor.Hooks.interruptedStatus, "step \(n): \(killed.stderr)")
            let recovered = USM.run(["recover", "--app-dir", target.path, "--json"])
            #expect(recovered.status == 0, "step \(n): \(recovered.stderr)")
            let state = try TreeSnapshot(target)
            if state == before {
                sawOld = true
            } else {
                sawNew = true
                #expect(
                    state == restored,
                    "step \(n): neither the old folder nor the restored one: \(state.differences(from: restored))")
            }
            #expect(!state.entries.keys.contains { $0.contains(".usm-repair") }, "step \(n): nothing of ours left")
            n += 1
        }
        #expect(sawOld && sawNew && n >= 5, "steps walked: \(n)")
    }
}
