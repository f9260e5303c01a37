import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum PreferencesEditFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// The preferences rewrite of `switch`, `cloud enable|disable`, `delete container` and the
/// migrations (`PreferencesEdit.apply`). A plist the reader accepts must be editable, and the edited
/// copy must read back with exactly the change asked for: the cloud key set, the cache keys and
/// account maps named gone, everything else kept.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let source = Fuzz.write(Fuzz.bytes(data, size), to: "com.example.notes.plist")
    let before = try? Preferences.read(source)
    let edits = [
        PreferencesEdit(cloudEnabled: false, removeCachedStoreUUIDs: true, removeAccountMaps: before?.accountMaps.map(\.contentName) ?? []),
        PreferencesEdit(cloudEnabled: true, removeCachedValues: before?.cachedStoreUUIDs.compactMap(\.value).prefix(1).map { $0 } ?? []),
    ]
    for (n, edit) in edits.enumerated() {
        let destination = Fuzz.folder.appendingPathComponent("edited-\(n).plist")
        try? FileManager.default.removeItem(at: destination)
        guard let before else {
            // Not a plist the reader accepts: no plan would edit it; the edit must still fail cleanly.
            Fuzz.expectDocumented("PreferencesEdit.apply on unreadable preferences") { try edit.apply(from: source, to: destination) }
            continue
        }
        do { try edit.apply(from: source, to: destination) } catch {
            Fuzz.fail("preferences that read fine cannot be edited: \(error)")
        }
        let after: Preferences
        do { after = try Preferences.read(destination) } catch { Fuzz.fail("the edited preferences do not read back: \(error)") }
        Fuzz.check(after.isXML == before.isXML, "the edit changed the plist's format")
        Fuzz.check(after.cloudEnabled == edit.cloudEnabled, "the cloud key is \(String(describing: after.cloudEnabled)), not \(String(describing: edit.cloudEnabled))")
        let kept = before.cachedStoreUUIDs.filter { !edit.removes($0) }
        Fuzz.check(after.cachedStoreUUIDs == kept, "cache keys after the edit: \(after.cachedStoreUUIDs), expected \(kept)")
        let maps = before.accountMaps.filter { !edit.removeAccountMaps.contains($0.contentName) }
        Fuzz.check(after.accountMaps == maps, "account maps after the edit: \(after.accountMaps), expected \(maps)")
    }
    return 0
}
