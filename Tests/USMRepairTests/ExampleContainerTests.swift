import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The example container the README runs `status` on: `Examples/Demo.xcappdata`, written by the
/// fixture builder. `USM_RECORD_EXAMPLE=1 swift test --filter ExampleContainer` writes it anew.
@Suite("example container")
struct ExampleContainerTests {
    static let root = CLITests.packageRoot.appendingPathComponent("Examples/Demo.xcappdata")

    static var options: FixtureContainer.Options {
        var o = FixtureContainer.Options()
        o.corruptedUUID = o.activeUUID
        return o
    }

    @Test("the shipped example shows what the README says")
    func example() throws {
        if ProcessInfo.processInfo.environment["USM_RECORD_EXAMPLE"] == "1" {
            try? FileManager.default.removeItem(at: Self.root)
            try FixtureContainer.write(to: Self.root, Self.options)
        }
        let before = try TreeSnapshot(Self.root)
        let report = try Inspection(options: LayoutOptions(container: Self.root), depth: .check).run()
        #expect(report.cloudEnabled == true)
        #expect(report.activeStore?.uuid == Self.options.activeUUID)
        #expect(report.corruption?.affectsActiveStore == true)
        #expect(report.stores.map(\.health) == [.ok, .ok, .ok])
        #expect(report.allProblems.isEmpty, "\(report.allProblems)")
        let active = try #require(report.stores.first { $0.active == true })
        #expect(active.entities.first { $0.name == "Book" }?.rows == Self.options.cloud.books + Self.options.cloud.walOnlyBooks,
                "the example keeps rows that exist only in the -wal")
        #expect(try TreeSnapshot(Self.root) == before)
    }
}
