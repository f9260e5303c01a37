import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum BundleVerifyFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// An archive as `bundle verify` reads it (`BundleVerifier.verify`: libarchive, any filter, tar or
/// zip; the manifest first, every entry checked against it, the stores it holds opened from
/// private copies). Seeds: bundles and snapshots written by usm-repair, as tar.zst, plain tar and zip.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let url = Fuzz.write(Fuzz.bytes(data, size), to: "bundle.tar.zst")
    Fuzz.expectDocumented("BundleVerifier.verify") {
        let report = try BundleVerifier.verify(url)
        Fuzz.check(report.ok == (report.mismatchCount == 0), "ok disagrees with the mismatches")
        Fuzz.check(report.matched <= report.entries, "more entries matched than read")
    }
    return 0
}
