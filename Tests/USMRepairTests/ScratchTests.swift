import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// Scratch items (private copies, partial archives, extraction folders): recorded when made,
/// removed only by their own run or, after a kill, by a later run that can prove they were made
/// by this tool; never by name, never through a link, never while their run lives.
@Suite("scratch items", .timed)
struct ScratchTests {
    /// The registry folder the command-line runs of this test process use.
    static var cliRegistry: URL { CLI.stateHome.appendingPathComponent("usm-repair/scratch", isDirectory: true) }

    static func mode(_ path: String) -> UInt32? {
        var st = stat()
        return stat(path, &st) == 0 ? UInt32(st.st_mode) & 0o7777 : nil
    }

    @Test("restore never follows, chmods or removes a planted link named like its private folder")
    func plantedLinks() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let archive = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
        let victim = tmp.path("victim.txt")
        try Data("not yours".utf8).write(to: victim)
        #expect(chmod(victim.path, 0o644) == 0)
        let victimDir = tmp.path("victim-dir")
        try FileManager.default.createDirectory(at: victimDir, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: victimDir.appendingPathComponent("keep.txt"))
        #expect(chmod(victimDir.path, 0o755) == 0)
        let target = tmp.path("t")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: target.appendingPathComponent(".usm-restore-x").path, withDestinationPath: victim.path)
        try FileManager.default.createSymbolicLink(
            atPath: target.appendingPathComponent(".usm-restore-d").path, withDestinationPath: victimDir.path)

        let r = USM.run(["restore", archive.path, "--to", target.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            Self.mode(victim.path) == 0o644,
            "the file a planted link points at keeps its mode (run as root: \(geteuid() == 0))")
        #expect(Self.mode(victimDir.path) == 0o755)
        #expect(try String(contentsOf: victim, encoding: .utf8) == "not yours")
        #expect(FileManager.default.fileExists(atPath: victimDir.appendingPathComponent("keep.txt").path))
        #expect(
            FileStatus.lookup(target.appendingPathComponent(".usm-restore-x").path)?.kind == .symlink,
            "the planted link is left")
        #expect(FileStatus.lookup(target.appendingPathComponent(".usm-restore-d").path)?.kind == .symlink)
    }

    @Test("a user's file or folder named like a partial archive survives archive")
    func partialLookAlikes() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let out = tmp.path("out")
        let folder = out.appendingPathComponent(".b.tar.zst.partial-mine", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("my notes".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        try Data("half an archive?".utf8).write(to: out.appendingPathComponent(".b.tar.zst.partial-0000"))
        #expect(
            USM.run(["archive", "--container", paths.root.path, "-o", out.appendingPathComponent("b.tar.zst").path])
                .status == 0)
        #expect(try String(contentsOf: folder.appendingPathComponent("notes.txt"), encoding: .utf8) == "my notes")
        #expect(
            FileManager.default.fileExists(atPath: out.appendingPathComponent(".b.tar.zst.partial-0000").path),
            "nothing proves it was made by usm-repair, so it stays")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
                == [".b.tar.zst.partial-0000", ".b.tar.zst.partial-mine", "b.tar.zst", "b.tar.zst.sha256"])
    }

    @Test("a second archive to the same output leaves the partial file a live run holds")
    func livePartial() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let out = tmp.path("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        // This test process is the first run: it holds its record's lock while the second runs.
        let live = Scratch(folder: Self.cliRegistry)
        let (partial, fd) = try live.makeFile(in: out, name: ".b.tar.zst.partial-live")
        _ = write(fd, "in progress", 11)
        close(fd)
        let r = USM.run(["archive", "--container", paths.root.path, "-o", out.appendingPathComponent("b.tar.zst").path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            try String(contentsOfFile: partial.path, encoding: .utf8) == "in progress",
            "the live run's partial file is untouched")
        live.release(partial)
        #expect(FileStatus.lookup(partial.path) == nil)
    }

    @Test("a restored root named like the private folder survives the next restore")
    func restoredLookAlike() throws {
        let tmp = try TempDir()
        typealias E = CraftedArchive.Entry
        let file = E(".usm-restore-keep/a.txt", data: Data("restored".utf8))
        let crafted = tmp.path("odd.tar.gz")
        try CraftedArchive.write(
            [E("manifest.json", data: CraftedArchive.manifest(for: [file], roots: [".usm-restore-keep"])), file],
            to: crafted)
        let target = tmp.path("t")
        #expect(USM.run(["restore", crafted.path, "--to", target.path]).status == 0)
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        let archive = tmp.path("b.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
        #expect(USM.run(["restore", archive.path, "--to", target.path]).status == 0)
        #expect(
            try String(contentsOf: target.appendingPathComponent(".usm-restore-keep/a.txt"), encoding: .utf8)
                == "restored")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: target.path).sorted() == [
                ".usm-restore-keep", "container",
            ])
    }

    @Test("a killed run's private copies and partial file are removed by the next run, and only those")
    func killedRun() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"), BundleTests.inside)
        // A large (sparse) transaction log keeps the run busy long enough to be stopped mid-write.
        let big = paths.logs.appendingPathComponent("big.cdt")
        #expect(FileManager.default.createFile(atPath: big.path, contents: nil))
        #expect(truncate(big.path, 256 << 20) == 0)
        let tmpdir = tmp.path("tmpdir")
        let out = tmp.path("out")
        for dir in [tmpdir, out] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        let env = ["TMPDIR": tmpdir.path]

        let run = try CLI.launch(
            ["archive", "--container", paths.root.path, "-o", out.appendingPathComponent("k.tar.zst").path],
            environment: env)
        // Wait until the run has recorded its partial file (so it is writing), then kill it.
        var recorded = false
        while run.isRunning, !recorded {
            let records = (try? FileManager.default.contentsOfDirectory(atPath: Self.cliRegistry.path)) ?? []
            recorded = records.filter { $0.hasPrefix("run-\(run.processIdentifier)-") }.contains { name in
                let text =
                    (try? String(contentsOf: Self.cliRegistry.appendingPathComponent(name), encoding: .utf8)) ?? ""
                return text.contains(".k.tar.zst.partial-")
            }
            if !recorded { usleep(2000) }
        }
        try #require(recorded, "the run ended before it could be stopped")
        kill(run.processIdentifier, SIGKILL)
        run.waitUntilExit()
        let leftCopies = try FileManager.default.contentsOfDirectory(atPath: tmpdir.path).filter {
            $0.hasPrefix("usm-repair-")
        }
        let leftPartial = try FileManager.default.contentsOfDirectory(atPath: out.path).filter {
            $0.contains(".partial-")
        }
        #expect(!leftCopies.isEmpty, "the killed run left its private folder")
        #expect(leftPartial.count == 1, "the killed run left its partial file")

        // Look-alikes nobody recorded, and an item of a live run (this process), must stay.
        let planted = tmpdir.appendingPathComponent("usm-repair-bundle-00000000-NOT-OURS", isDirectory: true)
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: true)
        let live = Scratch(folder: Self.cliRegistry)
        let held = try live.makeDirectory(in: tmpdir, name: "usm-repair-read-live")

        let store = tmp.path("s/S.sqlite")
        try FixtureStore.write(to: store)
        #expect(USM.run(["status", "--store", store.path], environment: env).status == 0)
        for name in leftCopies {
            #expect(FileStatus.lookup(tmpdir.appendingPathComponent(name).path) == nil, "\(name) removed")
        }
        for name in leftPartial {
            #expect(FileStatus.lookup(out.appendingPathComponent(name).path) == nil, "\(name) removed")
        }
        #expect(FileStatus.lookup(planted.path)?.kind == .directory, "an unrecorded look-alike stays")
        #expect(FileStatus.lookup(held.path)?.kind == .directory, "a live run's item stays")
        let records = try FileManager.default.contentsOfDirectory(atPath: Self.cliRegistry.path)
        #expect(!records.contains { $0.hasPrefix("run-\(run.processIdentifier)-") }, "the dead run's record is gone")
        live.release(held)
        #expect(FileStatus.lookup(held.path) == nil)
    }

    @Test("cleanup removes an abandoned item only while it is the very object recorded, never through a link")
    func identityAndLinks() throws {
        let tmp = try TempDir()
        let registryFolder = tmp.path("state/scratch")
        let area = tmp.path("area")
        try FileManager.default.createDirectory(at: area, withIntermediateDirectories: true)
        let victim = tmp.path("victim")
        try FileManager.default.createDirectory(at: victim, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: victim.appendingPathComponent("keep.txt"))

        var first: Scratch? = Scratch(folder: registryFolder)
        let gone = try #require(first).makeDirectory(in: area, name: "abandoned")
        // Inside an item: a link out, a read-only folder; removal must not follow the link.
        try FileManager.default.createSymbolicLink(
            atPath: gone.url.appendingPathComponent("out").path, withDestinationPath: victim.path)
        try FileManager.default.createDirectory(
            at: gone.url.appendingPathComponent("ro/deeper"), withIntermediateDirectories: true)
        #expect(chmod(gone.url.appendingPathComponent("ro").path, 0o500) == 0)
        let replaced = try #require(first).makeDirectory(in: area, name: "replaced")
        let linked = try #require(first).makeFile(in: area, name: "linked")
        close(linked.fd)
        first = nil  // the run dies: its lock is free, its items outstanding

        // Someone else's folder now sits where one item was; a link where another was.
        try FileManager.default.removeItem(at: replaced.url)
        try FileManager.default.createDirectory(at: replaced.url, withIntermediateDirectories: true)
        try FileManager.default.removeItem(atPath: linked.item.path)
        try FileManager.default.createSymbolicLink(
            atPath: linked.item.path, withDestinationPath: victim.appendingPathComponent("keep.txt").path)

        let removed = Scratch(folder: registryFolder).cleanUpAbandoned()
        #expect(removed == [gone.path])
        #expect(FileStatus.lookup(gone.path) == nil)
        #expect(FileStatus.lookup(replaced.path)?.kind == .directory, "another object at the path is not ours")
        #expect(FileStatus.lookup(linked.item.path)?.kind == .symlink, "a link at the path is left")
        #expect(try String(contentsOf: victim.appendingPathComponent("keep.txt"), encoding: .utf8) == "keep")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: registryFolder.path).isEmpty, "the dead record is gone")
    }

    @Test("without a usable state folder, items are still made and released")
    func noStateFolder() throws {
        let tmp = try TempDir()
        try Data().write(to: tmp.path("file"))
        let registry = Scratch(folder: tmp.path("file/scratch"))  // below a file: cannot be created
        let item = try registry.makeDirectory(in: tmp.url, name: "work")
        #expect(FileStatus.lookup(item.path)?.kind == .directory)
        registry.release(item)
        #expect(FileStatus.lookup(item.path) == nil)
    }
}
