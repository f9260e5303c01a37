import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `bundle verify` and `restore` open each store a bundle holds and compare its Z_UUID and rows
/// per entity with the manifest: a store swapped with its file record and sidecar rewritten to
/// match is still found.
@Suite("store checks", .timed)
struct BundleStoreCheckTests {
    @Test("a swapped store with a consistent file record and sidecar is refused")
    func swappedStore() throws {
        let tmp = try TempDir()
        var options = FixtureStore.Options()
        options.walOnlyBooks = 0
        options.externalCovers = 0
        let store = tmp.path("in/S.sqlite")
        try FixtureStore.write(to: store, options)
        let archive = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--store", store.path, "-o", archive.path]).status == 0)
        let good = USM.run(["bundle", "verify", archive.path, "--json"])
        #expect(good.status == 0)
        #expect(good.json["storesChecked"] as? Int == 1)

        // Another store (other UUID, other rows) in its place; the manifest's file record and the
        // sidecar rewritten to match, as someone covering their tracks would.
        let x = tmp.path("x")
        let swapped = x.appendingPathComponent("S.sqlite")
        var other = FixtureStore.Options()
        other.storeUUID = "11111111-2222-4333-8444-555555555555"
        other.books = 9
        other.externalCovers = 0
        try FixtureStore.write(to: swapped, other)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: swapped.path + suffix) }
        let swappedData = try Data(contentsOf: swapped)
        let digest = try FileCopy.sha256(of: swapped.path)
        let items = try ArchiveContents.items(archive).filter {
            !$0.path.hasSuffix("-wal") && !$0.path.hasSuffix("-shm")
        }
        let manifestData = try #require(items.first { $0.path == "manifest.json" }?.data)
        var manifest = try #require(try JSONSerialization.jsonObject(with: manifestData) as? [String: Any])
        manifest["files"] = (manifest["files"] as? [[String: Any]] ?? []).compactMap { record -> [String: Any]? in
            guard let path = record["path"] as? String else { return record }
            if path.hasSuffix("-wal") || path.hasSuffix("-shm") { return nil }
            guard path == "store/S.sqlite" else { return record }
            var r = record
            r["size"] = digest.bytes
            r["sha256"] = digest.sha256
            return r
        }
        let forgedManifest = try JSONSerialization.data(withJSONObject: manifest)
        let forged = tmp.path("forged.tar.zst")
        try CraftedArchive.write(
            items.map { item in
                let kind: CraftedArchive.Entry.Kind =
                    item.kind == .directory ? .directory : item.kind == .symlink ? .symlink : .file
                let data =
                    item.path == "manifest.json"
                    ? forgedManifest : item.path == "store/S.sqlite" ? swappedData : item.data
                return CraftedArchive.Entry(
                    item.path, kind, data: data, linkTarget: item.linkTarget, mode: item.mode,
                    mtime: item.mtime.seconds, mtimeNanoseconds: Int(item.mtime.nanoseconds))
            }, to: forged, zstd: true)
        let forgedDigest = try FileCopy.sha256(of: forged.path).sha256
        try Data("\(forgedDigest)  forged.tar.zst\n".utf8).write(to: URL(fileURLWithPath: forged.path + ".sha256"))

        let v = USM.run(["bundle", "verify", forged.path, "--json"])
        #expect(v.status == 1, "\(v.stdout)\(v.stderr)")
        #expect(v.json["sidecar"] as? String == "ok", "the sidecar was forged to match")
        let problems = (v.json["mismatches"] as? [[String: Any]] ?? []).compactMap { $0["problem"] as? String }
        #expect(
            problems.contains {
                $0.contains(
                    "Z_UUID 11111111-2222-4333-8444-555555555555 differs from the manifest's \(options.storeUUID)")
            }, "\(problems)")
        #expect(
            problems.contains {
                $0.contains("entity Book has 9 rows in the store, the manifest says \(options.books)")
            }, "\(problems)")
        let r = USM.run(["restore", forged.path, "--to", tmp.path("back").path])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("store/S.sqlite: "), "\(r.stderr)")
        #expect(FileStatus.lookup(tmp.path("back/store").path) == nil, "nothing restored")
    }

    @Test("redacted and metadata-only bundles verify against their stores")
    func transformed() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        for flag in ["--redact", "--metadata-only"] {
            let archive = tmp.path("b\(flag).tar.zst")
            #expect(USM.run(["archive", "--container", paths.root.path, flag, "-o", archive.path]).status == 0)
            let v = USM.run(["bundle", "verify", archive.path, "--json"])
            #expect(v.status == 0, "\(flag): \(v.stdout)")
            #expect(v.json["storesChecked"] as? Int == 3)
        }
    }
}
