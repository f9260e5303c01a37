import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// A malformed StoreUUID marker (empty, a UUID and a newline, lower case, garbage) names no store
/// that exists: a command acting on "the active store" cannot know which one is meant. It is bad
/// input (exit 2, naming the file and the defect, nothing changed) for every such command. Before,
/// `delete cloud-store` said "nothing to do" (exit 0) with a note that no marker and no cache exist
/// while both did, and `migrate cloud-to-local` said "no active cloud store is known" (exit 8; red
/// team G11). Commands that name the store, or write or remove the marker, still run: they repair it.
@Suite("a malformed StoreUUID marker: bad input for every command acting on the active store", .timed)
struct MalformedMarkerTests {
    typealias Fixture = OperationTests.Fixture

    static let active = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"

    /// Marker contents and the defect each is.
    static let markers: [(content: String, defect: String)] = [
        (active + "\n", "trailing-newline"), (active.lowercased(), "lowercase"), ("", "empty"),
        ("../../../../outside/victim", "not-a-uuid"),
    ]

    /// The commands that act on the active store when no store is named.
    static let commands: [[String]] = [
        ["delete", "cloud-store"], ["delete", "cloud-store", "--local-only"],
        ["migrate", "cloud-to-local", "--replace"],
        ["rebuild", "--from", "cloud", "--replace"], ["rebuild", "--from", "cloud", "--in-app"],
        ["corruption", "mark"], ["rebuild", "--from", "local"], ["migrate", "local-to-cloud"],
    ]

    @Test(
        "each command acting on the active store: exit 2 naming StoreUUID+ and its defect, also --dry-run; nothing changed"
    )
    func refused() throws {
        // Every command in both modes, every defect for two commands: the refusal is one check
        // (`Planner.targetUUID`) over one reading of the marker (`Marker.read`), so the commands
        // and the defects are covered side by side, not as their product (64 runs before, 16 now).
        for (index, (content, defect)) in Self.markers.enumerated() {
            let f = try Fixture { $0.markers = ["StoreUUID+": content] }
            let marker = f.paths.logs.appendingPathComponent("StoreUUID+").path
            let layout = try f.snapshot()
            let commands = Self.commands.indices.filter { $0 % Self.markers.count == index }.map { Self.commands[$0] }
            #expect(!commands.isEmpty)
            for command in commands {
                for mode in [["--yes", "--detailed-exitcode"], ["--dry-run"]] {
                    let r = try f.run(command + mode + ["--json"])
                    #expect(r.status == 2, "\(defect) \(command) \(mode): \(r.stderr)\(r.stdout)")
                    let error = r.json["error"] as? [String: Any]
                    let message = error?["message"] as? String ?? ""
                    #expect(error?["code"] as? String == "wrong-kind", "\(defect) \(command): \(r.stdout)")
                    #expect(
                        message.hasPrefix("\(marker) is not a valid store marker") && message.contains("(\(defect))"),
                        "\(defect) \(command): \(message)")
                    #expect(r.json["noOp"] == nil, "\(defect) \(command): no report of 'nothing to do'")
                }
            }
            #expect(try f.snapshot() == layout, "\(defect)")
        }
    }

    @Test("naming the store, or writing a valid marker (switch), still runs on a malformed marker")
    func namedOrRepaired() throws {
        let f = try Fixture { $0.markers = ["StoreUUID+": Self.active + "\n"] }
        let dry = try f.run(["delete", "cloud-store", "--uuid", Self.active, "--dry-run", "--detailed-exitcode"])
        #expect(dry.status == 20, "\(dry.stderr)")
        let repaired = try f.run(["switch", Self.active, "--yes"])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        let marker = try String(contentsOf: f.paths.logs.appendingPathComponent("StoreUUID+"), encoding: .utf8)
        #expect(marker == Self.active)
        let deleted = try f.run(["delete", "cloud-store", "--yes", "--detailed-exitcode"])
        #expect(deleted.status == 20, "\(deleted.stderr)")
        #expect(!f.exists(f.paths.logs.appendingPathComponent(Self.active)))
    }
}
