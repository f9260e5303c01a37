import CSupport
import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// Removing a tree this tool made: everything in it goes, links as links (never what they lead
/// to), many files at once (`usm_unlink_files`), folders one by one.
@Suite("safe removal of a tree", .timed)
struct SafeRemoveTests {
    @Test(
        "a tree of many files, nested and read-only folders and links out: all removed, what the links lead to untouched"
    )
    func wholeTree() throws {
        let tmp = try TempDir()
        let outside = tmp.path("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: outside.appendingPathComponent("keep.txt"))
        let doomed = tmp.path("doomed")
        let files = doomed.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        for i in 0..<300 {
            try Data(repeating: UInt8(i % 256), count: 4096).write(to: files.appendingPathComponent("f\(i)"))
        }
        for i in 0..<12 {
            try FileManager.default.createSymbolicLink(
                atPath: files.appendingPathComponent("link-file-\(i)").path,
                withDestinationPath: outside.appendingPathComponent("keep.txt").path)
            try FileManager.default.createSymbolicLink(
                atPath: files.appendingPathComponent("link-dir-\(i)").path, withDestinationPath: outside.path)
        }
        // Folders among the files (handled one by one), one of them read-only with files inside.
        for i in 0..<5 {
            let sub = files.appendingPathComponent("sub\(i)")
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            for j in 0..<20 { try Data("x".utf8).write(to: sub.appendingPathComponent("g\(j)")) }
            if i == 3 { #expect(chmod(sub.path, 0o500) == 0) }
        }
        try SafeRemove.tree(doomed)
        #expect(FileStatus.lookup(doomed.path) == nil)
        #expect(try String(contentsOf: outside.appendingPathComponent("keep.txt"), encoding: .utf8) == "keep")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["keep.txt"])
    }

    @Test("usm_unlink_files: files and links removed on several lanes, folders left and said, missing names said")
    func unlinkFiles() throws {
        let tmp = try TempDir()
        let folder = tmp.path("f")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var names: [String] = []
        for i in 0..<40 {
            try Data("x".utf8).write(to: folder.appendingPathComponent("file\(i)"))
            names.append("file\(i)")
        }
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("dir"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("link").path, withDestinationPath: tmp.path("target").path)
        try FileManager.default.createDirectory(at: tmp.path("target"), withIntermediateDirectories: true)
        names += ["dir", "link", "missing"]
        let fd = open(folder.path, O_RDONLY | O_DIRECTORY)
        #expect(fd >= 0)
        defer { close(fd) }
        var results = [Int32](repeating: -1, count: names.count)
        let raw = names.map { strdup($0) }
        defer { for pointer in raw { free(pointer) } }
        let pointers = raw.map { UnsafePointer($0) }
        _ = pointers.withUnsafeBufferPointer { list in
            results.withUnsafeMutableBufferPointer { out in
                usm_unlink_files(fd, list.baseAddress, Int32(names.count), 7, out.baseAddress)
            }
        }
        #expect(results.prefix(40).allSatisfy { $0 == 0 })
        #expect(results[40] == 1, "a folder is left for the caller")
        #expect(results[41] == 0, "a link is removed as a link")
        #expect(results[42] == ENOENT)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["dir"])
        #expect(FileStatus.lookup(tmp.path("target").path)?.kind == .directory)
    }
}
