import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum PreferencesReadFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// The app's preferences plist as `status` and every changing command read it
/// (`Preferences.read`, `Preferences.lookUpCloudKey`: a binary plist walked through its offset
/// table, an XML plist streamed). Seeds: binary and XML plists shaped like the fixtures' and the example's.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let url = Fuzz.write(Fuzz.bytes(data, size), to: "com.example.notes.plist")
    Fuzz.expectDocumented("Preferences.read") {
        let preferences = try Preferences.read(url)
        Fuzz.check(preferences.hasKey == (preferences.cloudEnabled != nil), "hasKey disagrees with cloudEnabled")
        for cached in preferences.cachedStoreUUIDs {
            Fuzz.check(cached.key.hasSuffix("+") && cached.key.contains(Preferences.cacheKeyMarker), "\(cached.key) is not a cache key")
        }
        for map in preferences.accountMaps {
            Fuzz.check(map.containerIDs.allSatisfy(PreferencesReader.isContainerID), "an account map lists a non-ID")
        }
    }
    Fuzz.expectDocumented("Preferences.lookUpCloudKey") { _ = try Preferences.lookUpCloudKey(url) }
    return 0
}
