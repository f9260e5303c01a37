import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum RestoreFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// An archive as `restore BUNDLE --to DIR --yes` reads and writes it (`BundleRestoreChange`: verified
/// whole first, then extracted through a plan into DIR). Oracle: nothing is written anywhere but
/// DIR (the snapshot folder, empty here, stays empty), and what DIR holds afterwards is either
/// nothing of the bundle (refused) or exactly its roots.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let work = Fuzz.freshFolder("restore")
    let archive = Fuzz.write(Fuzz.bytes(data, size), to: "bundle.tar.zst", in: work)
    let target = work.appendingPathComponent("to", isDirectory: true)
    let snapshots = work.appendingPathComponent("snapshots", isDirectory: true)
    let state = work.appendingPathComponent("state", isDirectory: true)
    var restored: RestoreResult?
    Fuzz.expectDocumented("BundleRestoreChange") {
        let executor = PlanExecutor(snapshotDirectory: snapshots, records: OperationRecords(stateFolder: state))
        let change = BundleRestoreChange(options: RestoreOptions(archive: archive, target: target), executor: executor)
        restored = try ChangeRunner.run(change, dryRun: false, detailedExitCode: false) { _, _ in }.details
    }
    let left = Set((try? FileManager.default.contentsOfDirectory(atPath: work.path)) ?? [])
    Fuzz.check(
        left.isSubset(of: ["bundle.tar.zst", "to", "snapshots", "state"]),
        "restore wrote \(left.sorted()) beside its target")
    let snapshotFiles = (try? FileManager.default.contentsOfDirectory(atPath: snapshots.path)) ?? []
    Fuzz.check(snapshotFiles.isEmpty, "a snapshot of nothing: \(snapshotFiles)")
    let inTarget = Set((try? FileManager.default.contentsOfDirectory(atPath: target.path)) ?? [])
    if let restored {
        Fuzz.check(
            inTarget == Set(restored.roots.map(\.name)),
            "the target holds \(inTarget.sorted()), the bundle's roots are \(restored.roots.map(\.name))")
    } else {
        Fuzz.check(inTarget.isEmpty, "a refused restore left \(inTarget.sorted())")
    }
    return 0
}
