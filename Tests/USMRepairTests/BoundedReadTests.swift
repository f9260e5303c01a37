import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Values that cannot be meaningful at their size are refused with a problem instead of being
/// decoded whole: a metadata plist of megabytes, a model cache that inflates without end, an
/// entity name of megabytes. (Peak memory itself is measured by the benchmark, not here.)
@Suite("bounded reads", .timed)
struct BoundedReadTests {
    func inspect(_ sql: String, arguments: StatementArguments = [], depth: StoreInspector.Depth = .check) throws
        -> StoreReport
    {
        let tmp = try TempDir()
        let store = tmp.path("S.sqlite")
        try FixtureStore.write(to: store)
        let queue = try DatabaseQueue(path: store.path)
        try queue.write { db in try db.execute(sql: sql, arguments: arguments) }
        try queue.close()
        return try #require(try Inspection(options: LayoutOptions(store: store), depth: depth).run().stores.first)
    }

    @Test("a Z_PLIST over the cap is not decoded: metadata-plist-too-large", arguments: ["blob", "text"])
    func hugePlist(kind: String) throws {
        let size = StoreMetadata.plistLimit + 1
        let value: DatabaseValueConvertible = kind == "blob" ? Data(count: size) : String(repeating: "x", count: size)
        let s = try inspect("UPDATE Z_METADATA SET Z_PLIST = ?", arguments: [value])
        #expect(s.metadata?.plist == "too-large")
        let problem = try #require(s.problems.first { $0.code == .metadataPlistTooLarge })
        #expect(problem.severity == .error)
        if kind == "blob" { #expect(problem.message.contains("\(size) bytes"), "\(problem.message)") }
        #expect(s.storeUUID == FixtureStore.Options().storeUUID, "the rest of Z_METADATA is still read")
    }

    @Test("a Z_PLIST just under the cap is decoded as before")
    func plistUnderCap() throws {
        var dict: [String: Any] = ["NSStoreType": "SQLite"]
        dict["padding"] = Data(count: StoreMetadata.plistLimit - 200)
        let plist = try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0)
        let s = try inspect("UPDATE Z_METADATA SET Z_PLIST = ?", arguments: [plist])
        #expect(s.metadata?.plist == "ok")
        #expect(s.metadata?.storeType == "SQLite")
    }

    @Test("a model cache that inflates beyond the cap is left unused: model-cache-too-large")
    func hugeModelCache() throws {
        // A few hundred bytes of raw DEFLATE that inflate to far more than the cap.
        let bomb = Self.zeroBomb(bytes: ManagedObjectModel.inflatedLimit * 2)
        #expect(bomb.count < 100_000)
        #expect(Inflate.raw(bomb, limit: ManagedObjectModel.inflatedLimit) == nil)
        #expect(
            Inflate.raw(Self.zeroBomb(bytes: 1000), limit: 4096)?.count == 1000, "the hand-made stream is valid DEFLATE"
        )
        let s = try inspect("INSERT INTO Z_MODELCACHE VALUES (?)", arguments: [bomb])
        let problem = try #require(s.problems.first { $0.code == .modelCacheTooLarge })
        #expect(problem.severity == .warning)
        #expect(s.tables?.relationshipSource == "schema", "relationships come from the index names instead")
        // A stored blob over the cap is refused without being fetched.
        let big = try inspect(
            "INSERT INTO Z_MODELCACHE VALUES (zeroblob(?))", arguments: [ManagedObjectModel.inflatedLimit + 1])
        #expect(big.problems.contains { $0.code == .modelCacheTooLarge })
    }

    @Test("a model cache decoded again is answered from memory with the outcome of its own bytes")
    func decodedOnce() throws {
        // Blobs that share a long prefix and a length, so that only their whole bytes tell them apart.
        let bomb = Self.zeroBomb(bytes: ManagedObjectModel.inflatedLimit * 2)
        var damaged = bomb
        damaged[0] ^= 0b110  // BTYPE 11: not DEFLATE, and not a binary plist either
        let plist = Data("bplist00".utf8) + Data(count: bomb.count - 8)
        let blobs = [bomb, damaged, plist, bomb, plist, damaged]
        let first = blobs.map(ManagedObjectModel.decode)
        let again = blobs.map(ManagedObjectModel.decode)
        #expect(first == blobs.map(ManagedObjectModel.decodeOnce))
        #expect(again == first)
        #expect(first[0] == .tooLarge(bytes: nil))
        #expect(first[1] == .unreadable)
        #expect(first[2] == .unreadable)
    }

    @Test("an entity name of megabytes is a bookkeeping-value problem, not a name")
    func hugeName() throws {
        let s = try inspect(
            "UPDATE Z_PRIMARYKEY SET Z_NAME = ? WHERE Z_ENT = 6", arguments: [String(repeating: "T", count: 3 << 20)])
        let problem = try #require(s.problems.first { $0.code == .bookkeepingValue })
        #expect(problem.subject == "Z_PRIMARYKEY.Z_NAME")
        #expect(s.entities.count == 6)
        #expect(s.entities.allSatisfy { $0.name.utf8.count < 1000 })
        #expect(
            s.entities.first { $0.name == "Book" }?.rows == FixtureStore.Options().books, "the other entities are read")
    }

    /// Raw DEFLATE (one fixed-Huffman block) of `bytes` zero bytes: a literal 0, then matches of
    /// length 258 at distance 1, then shorter literals for the rest.
    static func zeroBomb(bytes: Int) -> Data {
        var writer = BitWriter()
        writer.bits(1, count: 1)  // BFINAL
        writer.bits(1, count: 2)  // BTYPE = 01, fixed Huffman
        func literalZero() { writer.huffman(0x30, count: 8) }
        literalZero()
        var left = bytes - 1
        while left >= 258 {
            writer.huffman(0b1100_0101, count: 8)  // length code 285 = 258
            writer.huffman(0, count: 5)  // distance code 0 = 1
            left -= 258
        }
        for _ in 0..<left { literalZero() }
        writer.huffman(0, count: 7)  // end of block (256)
        return writer.data()
    }

    /// DEFLATE's bit order: fields least-significant bit first, Huffman codes most-significant first.
    struct BitWriter {
        var bytes: [UInt8] = []
        var used = 8

        mutating func bit(_ b: Int) {
            if used == 8 {
                bytes.append(0)
                used = 0
            }
            if b != 0 { bytes[bytes.count - 1] |= UInt8(1 << used) }
            used += 1
        }

        mutating func bits(_ value: Int, count: Int) { for i in 0..<count { bit((value >> i) & 1) } }
        mutating func huffman(_ code: Int, count: Int) {
            for i in stride(from: count - 1, through: 0, by: -1) { bit((code >> i) & 1) }
        }
        func data() -> Data { Data(bytes) }
    }
}
