import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The executor's folders are made and its items moved one name at a time from the plan's root,
/// never through a link, and never over an item that appeared (issue 20, G3: a link swapped in for
/// the operation's trash while a run goes on had a folder made outside the layout).
@Suite("anchored folders and moves", .timed)
struct AnchoredPathTests {
    /// A root with `a/b`, and an outside folder beside it.
    static func layout() throws -> (tmp: TempDir, root: String, outside: URL) {
        let tmp = try TempDir()
        let root = tmp.path("root").path
        try FileManager.default.createDirectory(atPath: root + "/a/b", withIntermediateDirectories: true)
        let outside = tmp.path("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: outside.appendingPathComponent("f"))
        return (tmp, root, outside)
    }

    @Test("a folder is made below the root, missing folders too, mode 0700")
    func makesFolders() throws {
        let (tmp, root, _) = try Self.layout()
        defer { withExtendedLifetime(tmp) {} }
        try AnchoredPath.makeFolder(root + "/a/b/c/d", under: root)
        let status = try #require(FileStatus.lookup(root + "/a/b/c/d"))
        #expect(status.kind == .directory)
        var st = stat()
        #expect(stat(root + "/a/b/c", &st) == 0 && st.st_mode & 0o777 == 0o700)
        // Made again: nothing to do, no error.
        try AnchoredPath.makeFolder(root + "/a/b/c/d", under: root)
    }

    @Test("a link anywhere on the way is refused and nothing is made through it", arguments: ["a", "a/b"])
    func linkOnTheWay(_ linked: String) throws {
        let (tmp, root, outside) = try Self.layout()
        defer { withExtendedLifetime(tmp) {} }
        let before = try TreeSnapshot(outside)
        try FileManager.default.moveItem(atPath: root + "/" + linked, toPath: root + "/" + linked + ".gone")
        try FileManager.default.createSymbolicLink(atPath: root + "/" + linked, withDestinationPath: outside.path)
        #expect(throws: USMError.self) { try AnchoredPath.makeFolder(root + "/a/b/c", under: root) }
        do {
            try AnchoredPath.makeFolder(root + "/a/b/c", under: root)
        } catch let error as USMError {
            #expect(error.code == "symlink-escapes", "\(error.message)")
        }
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/x"))
        #expect(throws: USMError.self) {
            try AnchoredPath.move(root + "/x", under: root, to: root + "/a/b/x", under: root)
        }
        #expect(FileStatus.lookup(root + "/x") != nil, "nothing moved")
        #expect(try TreeSnapshot(outside) == before, "nothing made or moved outside")
    }

    @Test("a move never replaces an item that appeared at its destination", arguments: [false, true])
    func noReplace(_ folder: Bool) throws {
        let (tmp, root, _) = try Self.layout()
        defer { withExtendedLifetime(tmp) {} }
        try Data("mine".utf8).write(to: URL(fileURLWithPath: root + "/from"))
        if folder {
            try FileManager.default.createDirectory(atPath: root + "/a/to", withIntermediateDirectories: false)
        } else {
            try Data("newcomer".utf8).write(to: URL(fileURLWithPath: root + "/a/to"))
        }
        do {
            try AnchoredPath.move(root + "/from", under: root, to: root + "/a/to", under: root)
            Issue.record("the move replaced what was there")
        } catch let error as USMError {
            #expect(error.code == "changed", "\(error.message)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: root + "/from")) == Data("mine".utf8))
        if !folder { #expect(try Data(contentsOf: URL(fileURLWithPath: root + "/a/to")) == Data("newcomer".utf8)) }
        try FileManager.default.removeItem(atPath: root + "/a/to")
        try AnchoredPath.move(root + "/from", under: root, to: root + "/a/to", under: root)
        #expect(try Data(contentsOf: URL(fileURLWithPath: root + "/a/to")) == Data("mine".utf8))
        #expect(FileStatus.lookup(root + "/from") == nil)
    }

    /// Another thread swaps `a/b` for a link to the outside and back, as fast as it can, while
    /// folders are made and items moved below it: whatever the timing, nothing lands outside (a
    /// check of the path followed by a change through the path let 7 of 14 runs make a folder there).
    @Test("a link swapped in while folders are made and items moved: nothing ever lands outside")
    func swappedWhileRunning() throws {
        let (tmp, root, outside) = try Self.layout()
        defer { withExtendedLifetime(tmp) {} }
        let before = try TreeSnapshot(outside)
        let stop = Flag()
        let swapper = Thread {
            while !stop.isSet {
                _ = rename(root + "/a/b", root + "/a/b.gone")
                _ = symlink(outside.path, root + "/a/b")
                _ = unlink(root + "/a/b")
                _ = rename(root + "/a/b.gone", root + "/a/b")
            }
            stop.finished()
        }
        swapper.start()
        var made = 0
        var moved = 0
        for i in 0..<3000 {
            if (try? AnchoredPath.makeFolder(root + "/a/b/t\(i)", under: root)) != nil { made += 1 }
            let item = root + "/item\(i)"
            _ = FileManager.default.createFile(atPath: item, contents: Data("i".utf8))
            if (try? AnchoredPath.move(item, under: root, to: root + "/a/b/i\(i)", under: root)) != nil { moved += 1 }
        }
        stop.set()
        stop.waitFinished()
        _ = rename(root + "/a/b.gone", root + "/a/b")
        #expect(try TreeSnapshot(outside) == before, "made \(made) folders, moved \(moved) items; some landed outside")
        #expect(made > 0 && moved > 0, "the swaps left no moment to act in: \(made) folders, \(moved) items")
    }
}

/// A flag shared with a thread.
private final class Flag: @unchecked Sendable {
    private let lock = NSCondition()
    private var value = false
    private var done = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
    func finished() {
        lock.withLock {
            done = true
            lock.broadcast()
        }
    }
    func waitFinished() {
        lock.lock()
        while !done { lock.wait() }
        lock.unlock()
    }
}
