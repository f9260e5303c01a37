// swift-tools-version: 6.1
import PackageDescription

/// Strategy plugins live under `Plugins/<Name>Strategy`, one library target each (see Plugins/README.md).
/// They are listed here so the executable and the tests pick up every one of them.
let strategyTargets: [Target] = []

let package = Package(
    name: "usm-repair",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "usm-repair", targets: ["usm-repair"]),
        .library(name: "USMRepairCore", targets: ["USMRepairCore"]),
    ],
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
        .target(
            name: "USMRepairCore",
            dependencies: [
                "CArchive",
                "CZlib",
                "CSupport",
                "CZstd",
                .product(name: "GRDB", package: "GRDB.swift"),
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
            ],
            path: "Sources/usm-repair"
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "USMRepairCore",
                "CArchive",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "USMRepairTests",
            dependencies: [
                "USMRepairCore",
                "TestSupport",
                "usm-repair",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/USMRepairTests"
        ),
    ] + strategyTargets,
    swiftLanguageModes: [.v6]
)
