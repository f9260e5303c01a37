import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `bundle verify` and `restore` open each store a bundle holds and compare its Z_UUID and rows
/// per entity with the manifest: a store swapped with its file record and sidecar rewritten to
/// match is still found.
@Suite("store checks")
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
        #expect(try CLI.run(["archive", "--store", store.path, "-o", archive.path]).status == 0)
        let good = try CLI.run(["bundle", "verify", archive.path, "--json"])
        #expect(good.status == 0)
        #expect(good.json["storesChecked"] as? Int == 1)

        // Another store (other UUID, other rows) in its place; the manifest's file record and the
        // sidecar rewritten to match, as someone covering their tracks would.
        let x = tmp.path("x")
        try FileManager.default.createDirectory(at: x, withIntermediateDirectories: true)
        _ = try BundleTests.run("/usr/bin/env", ["bsdtar", "-xf", archive.path, "-C", x.path])
        let swapped = x.appendingPathComponent("store/S.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: swapped.path + suffix) }
        var other = FixtureStore.Options()
        other.storeUUID = "11111111-2222-4333-8444-555555555555"
        other.books = 9
        other.externalCovers = 0
        try FixtureStore.write(to: swapped, other)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: swapped.path + suffix) }
        let manifestURL = x.appendingPathComponent("manifest.json")
        var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        let status = try #require(FileStatus.lookup(swapped.path))
        let folder = try #require(FileStatus.lookup(x.appendingPathComponent("store").path))
        let digest = try FileCopy.sha256(of: swapped.path)
        manifest["files"] = (manifest["files"] as? [[String: Any]] ?? []).compactMap { record -> [String: Any]? in
            guard let path = record["path"] as? String else { return record }
            if path.hasSuffix("-wal") || path.hasSuffix("-shm") { return nil }
            if path == "store" {
                var r = record
                r["mtimeNanos"] = folder.mtime.totalNanoseconds
                r["mtime"] = folder.mtime.iso8601
                return r
            }
            guard path == "store/S.sqlite" else { return record }
            var r = record
            r["size"] = digest.bytes
            r["sha256"] = digest.sha256
            r["mode"] = String(format: "%04o", status.mode)
            r["mtimeNanos"] = status.mtime.totalNanoseconds
            r["mtime"] = status.mtime.iso8601
            return r
        }
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)
        let forged = tmp.path("forged.tar.zst")
        _ = try BundleTests.run("/bin/sh", ["-c", "cd '\(x.path)' && bsdtar --zstd -cf '\(forged.path)' manifest.json store && sha256sum '\(forged.path)' | sed 's|  .*/|  |' > '\(forged.path).sha256'"])
        try FileManager.default.removeItem(atPath: x.appendingPathComponent("store").path)

        let v = try CLI.run(["bundle", "verify", forged.path, "--json"])
        #expect(v.status == 1, "\(v.stdout)\(v.stderr)")
        #expect(v.json["sidecar"] as? String == "ok", "the sidecar was forged to match")
        let problems = (v.json["mismatches"] as? [[String: Any]] ?? []).compactMap { $0["problem"] as? String }
        #expect(problems.contains { $0.contains("Z_UUID 11111111-2222-4333-8444-555555555555 differs from the manifest's \(options.storeUUID)") }, "\(problems)")
        #expect(problems.contains { $0.contains("entity Book has 9 rows in the store, the manifest says \(options.books)") }, "\(problems)")
        let r = try CLI.run(["restore", forged.path, "--to", tmp.path("back").path])
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
            #expect(try CLI.run(["archive", "--container", paths.root.path, flag, "-o", archive.path]).status == 0)
            let v = try CLI.run(["bundle", "verify", archive.path, "--json"])
            #expect(v.status == 0, "\(flag): \(v.stdout)")
            #expect(v.json["storesChecked"] as? Int == 3)
        }
    }
}
