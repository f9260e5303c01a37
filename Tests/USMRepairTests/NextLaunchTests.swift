import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `status` predicts the app's next launch from the files and preferences alone
/// (usm-behaviour.md §2): one test per row of its table E1–E13.
@Suite("next launch", .timed)
struct NextLaunchTests {
    /// Writes a fixture, runs `status` on the download with the ubiquity container found beside it,
    /// and returns the report (checking the files stay byte-identical).
    static func status(
        _ configure: (inout FixtureContainer.Options) -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> StatusReport {
        let tmp = try TempDir()
        var o = FixtureContainer.Options()
        configure(&o)
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"), o)
        let before = try paths.folders.map(TreeSnapshot.init)
        let report = try Inspection(options: LayoutOptions(container: paths.root), depth: .status).run()
        #expect(
            try paths.folders.map(TreeSnapshot.init) == before, "status changes nothing", sourceLocation: sourceLocation
        )
        return report
    }

    static func codes(_ report: StatusReport) -> Set<String> { Set(report.allProblems.map(\.code.rawValue)) }

    @Test("E1: iCloud off opens the local store; a missing one is created empty")
    func e1() throws {
        let report = try Self.status { $0.cloudEnabled = false }
        let next = try #require(report.nextLaunch)
        #expect(next.state == "E1")
        #expect(next.outcome == .openLocalStore)
        #expect(next.store == "local")
        let absent = try #require(
            try Self.status {
                $0.cloudEnabled = nil
                $0.localStore = false
            }.nextLaunch)
        #expect(absent.outcome == .openLocalStore)
        #expect(absent.summary.contains("new, empty local store"))
    }

    @Test("E2: iCloud on, no marker, no cache: a new cloud store seeded from the local store")
    func e2() throws {
        let report = try Self.status {
            $0.markers = [:]
            $0.cache = .none
        }
        let next = try #require(report.nextLaunch)
        #expect(next.state == "E2")
        #expect(next.outcome == .seedNewCloudStore)
        #expect(next.seedFrom?.hasSuffix("Application Support/UbiquityStore.sqlite") == true)
        #expect(next.dependsOnDelegate, "shouldMigrate can veto")
        // A seeding copies the main file only: frames waiting in the local store's -wal are a trap.
        #expect(!Self.codes(report).contains("seed-loses-wal-frames"), "the fixture's -wal is checkpointed and empty")
        let pending = try Self.status {
            $0.markers = [:]
            $0.cache = .none
            $0.local.walOnlyBooks = 3
        }
        #expect(pending.nextLaunch?.state == "E2")
        #expect(Self.codes(pending).contains("seed-loses-wal-frames"))
    }

    @Test("E3: as E2 without a local store: an empty cloud store made active for every device")
    func e3() throws {
        let next = try #require(
            try Self.status {
                $0.markers = [:]
                $0.cache = .none
                $0.localStore = false
            }.nextLaunch)
        #expect(next.state == "E3")
        #expect(next.outcome == .createEmptyCloudStore)
        #expect(next.summary.contains("EMPTY"))
    }

    @Test("E4: marker, this device's copy present: the store is opened")
    func e4() throws {
        let report = try Self.status { $0.cache = .none }
        let next = try #require(report.nextLaunch)
        #expect(next.state == "E4")
        #expect(next.outcome == .openCloudStore)
        #expect(next.store == FixtureContainer.Options().activeUUID)
        #expect(next.rows == ["E4"])
        let active = try #require(report.activeStore)
        #expect(active.exists && active.copies == 1 && active.source == "marker")
        // Every copy is found where Core Data keeps it, with its peer and account.
        let copy = try #require(report.stores.first { $0.uuid == active.uuid })
        #expect(copy.location == .coreDataCopy)
        #expect(copy.copy?.peer == FixtureContainer.Options().peer)
        #expect(copy.copy?.accountListed == true)
        #expect(copy.opens == true)
        #expect(copy.active == true)
        #expect(report.exitCode == .ok, "\(report.allProblems)")
    }

    @Test("E5: a stale cached UUID: the cached store is loaded first, then the marker's")
    func e5() throws {
        let old = FixtureContainer.Options().oldUUID!
        let report = try Self.status { $0.cache = .stale(old) }
        let next = try #require(report.nextLaunch)
        #expect(next.state == "E5")
        #expect(next.store == FixtureContainer.Options().activeUUID)
        #expect(next.summary.contains(old))
        #expect(Self.codes(report).contains("cached-uuid-stale"))
        #expect(report.activeStore?.cachedUUID == old)
        #expect(report.exitCode == .problemsFound, "an error-level trap makes status exit 1")
    }

    @Test("E6: no copy on this device, logs present: rebuilt from the logs")
    func e6() throws {
        let next = try #require(try Self.status { $0.activeStoreCopy = false }.nextLaunch)
        #expect(next.state == "E6")
        #expect(next.outcome == .rebuildFromLogs)
    }

    @Test("E7: neither a copy nor logs: the store opens empty")
    func e7() throws {
        let next = try #require(
            try Self.status {
                $0.activeStoreCopy = false
                $0.activeLogs = false
            }.nextLaunch)
        #expect(next.state == "E7")
        #expect(next.outcome == .openEmptyCloudStore)
    }

    @Test("E8: only an iOS 6 marker: its store is loaded, then upgraded 30 s later")
    func e8() throws {
        let v0 = "5D4C3B2A-1908-4756-A5B4-C3D2E1F00F1E"
        let report = try Self.status {
            $0.markers = ["StoreUUID": v0]
            $0.cache = .none
            $0.ios6CopyUUID = v0
            $0.activeStoreCopy = false
        }
        let next = try #require(report.nextLaunch)
        #expect(next.state == "E8")
        #expect(next.cloudVersion == 0)
        #expect(next.outcome == .openCloudStore)
        #expect(next.then.contains { $0.contains("upgrades") })
        let copy = try #require(report.stores.first { $0.uuid == v0 })
        #expect(copy.cloudVersion == 0 && copy.copy?.contentName == "UbiquityStore")
        // A lower marker left beside the active one is a trap.
        let both = try Self.status { $0.markers = ["StoreUUID+": $0.activeUUID, "StoreUUID": v0] }
        #expect(Self.codes(both).contains("stale-marker"))
        #expect(both.nextLaunch?.state == "E4")
    }

    @Test("E9: the corruption marker names the active store: rebuilt 30 s after the load")
    func e9() throws {
        let report = try Self.status { $0.corruptedUUID = $0.activeUUID }
        let next = try #require(report.nextLaunch)
        #expect(next.rows == ["E4", "E9"])
        #expect(next.then.contains { $0.contains("E9") })
        #expect(next.dependsOnDelegate)
        #expect(Self.codes(report).contains("active-store-marked-corrupt"))
        #expect(report.summary.activeStoreMarkedCorrupt)
        #expect(report.exitCode == .problemsFound)
    }

    @Test("E10: a corruption marker naming another store, or of version 0, is ignored")
    func e10() throws {
        let report = try Self.status { $0.corruptedUUID = $0.oldUUID }
        #expect(report.nextLaunch?.rows.contains("E10") == true)
        #expect(Self.codes(report).contains("corruption-marker-ignored"))
        #expect(report.summary.activeStoreMarkedCorrupt == false)
        let v0 = try Self.status { $0.markers = ["StoreUUID+": $0.activeUUID, "CorruptedUUID": $0.activeUUID] }
        #expect(v0.nextLaunch?.rows.contains("E10") == true)
    }

    @Test("E11: with iCloud on, the prediction says what happens without an account")
    func e11() throws {
        let next = try #require(try Self.status { _ in }.nextLaunch)
        #expect(next.withoutAccount?.contains("E11") == true)
        #expect(next.assumptions.contains { $0.contains("iCloud account") })
        #expect(try Self.status { $0.cloudEnabled = false }.nextLaunch?.withoutAccount == nil)
    }

    @Test("E12: an empty marker fails and waits; a newline-terminated one names another, empty store")
    func e12() throws {
        let empty = try Self.status {
            $0.markers = ["StoreUUID+": ""]
            $0.cache = .none
        }
        #expect(empty.nextLaunch?.state == "E12")
        #expect(empty.nextLaunch?.outcome == .failAndWait)
        #expect(Self.codes(empty).contains("marker-empty"))
        let newline = try Self.status {
            $0.markers = ["StoreUUID+": $0.activeUUID + "\n"]
            $0.cache = .none
        }
        #expect(newline.nextLaunch?.state == "E12")
        #expect(newline.nextLaunch?.outcome == .openEmptyCloudStore)
        #expect(Self.codes(newline).contains("marker-trailing-newline"))
        let lower = try Self.status {
            $0.markers = ["StoreUUID+": $0.activeUUID.lowercased()]
            $0.cache = .none
        }
        #expect(lower.nextLaunch?.state == "E12")
        #expect(Self.codes(lower).contains("marker-malformed"))
    }

    @Test("E13: a plain file at the nominal URL is ignored at load and makes a rebuild do nothing")
    func e13() throws {
        let report = try Self.status {
            $0.nominalFile = true
            $0.corruptedUUID = $0.activeUUID
        }
        let next = try #require(report.nextLaunch)
        #expect(next.rows.contains("E13"))
        #expect(next.then.contains { $0.contains("nothing is rebuilt") })
        #expect(Self.codes(report).contains("nominal-store-file"))
        let stray = try #require(report.stores.first { $0.location == .nominal })
        #expect(stray.exists && stray.opens == false)
    }

    @Test(
        "without the ubiquity container: the cached UUID is the best evidence, and the report says what it cannot know")
    func withoutContainer() throws {
        let report = try Self.status { $0.cloudLocation = .none }
        let next = try #require(report.nextLaunch)
        #expect(next.store == FixtureContainer.Options().activeUUID)
        #expect(!next.unknowns.isEmpty)
        #expect(Self.codes(report).contains("cloud-container-missing"))
        #expect(report.activeStore?.source == "cache")
        let noCache = try #require(
            try Self.status {
                $0.cloudLocation = .none
                $0.cache = .none
            }.nextLaunch)
        #expect(noCache.outcome == .unknown)
    }

    @Test("several copies of the active store: which one opens cannot be known, and it is said")
    func severalCopies() throws {
        let report = try Self.status {
            $0.accountMap = false
            $0.extraCopies = [
                (peer: "mobile~0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D", account: "6A5B4C3D-2E1F-4A0B-9C8D-7E6F5A4B3C2D")
            ]
        }
        #expect(Self.codes(report).contains("several-copies"))
        let copies = report.stores.filter { $0.uuid == FixtureContainer.Options().activeUUID }
        #expect(copies.count == 2)
        #expect(copies.allSatisfy { $0.opens == nil })
        #expect(report.nextLaunch?.unknowns.contains { $0.contains("2 copies") } == true)
        // The account map decides when it lists one of them.
        let mapped = try Self.status {
            $0.extraCopies = [(peer: $0.peer, account: "6A5B4C3D-2E1F-4A0B-9C8D-7E6F5A4B3C2D")]
        }
        #expect(!Self.codes(mapped).contains("several-copies"))
        #expect(
            mapped.stores.filter { $0.uuid == FixtureContainer.Options().activeUUID && $0.opens == true }.count == 1)
    }

    @Test("cache keys of another version are reported")
    func otherVersionCache() throws {
        let report = try Self.status { $0.cache = .otherVersion }
        #expect(Self.codes(report).contains("cached-uuid-other-version"))
        #expect(report.layout.cachedStoreUUIDs.first?.cloudVersion == 0)
        #expect(report.nextLaunch?.state == "E4")
    }

    @Test("a marker of a version no device reads is reported")
    func higherVersion() throws {
        let report = try Self.status { $0.markers = ["StoreUUID+": $0.activeUUID, "StoreUUID++": $0.oldUUID!] }
        #expect(Self.codes(report).contains("marker-version-ignored"))
        #expect(report.nextLaunch?.store == FixtureContainer.Options().activeUUID)
    }
}
