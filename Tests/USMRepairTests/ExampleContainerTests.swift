import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The example the README runs `status` on, written by the fixture builder in the shape a support
/// engineer receives: `Examples/Demo.xcappdata` (an Xcode download of an iOS 7+ app's sandbox) and,
/// beside it, the ubiquity container as a Mac holds it (`Examples/Mobile Documents/<TEAM>~com~example~notes`).
/// `USM_RECORD_EXAMPLE=1 swift test --filter ExampleContainer` writes both anew.
@Suite("example container", .timed)
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
        let readme = try Documentation.text()
        #expect(readme.contains(ledger), "the README shows the ledger as printed:\n\(ledger)")
        let run = USM.run([
            "migrate", "cloud-to-local", "--merge", "--container", container, "--yes", "--json", "--snapshot-dir",
            tmp.path("snaps").path,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let dedupe = USM.run(["dedupe", "--container", container, "--dry-run", "--json"])
        #expect(dedupe.status == 0 && dedupe.json["noOp"] as? Bool == true, "\(dedupe.stdout)\(dedupe.stderr)")
        #expect((dedupe.details["before"] as? [String: Int])?.values.reduce(0, +) == 33)
    }
}

/// The second example, on which the README's walk-through runs start to finish:
/// `Examples/walk-through/Notes.xcappdata` and the ubiquity container beside it. Another device
/// marked the active cloud store corrupt; this device's local store holds every object the cloud
/// store holds (and more), so `rebuild --from local` is accepted, runs, and `restore` undoes it.
/// `USM_RECORD_EXAMPLE=1 swift test --filter ExampleContainer` writes it anew too.
@Suite("walk-through example", .timed)
struct WalkThroughExampleTests {
    static let folder = CLITests.packageRoot.appendingPathComponent("Examples/walk-through", isDirectory: true)
    static let root = folder.appendingPathComponent("Notes.xcappdata", isDirectory: true)

    static var options: FixtureContainer.Options {
        var o = FixtureContainer.Options()
        o.corruptedUUID = o.activeUUID
        o.oldUUID = nil
        // The cloud store's objects are the local store's (the same seed), its own store UUID,
        // history and iCloud metadata.
        var cloud = o.local
        cloud.ubiquityMetadata = true
        cloud.history = true
        cloud.storeUUID = o.cloud.storeUUID
        o.cloud = cloud
        return o
    }

    @Test("the walk-through example: marked corrupt, and the local store holds every cloud object")
    func example() throws {
        let paths = FixtureContainer.paths(Self.root, Self.options)
        if ProcessInfo.processInfo.environment["USM_RECORD_EXAMPLE"] == "1" {
            try? FileManager.default.removeItem(at: Self.folder)
            try FixtureContainer.write(to: Self.root, Self.options)
        }
        #expect(paths.folders.count == 2, "the download and the ubiquity container beside it")
        let report = try Inspection(options: LayoutOptions(container: Self.root), depth: .check).run()
        #expect(report.corruption?.affectsActiveStore == true)
        #expect(report.allProblems.map(\.code) == [.activeStoreMarkedCorrupt], "\(report.allProblems)")
        let dry = USM.run(["rebuild", "--from", "local", "--container", Self.root.path, "--dry-run"])
        #expect(dry.status == 0, "the README's dry run is accepted: \(dry.stdout)\(dry.stderr)")
    }
}

extension WalkThroughExampleTests {
    /// The `usm-repair` lines of the README's walk-through block, as written.
    static func walkThrough() throws -> [String] {
        let readme = try Documentation.text()
        let marker = try #require(readme.range(of: "<!-- walk-through: "))
        let block = readme[marker.upperBound...].drop { $0 != "`" }.dropFirst(6)
        let end = try #require(block.range(of: "```"))
        return block[..<end.lowerBound].split(separator: "\n").map(String.init).filter { $0.hasPrefix("usm-repair ") }
    }

    @Test("the README's walk-through runs start to finish on the second example, in a shell, as written")
    func readmeWalkThrough() throws {
        let lines = try Self.walkThrough()
        #expect(lines.count == 7, "\(lines)")
        let tmp = try TempDir()
        try FileManager.default.copyItem(at: Self.folder, to: tmp.path("walk-through"))
        let home = tmp.path("home")
        let environment = [
            "HOME": home.path, "XDG_STATE_HOME": home.appendingPathComponent(".local/state").path,
        ]
        let before = try TreeSnapshot(tmp.path("walk-through"))
        for line in lines {
            let r = try CLI.shell(line, in: tmp.path("walk-through"), environment: environment)
            let expected: Int32 = line.contains("# exit 1") ? 1 : 0
            #expect(r.status == expected, "\(line)\n\(r.stdout)\(r.stderr)")
            if line.hasPrefix("usm-repair rebuild"), line.contains("--yes") {
                #expect(r.stdout.contains("Done: rebuild --from local"), "\(r.stdout)")
            }
            if line.contains("next launch: seeds a new store") {
                #expect(r.stdout.contains("next launch: seed-new-cloud-store"), "\(r.stdout)")
            }
        }
        // The undo put back every file the rebuild changed (the bundle and nothing else is new).
        try FileManager.default.removeItem(at: tmp.path("walk-through/ticket-4711.tar.zst"))
        try? FileManager.default.removeItem(at: tmp.path("walk-through/ticket-4711.tar.zst.sha256"))
        #expect(try TreeSnapshot(tmp.path("walk-through")) == before)
    }

    @Test("the README's samples are the tool's output at 80 columns")
    func readmeSamples() throws {
        let readme = try Documentation.text()
        var samples = 0
        var rest = readme[...]
        while let marker = rest.range(of: "<!-- sample: COLUMNS=80 usm-repair ") {
            let commandEnd = try #require(rest[marker.upperBound...].range(of: " -->"))
            let arguments = CommandLineTests.words(rest[marker.upperBound..<commandEnd.lowerBound])
            let open = try #require(rest[commandEnd.upperBound...].range(of: "```\n"))
            let close = try #require(rest[open.upperBound...].range(of: "```"))
            let sample = rest[open.upperBound..<close.lowerBound].split(
                separator: "\n", omittingEmptySubsequences: false
            )
            .dropLast()
            let r = USM.run(arguments, environment: ["COLUMNS": "80"], in: CLITests.packageRoot)
            let output = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            // Each run of lines between `...` appears in the output as it is, in order.
            var position = output.startIndex
            for part in sample.split(separator: "...", omittingEmptySubsequences: true) {
                let run = Array(part)
                let found = (position...max(position, output.endIndex - run.count)).first {
                    $0 + run.count <= output.endIndex && Array(output[$0..<$0 + run.count]) == run
                }
                #expect(
                    found != nil, "\(arguments): not in the output:\n\(run.joined(separator: "\n"))\n---\n\(r.stdout)")
                position = (found ?? position) + run.count
            }
            samples += 1
            rest = rest[close.upperBound...]
        }
        #expect(samples >= 1)
    }
}
