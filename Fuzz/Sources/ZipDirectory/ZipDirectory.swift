import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum ZipDirectoryFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// A zip's central directory as `bundle verify` and `restore` read it (to compare its names with
/// the local headers'): any bytes give the names or a documented error, never a crash, a hang or
/// an unbounded read.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    let url = Fuzz.write(bytes, to: "bundle.zip")
    Fuzz.expectDocumented("ZipCentralDirectory.forEachName") {
        var names = 0
        var total = 0
        try ZipCentralDirectory.forEachName(url.path) { name in
            names += 1
            total += name.count
            Fuzz.check(name.count <= 0xFFFF, "a name longer than its 16-bit length")
        }
        // Each listed entry takes at least its 46-byte record in the file.
        Fuzz.check(names * 46 + total <= bytes.count, "\(names) names (\(total) bytes) from \(bytes.count) bytes")
    }
    return 0
}
