import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The example the README runs `status` on, written by the fixture builder in the shape a support
/// engineer receives: `Examples/Demo.xcappdata` (an Xcode download of an iOS 7+ app's sandbox) and,
/// beside it, the ubiquity container as a Mac holds it (`Examples/Mobile Documents/<TEAM>~com~example~notes`).
/// `USM_RECORD_EXAMPLE=1 swift test --filter ExampleContainer` writes both anew.
@Suite("example container")
struct ExampleContainerTests {
    static let root = CLITests.packageRoot.appendingPathComponent("Examples/Demo.xcappdata")

    /// The story: iCloud on, the active store's copy on this device, and a corruption marker that
    /// another device wrote for it, so the next launch loads it and rebuilds it 30 s later.
    static var options: FixtureContainer.Options {
        var o = FixtureContainer.Options()
        o.corruptedUUID = o.activeUUID
        return o
    }

    @Test("the shipped example shows what the README says")
    func example() throws {
        let paths = FixtureContainer.paths(Self.root, Self.options)
        if ProcessInfo.processInfo.environment["USM_RECORD_EXAMPLE"] == "1" {
            try? FileManager.default.removeItem(at: Self.root)
            try? FileManager.default.removeItem(at: paths.cloudDir.deletingLastPathComponent())
            try FixtureContainer.write(to: Self.root, Self.options)
        }
        let before = try paths.folders.map(TreeSnapshot.init)
        #expect(paths.folders.count == 2, "the download and the ubiquity container beside it")
        let report = try Inspection(options: LayoutOptions(container: Self.root), depth: .check).run()
        #expect(report.layout.cloudDir == paths.cloudDir.path, "the ubiquity container is found beside the download")
        #expect(report.cloudEnabled == true)
        #expect(report.activeStore?.uuid == Self.options.activeUUID)
        #expect(report.activeStore?.cachedUUID == Self.options.activeUUID)
        #expect(report.corruption?.affectsActiveStore == true)
        #expect(report.stores.map(\.location) == [.local, .coreDataCopy, .coreDataCopy])
        #expect(report.stores.map(\.health) == [.ok, .ok, .ok])
        #expect(report.nextLaunch?.rows == ["E4", "E9"])
        #expect(report.allProblems.map(\.code) == [.activeStoreMarkedCorrupt], "\(report.allProblems)")
        let active = try #require(report.stores.first { $0.active == true })
        #expect(
            active.entities.first { $0.name == "Book" }?.rows == Self.options.cloud.books
                + Self.options.cloud.walOnlyBooks,
            "the example keeps rows that exist only in the -wal")
        #expect(try paths.folders.map(TreeSnapshot.init) == before)

        // The README's first command, as a user types it.
        let text = USM.run(["status", "--container", Self.root.path])
        #expect(text.status == 1, "the active store marked corrupt makes status exit 1")
        #expect(
            text.stdout.contains(
                "Next launch:  opens the cloud store \(Self.options.activeUUID) from this device's copy (peer \(Self.options.peer), account \(Self.options.account)) (E4)"
            ))
        // The objects the app shows, as the ledger counts them: history rows said apart.
        #expect(text.stdout.contains("6 entities, 20 objects, 12 history rows, store UUID"), "\(text.stdout)")
        #expect(text.stdout.contains("6 entities, 18 objects, store UUID"), "\(text.stdout)")
    }

    @Test(
        "the README's walk-through: migrate cloud-to-local --merge on the example, no --allow-duplicates, no duplicates after"
    )
    func mergeWalkThrough() throws {
        let tmp = try TempDir()
        for name in ["Demo.xcappdata", "Mobile Documents"] {
            try TreeCopy.copy(
                CLITests.packageRoot.appendingPathComponent("Examples/\(name)"),
                to: tmp.url.appendingPathComponent(name))
        }
        let container = tmp.path("Demo.xcappdata").path
        let dry = USM.run(["migrate", "cloud-to-local", "--merge", "--container", container, "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let lines = dry.stdout.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("The app shows") })
        let end = try #require(lines.firstIndex { $0.hasPrefix("  1. snapshot") })
        let ledger = lines[start..<end].joined(separator: "\n")
        #expect(ledger.contains("matched (already there, not copied again): Magazine 3, Shelf 2"), "\(ledger)")
        let readme = try String(contentsOf: CLITests.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains(ledger), "the README shows the ledger as printed:\n\(ledger)")
        let run = USM.run([
            "migrate", "cloud-to-local", "--merge", "--container", container, "--yes", "--json", "--snapshot-dir",
            tmp.path("snaps").path,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let dedupe = USM.run(["dedupe", "--container", container, "--dry-run", "--json"])
        #expect(dedupe.status == 0 && dedupe.json["noOp"] as? Bool == true, "\(dedupe.stdout)\(dedupe.stderr)")
        #expect((dedupe.json["before"] as? [String: Int])?.values.reduce(0, +) == 33)
    }
}
