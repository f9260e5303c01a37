import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Salvage in the advice (issue 17): where the store the next launch opens or seeds from is
/// damaged, `status` and `check` propose the `--salvage` operation that takes the customer where
/// they were going, typed so that it runs as given; it runs, and the launch it leaves is the one
/// the operation is for. A damaged store the next launch does not use gets the salvage command only.
@Suite("salvage: advice", .timed)
struct SalvageAdviceTests {
    typealias Fixture = OperationTests.Fixture

    /// The advice of `status --json` and of `check --json`.
    static func advice(_ f: Fixture) throws -> (status: [String], check: [String]) {
        let status = try f.run(["status", "--json"])
        let check = try f.run(["check", "--json"])
        return (
            try #require(status.json["advice"] as? [String], "\(status.stderr)"),
            try #require(check.json["advice"] as? [String], "\(check.stderr)")
        )
    }

    /// The one command of `advice` that starts with `prefix`, as typed (shell words, `--dry-run` last).
    static func proposed(_ prefix: [String], in advice: [String], sourceLocation: SourceLocation = #_sourceLocation)
        throws -> [String]
    {
        let found = advice.flatMap(AdviceTests.commands).filter { Array($0.prefix(prefix.count)) == prefix }
        #expect(found.count == 1, "\(prefix) in \(advice)", sourceLocation: sourceLocation)
        return try #require(found.first, sourceLocation: sourceLocation)
    }

    /// Runs `words` (ending in `--dry-run`) as typed, then with `--yes` instead: both exit 0; the run's
    /// own prediction matches what it found; `status` afterwards predicts `state` and `outcome`.
    static func run(
        _ words: [String], _ f: Fixture, state: String, outcome: NextLaunch.Outcome,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> StatusReport {
        #expect(words.last == "--dry-run", sourceLocation: sourceLocation)
        let before = try f.snapshot()
        let dry = USM.run(words + ["--json"])
        #expect(dry.status == 0, "`\(words.joined(separator: " "))`: \(dry.stderr)", sourceLocation: sourceLocation)
        #expect(dry.json["noOp"] as? Bool == false, sourceLocation: sourceLocation)
        #expect(try f.snapshot() == before, "the dry run changed a byte", sourceLocation: sourceLocation)
        let r = USM.run(words.dropLast() + ["--yes", "--json"])
        #expect(r.status == 0, "`\(words.joined(separator: " "))` --yes: \(r.stderr)", sourceLocation: sourceLocation)
        let next = r.details["nextLaunch"] as? [String: Any]
        let predicted = next?["predicted"] as? [String: Any]
        let after = next?["after"] as? [String: Any]
        #expect(predicted?["state"] as? String == state, "\(predicted ?? [:])", sourceLocation: sourceLocation)
        #expect(after?["state"] as? String == state, "\(after ?? [:])", sourceLocation: sourceLocation)
        let status = try f.status()
        #expect(status.nextLaunch?.state == state, sourceLocation: sourceLocation)
        #expect(status.nextLaunch?.outcome == outcome, sourceLocation: sourceLocation)
        return status
    }

    /// The objects (user entities) of the local store `status` reads, which must be healthy.
    static func localObjects(_ status: StatusReport, sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
        guard let local = status.stores.first(where: { $0.role == .local }) else { return nil }
        #expect(local.health == .ok, "\(local.problems.map(\.message))", sourceLocation: sourceLocation)
        return local.entities.filter { !$0.system }.map(\.rows).reduce(0, +)
    }

    @Test(
        "the next launch seeds from a damaged local store (E2): status and check propose rebuild --from local --keep-old --salvage, which runs as typed and leaves E2 seeding from the salvaged rows"
    )
    func seedingFromDamagedLocal() throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.local)
            $0.markers = [:]
            $0.cache = .none
        }
        _ = try SalvageRepairTests.damage(f.paths.localStore, in: f.tmp)
        let readable = SalvageRepairTests.objects(try SalvageRepairTests.salvageReport(f.paths.localStore, f.tmp))
        #expect(try f.status().nextLaunch?.state == "E2")
        let advice = try Self.advice(f)
        let prefix = ["rebuild", "--from", "local", "--keep-old", "--salvage"]
        let words = try Self.proposed(prefix, in: advice.status)
        #expect(try Self.proposed(prefix, in: advice.check) == words)
        #expect(words == prefix + f.flags + ["--dry-run"])
        // The salvage command stays, for a look at what can be read first.
        #expect(advice.status.contains { $0.contains("usm-repair salvage ") }, "\(advice.status)")
        let status = try Self.run(words, f, state: "E2", outcome: .seedNewCloudStore)
        #expect(Self.localObjects(status) == readable)
        // Nothing damaged is left to advise on.
        #expect(!status.advice.contains { $0.contains("--salvage") }, "\(status.advice)")
    }

    @Test(
        "the next launch seeds from a local store whose first page (its schema) is destroyed: status and check offer salvage, and the operation's refusal says what it needs (--schema-from)"
    )
    func seedingFromLocalWithoutSchema() throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.local)
            $0.markers = [:]
            $0.cache = .none
        }
        _ = try SalvageRepairTests.damage(f.paths.localStore, in: f.tmp, pages: [1])
        let status = try f.status()
        #expect(status.stores.first { $0.role == .local }?.health == .notCoreData)
        let advice = try Self.advice(f)
        for lines in [advice.status, advice.check] {
            #expect(
                lines.contains {
                    $0.contains("a destroyed header or first page") && $0.contains("usm-repair salvage ")
                },
                "\(lines)")
            #expect(
                lines.contains {
                    $0.contains("`rebuild --from local --keep-old --salvage` refuses") && $0.contains("--schema-from")
                }, "\(lines)")
            #expect(!lines.flatMap(AdviceTests.commands).contains { $0.contains("--salvage") }, "\(lines)")
        }
    }

    @Test(
        "the active cloud store's copy is damaged (iCloud on): status and check propose migrate cloud-to-local --salvage, which runs as typed and leaves E1 on the salvaged rows"
    )
    func damagedActiveCopy() throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.cloud)
            $0.localStore = false
        }
        let uuid = f.options.activeUUID
        let copy = f.paths.cloudStore(uuid)
        _ = try SalvageRepairTests.damage(copy, in: f.tmp)
        let readable = SalvageRepairTests.objects(try SalvageRepairTests.salvageReport(copy, f.tmp))
        let advice = try Self.advice(f)
        let prefix = ["migrate", "cloud-to-local", "--uuid", uuid, "--salvage"]
        let words = try Self.proposed(prefix, in: advice.status)
        #expect(try Self.proposed(prefix, in: advice.check) == words)
        #expect(words == prefix + f.flags + ["--dry-run"])
        #expect(
            advice.status.contains { $0.contains("--dry-run; then rebuild --from local shares the result") },
            "\(advice.status)")
        #expect(advice.status.contains { $0.contains("usm-repair salvage ") }, "\(advice.status)")
        // No local store: nothing to merge with.
        #expect(!advice.status.contains { $0.contains("--merge") }, "\(advice.status)")
        let status = try Self.run(words, f, state: "E1", outcome: .openLocalStore)
        #expect(Self.localObjects(status) == readable)
    }

    @Test(
        "the active copy is damaged and the local store holds objects of its own: the plain migration's refusal is explained, and the merge is proposed only when its plan is accepted"
    )
    func damagedActiveCopyWithLocalData() throws {
        // The fixtures' shelves are the same objects in both stores: that merge would duplicate them.
        for shared in [true, false] {
            try damagedActiveCopyWithLocalData(sharedShelves: shared)
        }
    }

    func damagedActiveCopyWithLocalData(sharedShelves: Bool) throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.cloud)
            if !sharedShelves { $0.local.shelves = 0 }
        }
        let uuid = f.options.activeUUID
        _ = try SalvageRepairTests.damage(f.paths.cloudStore(uuid), in: f.tmp)
        let advice = try Self.advice(f).status
        #expect(
            advice.contains {
                $0.contains("`migrate cloud-to-local --uuid \(uuid) --salvage` refuses") && $0.contains("--replace")
                    // The merge route it names reads the damaged copy too.
                    && $0.contains("usm-repair migrate cloud-to-local --uuid \(uuid) --salvage --merge --container")
            }, "\(advice)")
        let merge = ["migrate", "cloud-to-local", "--merge", "--uuid", uuid, "--salvage"]
        let plan = try f.run(merge + ["--dry-run", "--json"])
        let mergeProposed = advice.flatMap(AdviceTests.commands).contains { Array($0.prefix(merge.count)) == merge }
        #expect(mergeProposed == (plan.status == 0), "\(plan.stderr) \(advice)")
        #expect(mergeProposed || sharedShelves, "\(plan.stderr)")  // shared objects are matched, not refused
        if mergeProposed {
            _ = try Self.run(
                try Self.proposed(merge, in: advice), f, state: "E1", outcome: .openLocalStore)
        }
    }

    @Test(
        "iCloud off and the local store damaged (E1): no operation that turns iCloud on is proposed; the active store's healthy copy is offered in its place (migrate cloud-to-local --replace), which leaves E1"
    )
    func damagedLocalCloudOff() throws {
        let f = try Fixture {
            SalvageRepairTests.store(&$0.local)
            $0.cloudEnabled = false
        }
        _ = try SalvageRepairTests.damage(f.paths.localStore, in: f.tmp)
        let advice = try Self.advice(f)
        for lines in [advice.status, advice.check] {
            #expect(!lines.contains { $0.contains("usm-repair rebuild") || $0.contains("migrate local-to-cloud") })
            #expect(lines.contains { $0.contains("usm-repair salvage ") }, "\(lines)")
        }
        let uuid = f.options.activeUUID
        let prefix = ["migrate", "cloud-to-local", "--uuid", uuid]
        let words = try Self.proposed(prefix, in: advice.status)
        #expect(try Self.proposed(prefix, in: advice.check) == words)
        #expect(words == prefix + ["--replace"] + f.flags + ["--dry-run"])
        let status = try Self.run(words, f, state: "E1", outcome: .openLocalStore)
        #expect(Self.localObjects(status) == FixtureStore.expectedRows(f.options.cloud).values.reduce(0, +))
    }

    @Test(
        "a damaged local store the next launch does not use (the app opens a healthy cloud store): the salvage command only, no operation that would abandon the cloud store"
    )
    func damagedLocalNotUsed() throws {
        let f = try Fixture { SalvageRepairTests.store(&$0.local) }
        _ = try SalvageRepairTests.damage(f.paths.localStore, in: f.tmp)
        #expect(try f.status().nextLaunch?.outcome == .openCloudStore)
        let advice = try Self.advice(f)
        for lines in [advice.status, advice.check] {
            #expect(lines.contains { $0.contains("usm-repair salvage ") }, "\(lines)")
            #expect(!lines.contains { $0.contains("--salvage") }, "\(lines)")
        }
    }
}
