import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum ManifestFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// A bundle's or a snapshot's `manifest.json` as `bundle verify`, `restore` and the undo read it
/// (`ManifestReader`, a JSON stream into an SQLite index).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let folder = Fuzz.freshFolder("manifest")
    let file = Fuzz.write(Fuzz.bytes(data, size), to: "manifest.json", in: folder)
    Fuzz.expectDocumented("ManifestReader.read") {
        let index = try ManifestIndex(folder: folder)
        _ = try ManifestReader.read(file, into: index, archive: folder.appendingPathComponent("bundle.tar.zst"))
        let missing = try index.missing(limit: 10)
        Fuzz.check(missing.paths.count == min(10, missing.count), "the index lists \(missing.paths.count) of \(missing.count) records")
    }
    return 0
}
