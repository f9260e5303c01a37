import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// A member of a store's file set that is a link leading out of the layout (its
/// `.<Name>_SUPPORT` folder, its `-wal`) is refused by every changing command, as `status`
/// refuses to follow it: exit 3, `symlink-escapes`, nothing changed, in the layout or outside.
/// Before, `delete local-store` and `migrate cloud-to-local --replace` ran (exit 0; red team G7).
@Suite("a store member linked out of the layout: every changing command refuses", .timed)
struct StoreMemberLinkTests {
    typealias Fixture = OperationTests.Fixture

    /// The commands that retire or replace the local store's file set, and others that do not
    /// touch it (the layout is refused as a whole, as `status` refuses it).
    static let commands: [[String]] = [
        ["delete", "local-store"], ["migrate", "cloud-to-local", "--replace"],
        ["rebuild", "--from", "local", "--discard-cloud"], ["rebuild", "--from", "cloud", "--replace"],
        ["migrate", "local-to-cloud", "--discard-cloud"], ["delete", "container"], ["cloud", "disable"],
    ]

    /// Replaces the local store's `member` (a path in its file set) with a link to a folder or
    /// file outside the layout; returns that folder.
    static func linkOut(_ f: Fixture, member: URL, folder: Bool) throws -> URL {
        let outside = f.tmp.path("deep/er/elsewhere")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: outside.appendingPathComponent("keep"))
        try? FileManager.default.removeItem(at: member)
        try FileManager.default.createSymbolicLink(
            at: member, withDestinationURL: folder ? outside : outside.appendingPathComponent("keep"))
        return outside
    }

    @Test(
        "the local store's _SUPPORT folder or -wal linked out: status 3, each changing command 3 (also --dry-run), nothing changed"
    )
    func localMemberLinkedOut() throws {
        // Every command in both modes, each member for half of them: the refusal is one check of
        // the inspected file sets (`Planner.prepare`), so the members and the commands are covered
        // side by side, not as their product (28 runs before, 14 now).
        let members = [(".UbiquityStore_SUPPORT", true), ("UbiquityStore.sqlite-wal", false)]
        for (index, (name, folder)) in members.enumerated() {
            let commands = Self.commands.indices.filter { $0 % members.count == index }.map { Self.commands[$0] }
            let f = try Fixture()
            let outside = try Self.linkOut(f, member: f.paths.appDir.appendingPathComponent(name), folder: folder)
            let status = try f.run(["status", "--json"])
            #expect(status.status == 3, "\(name): \(status.stderr)")
            let layout = try f.snapshot()
            let elsewhere = try TreeSnapshot(outside)
            for command in commands {
                for mode in [["--yes"], ["--dry-run"]] {
                    let r = try f.run(command + mode + ["--json"])
                    #expect(r.status == 3, "\(name) \(command) \(mode): \(r.stderr)\(r.stdout)")
                    let error = r.json["error"] as? [String: Any]
                    #expect(error?["code"] as? String == "symlink-escapes", "\(name) \(command): \(r.stdout)")
                    let message = error?["message"] as? String ?? ""
                    #expect(message.contains(name), "\(name) \(command): \(r.stdout)")
                }
            }
            #expect(try f.snapshot() == layout, "\(name)")
            #expect(try TreeSnapshot(outside) == elsewhere, "\(name)")
        }
    }

    @Test("a link that stays inside the layout is no escape: delete local-store runs")
    func linkInsideRuns() throws {
        let f = try Fixture()
        let support = f.paths.appDir.appendingPathComponent(".UbiquityStore_SUPPORT")
        let moved = f.paths.appDir.appendingPathComponent("elsewhere-inside")
        try FileManager.default.moveItem(at: support, to: moved)
        try FileManager.default.createSymbolicLink(at: support, withDestinationURL: moved)
        let r = try f.run(["delete", "local-store", "--yes"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!f.exists(support) && !f.exists(f.paths.localStore))
        #expect(f.exists(moved), "the folder the link named is not the store's: it stays")
    }

    @Test("migrate-store and salvage: DST's _SUPPORT folder linked out of its folder: 3, nothing changed")
    func destinationMemberLinkedOut() throws {
        let tmp = try TempDir()
        try FixtureStore.write(to: tmp.path("src/S.sqlite"))
        try FixtureStore.write(to: tmp.path("dst/D.sqlite"))
        let outside = tmp.path("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: outside.appendingPathComponent("keep"))
        let support = tmp.path("dst/.D_SUPPORT")
        try? FileManager.default.removeItem(at: support)
        try FileManager.default.createSymbolicLink(at: support, withDestinationURL: outside)
        let before = try TreeSnapshot(tmp.url)
        let src = tmp.path("src/S.sqlite").path
        let dst = tmp.path("dst/D.sqlite").path
        for command in [
            ["migrate-store", src, dst, "--into"], ["migrate-store", src, dst, "--overwrite"],
            ["salvage", src, dst, "--overwrite"],
        ] {
            for mode in [["--yes"], ["--dry-run"]] {
                let r = USM.run(command + mode + ["--json"])
                #expect(r.status == 3, "\(command) \(mode): \(r.stderr)\(r.stdout)")
                #expect(
                    (r.json["error"] as? [String: Any])?["code"] as? String == "symlink-escapes",
                    "\(command): \(r.stdout)")
            }
        }
        #expect(try TreeSnapshot(tmp.url) == before)
    }
}
