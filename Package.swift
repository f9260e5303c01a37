// swift-tools-version: 6.1
import PackageDescription

/// The migration strategies, one library target each under `Plugins/<Name>Strategy` (Plugins/README.md),
/// each depending only on the core; the executable and the tests depend on every one of them.
let strategies = ["IOS", "CopyEntities", "Manual", "None"].map { "\($0)Strategy" }
let strategyTargets: [Target] = strategies.map {
    .target(
        name: $0, dependencies: ["USMRepairCore"], path: "Plugins/\($0)",
        exclude: $0 == "ManualStrategy" ? ["README.md"] : [])
}
let strategyDependencies: [Target.Dependency] = strategies.map { .target(name: $0) }
let grdb: Target.Dependency = .product(name: "GRDB", package: "GRDB.swift")

let package = Package(
    name: "usm-repair",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "usm-repair", targets: ["usm-repair"]),
        .library(name: "USMRepairCore", targets: ["USMRepairCore"]),
        // The strategies as products too, so another package (Fuzz/) can reach them.
    ] + strategies.map { .library(name: $0, targets: [$0]) },
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CArchive",
            path: "Sources/CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"]), .brew(["libarchive"])]
        ),
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            path: "Sources/CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]
        ),
        .target(name: "CSupport", path: "Sources/CSupport"),
        .target(name: "CDigest", path: "Sources/CDigest", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(
            name: "USMRepairCore",
            dependencies: [
                "CArchive",
                "CZlib",
                "CSupport",
                "CZstd",
                "CDigest",
                grdb,
                // SQLite's C API for what GRDB does not wrap: sqlite3_limit (bounded reads) and
                // sqlite3_system_errno (why a write of our own scratch database failed).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/USMRepairCore"
        ),
        .executableTarget(
            name: "usm-repair",
            dependencies: [
                "USMRepairCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ] + strategyDependencies,
            path: "Sources/usm-repair"
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "USMRepairCore",
                "CArchive",
                grdb,
                .product(name: "Crypto", package: "swift-crypto"),
            ] + strategyDependencies,
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "USMRepairTests",
            dependencies: [
                "USMRepairCore",
                "TestSupport",
                "usm-repair",
                grdb,
            ] + strategyDependencies,
            path: "Tests/USMRepairTests",
            // The golden plans are read by path (PlanGoldenTests), not built into the bundle.
            exclude: ["Plans"]
        ),
    ] + strategyTargets,
    swiftLanguageModes: [.v6]
)
