import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum PlanFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// An operation's `plan.json` as `recover` reads it back from a layout: decoded (`Journal.plan`),
/// then judged by `PlanCheck` against the folders the user named. Independent oracle: a plan the
/// check accepts names no path outside its folders, none with `.`, `..` or empty components, and
/// keeps what it moves aside or stages inside the operation's own private folder.
///
/// The folders named below are the ones the seeds were made in (Fuzz/Seeds/make-seeds.sh).
let layout = "/tmp/usm-repair-fuzz-layout/Demo.xcappdata"
let given: [Plan.Root] = [
    Plan.Root(name: "app", path: layout + "/AppData/Library/Application Support", privateFolder: ".usm-repair"),
    Plan.Root(name: "cloud", path: "/tmp/usm-repair-fuzz-layout/Mobile Documents/ABCDE12345~com~example~notes", privateFolder: ".usm-repair.nosync"),
    Plan.Root(name: "preferences", path: layout + "/AppData/Library/Preferences", privateFolder: ".usm-repair"),
    Plan.Root(name: "restored", path: "/tmp/usm-repair-fuzz-layout/restored", privateFolder: ".usm-repair"),
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    let folder = Fuzz.folder.appendingPathComponent("operation", isDirectory: true)
    if !FileManager.default.fileExists(atPath: folder.path) { _ = Fuzz.freshFolder("operation") }
    Fuzz.write(bytes, to: Journal.planName, in: folder)
    var decoded: Plan?
    Fuzz.expectDocumented("Journal.plan") { decoded = try Journal.plan(in: folder) }
    guard let plan = decoded else { return 0 }
    for allowed in [nil, given] {
        guard PlanCheck.problem(in: plan, folderName: plan.id, allowed: allowed) == nil else { continue }
        if let allowed {
            for root in plan.roots {
                Fuzz.check(allowed.contains { $0.path == root.path && $0.privateFolder == root.privateFolder }, "accepted a plan working in \(root.path)")
            }
        }
        confined(plan)
    }
    return 0
}

/// The path's components, nil unless it is absolute and clean.
func parts(_ path: String) -> [ArraySlice<UInt8>]? {
    let bytes = Array(path.utf8)
    guard bytes.first == UInt8(ascii: "/") else { return nil }
    let split = bytes.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    guard split.allSatisfy({ !$0.isEmpty && $0 != [UInt8(ascii: ".")] && $0 != [UInt8(ascii: "."), UInt8(ascii: ".")] }) else { return nil }
    return split
}

/// True when `path` is clean and strictly below `base`.
func below(_ path: String, _ base: String) -> Bool {
    guard let p = parts(path), let b = parts(base) else { return false }
    return p.count > b.count && Array(p.prefix(b.count)) == b
}

func confined(_ plan: Plan) {
    func user(_ path: String) {
        Fuzz.check(plan.roots.contains { below(path, $0.path) || parts(path) != nil && path == $0.path }, "accepted \(path.debugDescription), outside the plan's folders")
        Fuzz.check(!plan.roots.contains { below(path, $0.privateURL.path) || path == $0.privateURL.path }, "accepted \(path.debugDescription), inside a private folder")
    }
    func own(_ path: String, _ area: String) {
        Fuzz.check(plan.roots.contains { below(path, $0.operationURL(plan.id).appendingPathComponent(area).path) },
                   "accepted \(path.debugDescription) as \(area), outside the operation's folder")
    }
    for step in plan.steps {
        switch step.action {
        case .snapshot, .commit, .purge: break
        case let .checkpoint(source, staged): user(source); own(staged, "staging")
        case let .build(build):
            Fuzz.check(parts(build.source) != nil, "accepted the build source \(build.source.debugDescription)")
            if let into = build.mergeInto { user(into) }
            own(build.staged, "staging")
        case let .writeMarker(_, staged): own(staged, "staging")
        case let .writePreferences(source, _, staged): user(source); own(staged, "staging")
        case let .extract(_, items, folders):
            for folder in folders.values { own(folder, "staging") }
            for item in items { Fuzz.check(!item.isEmpty && !item.hasPrefix("/") && !item.split(separator: "/").contains(".."), "accepted the item \(item.debugDescription)") }
        case let .retire(path, trash): user(path); own(trash, "trash")
        case let .install(staged, path, _): user(path); own(staged, "staging")
        }
    }
    for path in plan.stores { user(path) }
}
