import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files of the wrong kind planted where the layout expects others (a FIFO as a `-wal` or a
/// marker, a plain file where a folder belongs, a sidecar that is a FIFO): read-only commands
/// report them promptly (never open a FIFO, never hang), changing commands refuse before any
/// change, and no snapshot silently leaves out an item the plan would remove.
@Suite("hostile kinds: FIFOs, files for folders, unreadable sidecars", .timed)
struct HostileKindTests {
    typealias Fixture = OperationTests.Fixture

    /// Every entry below `root` by kind, size, mode and (regular files only) content: a FIFO is
    /// listed, never opened.
    static func tree(_ root: URL) throws -> [String: String] {
        var result: [String: String] = [:]
        var stack = [root.path]
        while let dir = stack.popLast() {
            for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
                let path = dir + "/" + name
                guard let status = FileStatus.lookup(path) else { continue }
                var entry = "\(status.kind.rawValue) \(status.size) \(status.mode) \(status.inode)"
                switch status.kind {
                case .directory: stack.append(path)
                case .file: entry += " " + (try Data(contentsOf: URL(fileURLWithPath: path))).base64EncodedString()
                case .symlink: entry += " " + (try FileManager.default.destinationOfSymbolicLink(atPath: path))
                default: break
                }
                result[String(path.dropFirst(root.path.count))] = entry
            }
        }
        return result
    }

    static func trees(_ f: Fixture) throws -> [[String: String]] { try f.paths.folders.map(tree) }

    static func codes(_ r: CLI.Result) -> [String] {
        var all = (r.json["problems"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        for store in r.json["stores"] as? [[String: Any]] ?? [] {
            all += (store["problems"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        }
        return all
    }

    static func errorCode(_ r: CLI.Result) -> String? { (r.json["error"] as? [String: Any])?["code"] as? String }

    /// A FIFO where the local store's `-wal` belongs.
    static func fifoWAL() throws -> Fixture {
        let f = try Fixture()
        let wal = f.paths.localStore.path + "-wal"
        try? FileManager.default.removeItem(atPath: wal)
        #expect(mkfifo(wal, 0o644) == 0)
        return f
    }

    @Test("a FIFO as the -wal: status and check answer at once with wrong-kind", .timeLimit(.minutes(1)))
    func fifoWALReadOnly() throws {
        let f = try Self.fifoWAL()
        let before = try Self.trees(f)
        for command in ["status", "check"] {
            let r = try f.run([command, "--json"])
            #expect(r.status == 2, "\(command): \(r.stdout)\(r.stderr)")
            #expect(Self.codes(r).contains("wrong-kind"), "\(command): \(Self.codes(r))")
        }
        #expect(try Self.trees(f) == before)
    }

    @Test("a FIFO as the -wal: every changing command refuses, nothing changed", .timeLimit(.minutes(1)))
    func fifoWALChanging() throws {
        let f = try Self.fifoWAL()
        let before = try Self.trees(f)
        for args in [
            ["rebuild", "--from", "local", "--discard-cloud"], ["switch", f.options.oldUUID ?? ""],
            ["delete", "local-store"], ["migrate", "local-to-cloud"],
        ] {
            let r = try f.run(args + ["--yes", "--json"])
            #expect(r.status == 2, "\(args): \(r.stdout)\(r.stderr)")
            #expect(Self.errorCode(r) == "wrong-kind", "\(args): \(r.stdout)")
            #expect(try Self.trees(f) == before, "\(args)")
        }
    }

    @Test("a FIFO as StoreUUID+: status answers, switch and rebuild refuse, nothing changed", .timeLimit(.minutes(1)))
    func fifoMarker() throws {
        let f = try Fixture()
        let marker = f.paths.logs.appendingPathComponent("StoreUUID+").path
        try FileManager.default.removeItem(atPath: marker)
        #expect(mkfifo(marker, 0o644) == 0)
        let before = try Self.trees(f)
        let s = try f.run(["status", "--json"])
        #expect(s.status != 0, "\(s.stdout)")
        for args in [["switch", f.options.oldUUID ?? ""], ["rebuild", "--from", "local", "--discard-cloud"]] {
            let r = try f.run(args + ["--yes", "--json"])
            #expect(r.status == 2, "\(args): \(r.stdout)\(r.stderr)")
            #expect(Self.errorCode(r) == "wrong-kind", "\(args): \(r.stdout)")
            #expect(try Self.trees(f) == before, "\(args)")
        }
        #expect(FileStatus.lookup(marker)?.kind == .fifo)
    }

    @Test("a FIFO among the transaction logs: delete container refuses, nothing changed", .timeLimit(.minutes(1)))
    func fifoInLogs() throws {
        let f = try Fixture()
        let pipe = f.paths.logs.appendingPathComponent(f.options.activeUUID + "/pipe").path
        #expect(mkfifo(pipe, 0o644) == 0)
        let before = try Self.trees(f)
        let r = try f.run(["delete", "container", "--yes", "--json"])
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(Self.errorCode(r) == "wrong-kind", "\(r.stdout)")
        #expect(try Self.trees(f) == before)
    }

    @Test("a plain file where a folder of the layout belongs is wrong-kind, and changing commands refuse")
    func fileForFolder() throws {
        for folder in ["CloudStore/CoreDataUbiquitySupport", "CloudStore", "CloudLogs"] {
            let f = try Fixture()
            let url =
                folder == "CloudLogs"
                ? f.paths.logs : f.paths.appDir.appendingPathComponent(folder)
            try FileManager.default.removeItem(at: url)
            try Data("file".utf8).write(to: url)
            let before = try Self.trees(f)
            let s = try f.run(["status", "--json"])
            #expect(s.status == 2, "\(folder): \(s.stdout)")
            #expect(Self.codes(s).contains("wrong-kind"), "\(folder): \(Self.codes(s))")
            let r = try f.run(["rebuild", "--from", "local", "--discard-cloud", "--yes", "--json"])
            #expect(r.status == 2, "\(folder): \(r.stdout)\(r.stderr)")
            #expect(Self.errorCode(r) == "wrong-kind", "\(folder): \(r.stdout)")
            #expect(try Self.trees(f) == before, "\(folder)")
        }
    }

    @Test(
        "a sidecar that is a FIFO, a link to /dev/zero or too large is unreadable, not absent", .timeLimit(.minutes(1)))
    func sidecarKinds() throws {
        let f = try Fixture()
        let archive = f.tmp.path("b.tar.zst")
        let a = USM.run(["archive", "--container", f.paths.root.path, "-o", archive.path])
        #expect(a.status == 0, "\(a.stderr)")
        let sidecar = archive.path + ".sha256"
        for kind in ["fifo", "devzero", "large"] {
            try? FileManager.default.removeItem(atPath: sidecar)
            switch kind {
            case "fifo": #expect(mkfifo(sidecar, 0o644) == 0)
            case "devzero":
                try FileManager.default.createSymbolicLink(atPath: sidecar, withDestinationPath: "/dev/zero")
            default:
                #expect(FileManager.default.createFile(atPath: sidecar, contents: nil))
                #expect(truncate(sidecar, 1 << 30) == 0)
            }
            let r = USM.run(["bundle", "verify", archive.path, "--json"])
            #expect(r.status == 1, "\(kind): \(r.stdout)\(r.stderr)")
            #expect(r.json["sidecar"] as? String == "unreadable", "\(kind): \(r.stdout)")
        }
        try FileManager.default.removeItem(atPath: sidecar)
        let r = USM.run(["bundle", "verify", archive.path, "--json"])
        #expect(r.status == 0 && r.json["sidecar"] as? String == "absent", "\(r.stdout)")
    }

    @Test("a plain file named .usm-repair is called what it is, not a symlink")
    func privateFolderIsFile() throws {
        let f = try Fixture()
        let privateFolder = f.paths.appDir.appendingPathComponent(".usm-repair")
        try Data("junk".utf8).write(to: privateFolder)
        let before = try Self.trees(f)
        let r = try f.run(["rebuild", "--from", "local", "--discard-cloud", "--yes", "--json"])
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(Self.errorCode(r) == "wrong-kind", "\(r.stdout)")
        let message = (r.json["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(!message.contains("symlink") && message.contains("regular file"), "\(message)")
        #expect(try Self.trees(f) == before)
    }
}
