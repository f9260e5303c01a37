import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum MarkerFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// A marker file (`StoreUUID+`, `CorruptedUUID+`) as discovery reads it, and a file name as
/// discovery recognises markers by it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    let url = Fuzz.write(bytes, to: "StoreUUID+")
    Fuzz.expectDocumented("Marker.read") {
        guard let marker = try Marker.read(url, kind: .storeUUID, version: 1) else { Fuzz.fail("a marker file that exists read as absent") }
        Fuzz.check(marker.valid == (marker.defect == nil), "valid and defect disagree")
        if let value = marker.value {
            Fuzz.check(marker.valid && Marker.isValidUUID(value) && Array(value.utf8) == bytes, "a valid marker whose value is not its bytes")
        } else {
            Fuzz.check(!marker.valid, "a valid marker without a value")
        }
    }
    let name = String(decoding: bytes, as: UTF8.self)
    if let (kind, version) = Marker.parse(fileName: name) {
        Fuzz.check(Marker.fileName(kind, version: version) == name, "\(name.debugDescription) parsed as \(kind) \(version)")
    }
    return 0
}
