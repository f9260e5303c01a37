// swift-tools-version: 6.1
// The fuzz targets of usm-repair (Fuzz/README.md): one executable per folder under `Sources/`, each
// defining `LLVMFuzzerTestOneInput`, built with `-sanitize=fuzzer` by Scripts/fuzz.sh. A new folder is
// a new target: nothing here lists them by hand.
import Foundation
import PackageDescription

let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
let sources = here.appendingPathComponent("Sources")
let names = ((try? FileManager.default.contentsOfDirectory(atPath: sources.path)) ?? [])
    .filter { name in
        var folder: ObjCBool = false
        return !name.hasPrefix(".") && FileManager.default.fileExists(atPath: sources.appendingPathComponent(name).path, isDirectory: &folder)
            && folder.boolValue
    }
    .sorted()

/// What every target may use: the core, the strategies (recipes, plugin output) and the shared helpers.
let common: [Target.Dependency] = [
    "FuzzSupport",
    .product(name: "USMRepairCore", package: "usm-repair"),
    .product(name: "ManualStrategy", package: "usm-repair"),
]

let package = Package(
    name: "usm-repair-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "usm-repair", path: "..")],
    targets: [
        .target(name: "CFuzzDriver", path: "Support/CFuzzDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzDriver", .product(name: "USMRepairCore", package: "usm-repair")], path: "Support/FuzzSupport"),
    ] + names.map { .executableTarget(name: $0, dependencies: common, path: "Sources/\($0)") },
    swiftLanguageModes: [.v6]
)
