import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// `migrate-store SRC DST` and `salvage SRC DST` refuse a DST that is SRC under another name
/// (a hard link, a folder symlinked to SRC's, a symlink to SRC), as they refuse the same path:
/// exit 64, nothing changed. Compared by path alone, `--into` merged a store into itself (every
/// object twice, exit 0; red team G8).
@Suite("SRC and DST: the same store under another name is refused", .timed)
struct SameStoreTests {
    /// A fixture store `w/s.sqlite` with its file set, and the folder's state to compare against.
    static func store(_ tmp: TempDir) throws -> URL {
        let main = tmp.path("w/s.sqlite")
        try FixtureStore.write(to: main)
        return main
    }

    @Test("a hard link, a symlinked folder, a symlink to SRC: --into, --overwrite and salvage refuse (64), unchanged")
    func otherNames() throws {
        let tmp = try TempDir()
        let main = try Self.store(tmp)
        let folder = main.deletingLastPathComponent()
        try FileManager.default.linkItem(at: main, to: tmp.path("w/alias.sqlite"))
        try FileManager.default.createSymbolicLink(atPath: tmp.path("wl").path, withDestinationPath: folder.path)
        try FileManager.default.createSymbolicLink(
            atPath: tmp.path("w/link.sqlite").path, withDestinationPath: main.path)
        let before = try TreeSnapshot(folder)
        let names = [
            tmp.path("w/alias.sqlite").path, tmp.path("wl/s.sqlite").path, tmp.path("wl/alias.sqlite").path,
            tmp.path("w/link.sqlite").path,
        ]
        for name in names {
            for mode in [["--into"], ["--overwrite"]] {
                let r = USM.run(["migrate-store", main.path, name, "--yes", "--json"] + mode)
                #expect(r.status == 64, "\(name) \(mode): \(r.stderr)")
                let message = (r.json["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(
                    message
                        == "the source and the destination are the same store: \(name) is another name of \(main.path) (the same file, through a hard link or a symlink)",
                    "\(r.stdout)")
                let dry = USM.run(["migrate-store", main.path, name, "--dry-run"] + mode)
                #expect(dry.status == 64, "\(name) \(mode) --dry-run: \(dry.stderr)")
            }
            let salvage = USM.run(["salvage", main.path, name, "--overwrite", "--yes"])
            #expect(salvage.status == 64, "salvage \(name): \(salvage.stderr)")
            #expect(salvage.stderr.contains("the same store"), "\(salvage.stderr)")
            // Either way round.
            let reverse = USM.run(["migrate-store", name, main.path, "--into", "--yes"])
            #expect(reverse.status == 64, "\(name) as SRC: \(reverse.stderr)")
        }
        #expect(try TreeSnapshot(folder) == before)
        #expect(FileStatus.lookup(folder.appendingPathComponent(".usm-repair").path) == nil)
    }

    @Test("a copy of SRC (another file, the same bytes) is another store: --into merges it")
    func copyIsAnotherStore() throws {
        let tmp = try TempDir()
        let main = try Self.store(tmp)
        try FixtureStore.write(to: tmp.path("v/s.sqlite"))
        let r = USM.run(["migrate-store", main.path, tmp.path("v/s.sqlite").path, "--into", "--yes"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains("the same store"), "\(r.stderr)")
    }
}
