import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// The `-wal` and `-shm` read byte by byte: a WAL SQLite would ignore, a transaction cut short,
/// and a WAL that does not belong with its main file or its `-shm` are problems with codes.
@Suite("WAL sidecars", .timed)
struct WALTests {
    /// A fixture store whose -wal holds `books` WAL-only books in one transaction.
    func walStore(_ tmp: TempDir, books: Int = 3, keepShm: Bool = true) throws -> URL {
        let store = tmp.path("S.sqlite")
        var options = FixtureStore.Options()
        options.walOnlyBooks = books
        try FixtureStore.write(to: store, options)
        if !keepShm { try FileManager.default.removeItem(atPath: store.path + "-shm") }
        return store
    }

    /// `check`'s report, run in process and through the CLI, proving nothing was written.
    func check(_ store: URL, in tmp: TempDir) throws -> (report: StoreReport, exit: Int32, codes: [String]) {
        let before = try TreeSnapshot(tmp.url)
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        let cli = USM.run(["check", "--store", store.path])
        #expect(try TreeSnapshot(tmp.url) == before)
        let s = try #require(report.stores.first)
        return (s, cli.status, s.problems.map(\.code.rawValue))
    }

    func bookRows(_ s: StoreReport) -> Int? { s.entities.first { $0.name == "Book" }?.rows }

    @Test("a sound WAL, an empty one and none at all raise nothing about the WAL")
    func sound() throws {
        for books in [0, 3] {
            let tmp = try TempDir()
            let store = try walStore(tmp, books: books)
            let r = try check(store, in: tmp)
            #expect(r.codes == [], "\(books): \(r.report.problems)")
            #expect(r.exit == 0)
            #expect(bookRows(r.report) == FixtureStore.Options().books + books)
        }
    }

    @Test("a -wal of random bytes")
    func randomBytes() throws {
        let tmp = try TempDir()
        let store = try walStore(tmp, books: 0)
        var rng = SeededRandom(seed: 11)
        try Data((0..<8192).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(
            to: URL(fileURLWithPath: store.path + "-wal"))
        let r = try check(store, in: tmp)
        #expect(r.codes == ["wal-invalid"])
        #expect(r.exit == 1)
        #expect(r.report.problems.first?.message.contains("not a WAL") == true, "\(r.report.problems)")
        let status = USM.run(["status", "--store", store.path])
        #expect(status.status == 1, "an error-level problem makes status exit 1, so a script notices")
        #expect(status.stdout.contains("wal-invalid"))
    }

    @Test("a -wal whose commit frame is cut: every WAL-only row lost, and said so")
    func cutCommit() throws {
        for keepShm in [false, true] {
            let tmp = try TempDir()
            let store = try walStore(tmp, books: 3, keepShm: keepShm)
            let wal = try FileHandle(forUpdating: URL(fileURLWithPath: store.path + "-wal"))
            let size = try wal.seekToEnd()
            try wal.truncate(atOffset: size - 100)
            try wal.close()
            let r = try check(store, in: tmp)
            #expect(r.codes.contains("wal-cut-transaction"), "\(r.report.problems)")
            // With the -shm beside it, the -shm also says it indexed frames the -wal no longer holds.
            #expect(r.codes.contains("wal-mismatch") == keepShm, "\(r.report.problems)")
            #expect(r.exit == 1)
            #expect(bookRows(r.report) == FixtureStore.Options().books, "what SQLite sees: the WAL-only rows are gone")
            let cut = try #require(r.report.problems.first { $0.code == .walCutTransaction })
            #expect(cut.count ?? 0 > 0)
        }
    }

    @Test("a flipped byte in the commit frame fails its checksum: the transaction is cut")
    func flippedByte() throws {
        let tmp = try TempDir()
        let store = try walStore(tmp, books: 3, keepShm: false)
        let url = URL(fileURLWithPath: store.path + "-wal")
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count - 10] ^= 0xFF
        try bytes.write(to: url)
        let r = try check(store, in: tmp)
        #expect(r.codes == ["wal-cut-transaction"], "\(r.report.problems)")
        #expect(bookRows(r.report) == FixtureStore.Options().books)
    }

    @Test("a -wal whose page size is not the main file's")
    func pageSize() throws {
        let tmp = try TempDir()
        let store = try walStore(tmp, books: 0, keepShm: false)
        // A WAL written by a database of 8192-byte pages.
        let other = tmp.path("other/O.sqlite")
        try FileManager.default.createDirectory(
            at: other.deletingLastPathComponent(), withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: other.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA page_size = 8192")
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x); INSERT INTO t VALUES (1)")
        }
        try FileManager.default.removeItem(atPath: store.path + "-wal")
        try FileManager.default.copyItem(atPath: other.path + "-wal", toPath: store.path + "-wal")
        try queue.close()
        try FileManager.default.removeItem(at: other.deletingLastPathComponent())
        let r = try check(store, in: tmp)
        #expect(r.codes.contains("wal-mismatch"), "\(r.report.problems)")
        let problem = try #require(r.report.problems.first { $0.code == .walMismatch })
        #expect(problem.message.contains("8192"))
        #expect(problem.message.contains("4096"))
        // SQLite itself refuses to apply such a WAL: the store reads as damaged (exit 2) or with problems (1).
        #expect([1, 2].contains(r.exit))
    }

    @Test("salts in the -wal header that differ from those the -shm records")
    func saltsDiffer() throws {
        let tmp = try TempDir()
        let store = try walStore(tmp, books: 2)
        let url = URL(fileURLWithPath: store.path + "-shm")
        var shm = try Data(contentsOf: url)
        // The wal-index header is kept twice (bytes 0-47 and 48-95); salts at offset 32 of each.
        for offset in [32, 80] { shm[offset] ^= 0x5A }
        try shm.write(to: url)
        let r = try check(store, in: tmp)
        #expect(r.codes == ["wal-mismatch"], "\(r.report.problems)")
        #expect(r.report.problems.first?.message.contains("salt") == true)
        #expect(r.exit == 1)
    }

    @Test("a -shm whose header is being rewritten (two copies differ) is not evidence")
    func shmInFlux() throws {
        let tmp = try TempDir()
        let store = try walStore(tmp, books: 2)
        let url = URL(fileURLWithPath: store.path + "-shm")
        var shm = try Data(contentsOf: url)
        shm[32] ^= 0x5A
        try shm.write(to: url)
        let r = try check(store, in: tmp)
        #expect(r.codes == [], "\(r.report.problems)")
    }

    @Test("a FIFO where the -shm should be is not opened", .timeLimit(.minutes(1)))
    func fifoShm() throws {
        let tmp = try TempDir()
        let store = try walStore(tmp, books: 2, keepShm: false)
        #expect(mkfifo(store.path + "-shm", 0o644) == 0)
        let r = USM.run(["check", "--store", store.path])
        // Reported without being opened: a member of the file set of the wrong kind (README: exit 2).
        #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("wrong-kind") || r.stdout.contains("not a regular file"), "\(r.stdout)")
    }

    @Test("a WAL of several MB is read in blocks, frame by frame")
    func largeWAL() throws {
        let tmp = try TempDir()
        let store = try walStore(tmp, books: 20_000, keepShm: false)
        let size = try FileManager.default.attributesOfItem(atPath: store.path + "-wal")[.size] as? Int ?? 0
        #expect(size > 1 << 20, "the WAL spans many read blocks")
        let wal = try WALFile.read(path: store.path + "-wal")
        #expect(wal.headerValid)
        #expect(wal.validFrames > 100)
        #expect(wal.validFrames == wal.committedFrames)
        #expect(wal.cutFrames == 0)
    }
}
