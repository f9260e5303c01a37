import Foundation
import Testing
import TestSupport
@testable import USMRepairCore
#if canImport(Glibc)
    import Glibc
#endif

/// A store file longer than its header says, with holes (a local store truncated up to 4 GiB):
/// SQLite never reads past the header's page count, so a private copy takes only that (and the
/// `-wal`'s valid frames), keeps holes as holes, and checks the room it needs before writing
/// (exit 75 when short). Before, `status` wrote the whole 4 GiB into `TMPDIR`.
@Suite("a sparse store", .timed)
struct SparseStoreTests {
    static func quoted(_ path: String) -> String { "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test(
        "a local store truncated to 4 GiB (holes): status and check complete under ulimit -f 64 MiB (a real process); TMPDIR left empty"
    )
    func sparseLocalStore() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        let scratch = tmp.path("scratch")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let before = try CLI.shell(
            "usm-repair status --container \(Self.quoted(paths.root.path)) --json", in: tmp.url,
            environment: ["TMPDIR": scratch.path])
        #expect(truncate(paths.localStore.path, off_t(4) << 30) == 0)
        for command in ["status", "check"] {
            // 131072 blocks of 512 bytes: a private copy of the whole file (4 GiB) would fail (EFBIG).
            let r = try CLI.shell(
                "ulimit -f 131072; usm-repair \(command) --container \(Self.quoted(paths.root.path)) --json",
                in: tmp.url, environment: ["TMPDIR": scratch.path])
            #expect(r.status != 75, "\(command): \(r.stderr)")
            let local = (r.json["stores"] as? [[String: Any]])?.first { $0["role"] as? String == "local" }
            #expect(local?["health"] as? String == "ok", "\(command): \(String(describing: local))")
            if command == "status" { #expect(r.status == before.status, "\(r.stdout)") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty, "\(command)")
        }
    }

    @Test("a private copy keeps holes, hashes them as zeros, stops at a limit; short of room it says so (75) first")
    func sparseCopy() throws {
        let tmp = try TempDir()
        let source = tmp.path("sparse").path
        let fd = open(source, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(fd >= 0)
        let block = [UInt8](repeating: 0x5A, count: 8192)
        for offset in [0, 300 << 20, 900 << 20] {
            _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        }
        #expect(ftruncate(fd, off_t(1) << 30) == 0)
        close(fd)
        let copy = tmp.path("copy").path
        let result = try FileCopy.copy(from: source, to: copy, hashing: true)
        #expect(result.bytes == 1 << 30)
        #expect(result.sha256 == (try FileCopy.sha256(of: source)).sha256)
        var st = stat()
        #expect(stat(copy, &st) == 0)
        #expect(Int64(st.st_size) == 1 << 30)
        #expect(Int64(st.st_blocks) * 512 < 4 << 20, "holes kept: \(st.st_blocks) blocks")

        let cut = tmp.path("cut").path
        let part = try FileCopy.copy(from: source, to: cut, hashing: false, limit: 4096)
        #expect(part.bytes == 4096 && FileStatus.lookup(cut)?.size == 4096)

        #expect(throws: USMError.self) { try FileCopy.requireRoom(for: 1 << 60, at: copy, source: source) }
        do {
            try FileCopy.requireRoom(for: 1 << 60, at: copy, source: source)
        } catch let error as USMError {
            #expect(error.exitStatus == .outOfSpace && error.message.contains("nothing was written"), "\(error)")
        }
    }
}
