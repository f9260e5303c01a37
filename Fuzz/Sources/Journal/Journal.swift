import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum JournalFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// An operation's `journal.jsonl` as `recover` reads it back from a layout (`Journal.state`, a stream
/// of JSON lines). What it reports must stay within the plan's steps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let folder = Fuzz.folder.appendingPathComponent("operation", isDirectory: true)
    if !FileManager.default.fileExists(atPath: folder.path) { _ = Fuzz.freshFolder("operation") }
    Fuzz.write(Fuzz.bytes(data, size), to: Journal.journalName, in: folder)
    for steps in [0, 1, 8] {
        let state = Journal.state(in: folder, stepCount: steps)
        Fuzz.check(state.begun.allSatisfy { (0..<steps).contains($0) }, "a begun step outside the plan")
        Fuzz.check(state.done.allSatisfy { (0..<steps).contains($0) }, "a done step outside the plan")
    }
    return 0
}
