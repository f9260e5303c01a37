import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// One test per problem code that no other test provoked (issue 30's audit): each builds the
/// smallest input that shows the defect (a cached fixture store or container, changed in place)
/// and checks the code is reported. `everyCodeProvoked` keeps the rule for codes added later.
@Suite("problem codes: each provoked", .timed)
struct ProblemCodeTests {
    /// `check` in process on a fixture store changed by `damage`: the codes it reports.
    static func codes(
        _ damage: (URL) throws -> Void, inspect: ((URL) -> URL)? = nil
    ) throws -> Set<String> {
        let tmp = try TempDir()
        let store = tmp.path("Library.sqlite")
        try FixtureStore.write(to: store)
        try damage(store)
        let report = try Inspection(options: LayoutOptions(store: inspect?(store) ?? store), depth: .check).run()
        return Set(report.allProblems.map(\.code.rawValue))
    }

    /// Sets the header's read and write versions (bytes 18 and 19): 1 is rollback journal, 2 WAL.
    static func setJournalVersion(_ store: URL, _ version: UInt8) throws {
        let handle = try FileHandle(forUpdating: store)
        defer { try? handle.close() }
        try handle.seek(toOffset: 18)
        try handle.write(contentsOf: Data([version, version]))
    }

    @Test("stray-wal: a -wal beside a store in rollback-journal mode")
    func strayWal() throws {
        let codes = try Self.codes { store in
            try Self.setJournalVersion(store, 1)
            try Data(count: 32).write(to: URL(fileURLWithPath: store.path + "-wal"))
        }
        #expect(codes.contains("stray-wal"), "\(codes)")
    }

    @Test("hot-journal: a -journal beside the store")
    func hotJournal() throws {
        let codes = try Self.codes { store in
            try Self.setJournalVersion(store, 1)
            try Data(count: 512).write(to: URL(fileURLWithPath: store.path + "-journal"))
        }
        #expect(codes.contains("hot-journal"), "\(codes)")
    }

    @Test("orphan-sidecar: the local store's main file gone, its -wal left")
    func orphanSidecar() throws {
        let tmp = try TempDir()
        var o = FixtureContainer.Options()
        o.local.walOnlyBooks = 1
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"), o)
        try FileManager.default.removeItem(at: paths.localStore)
        let report = try Inspection(options: LayoutOptions(container: paths.root), depth: .status).run()
        #expect(report.allProblems.map(\.code).contains(.orphanSidecar), "\(report.allProblems)")
    }

    @Test("dangling-symlink: the store path is a symlink to nothing")
    func danglingSymlink() throws {
        let tmp = try TempDir()
        let store = tmp.path("Library.sqlite")
        try FileManager.default.createSymbolicLink(
            atPath: store.path, withDestinationPath: tmp.path("gone.sqlite").path)
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        #expect(report.allProblems.map(\.code).contains(.danglingSymlink), "\(report.allProblems)")
    }

    @Test("not-a-file: the store path is a folder")
    func notAFile() throws {
        let tmp = try TempDir()
        let store = tmp.path("Library.sqlite")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        let report = try Inspection(options: LayoutOptions(store: store), depth: .check).run()
        #expect(report.allProblems.map(\.code).contains(.notAFile), "\(report.allProblems)")
    }

    @Test("metadata-uuid-missing: Z_METADATA.Z_UUID empty")
    func metadataUuidMissing() throws {
        let codes = try Self.codes { try FixtureStore.mutate($0, "UPDATE Z_METADATA SET Z_UUID = ''") }
        #expect(codes.contains("metadata-uuid-missing"), "\(codes)")
    }

    @Test("entity-null: a row without Z_ENT")
    func entityNull() throws {
        let codes = try Self.codes { try FixtureStore.mutate($0, "UPDATE ZAUTHOR SET Z_ENT = NULL WHERE Z_PK = 1") }
        #expect(codes.contains("entity-null"), "\(codes)")
    }

    @Test("join-entity-unknown: a join table naming an entity number the model lacks")
    func joinEntityUnknown() throws {
        let codes = try Self.codes {
            try FixtureStore.mutate(
                $0, "CREATE TABLE Z_1LINKS ( Z_1ITEMS INTEGER, Z_9LINKS INTEGER, PRIMARY KEY (Z_1ITEMS, Z_9LINKS) )")
        }
        #expect(codes.contains("join-entity-unknown"), "\(codes)")
    }

    @Test("cached-uuid-malformed: the cache and the marker agree on a value that is not an upper-case UUID")
    func cachedUUIDMalformed() throws {
        let report = try NextLaunchTests.status { $0.activeUUID = $0.activeUUID.lowercased() }
        #expect(NextLaunchTests.codes(report).contains("cached-uuid-malformed"), "\(NextLaunchTests.codes(report))")
    }

    /// Every code is named in some test other than this one and the documentation tests (as a
    /// `.case` or its quoted raw value): a new code comes with the test that provokes it.
    @Test("every problem code is provoked by a test")
    func everyCodeProvoked() throws {
        let folder = CLITests.packageRoot.appendingPathComponent("Tests/USMRepairTests")
        let skip: Set<String> = ["ReferenceDocsTests.swift"]
        var text = ""
        let files = try #require(FileManager.default.enumerator(atPath: folder.path))
        for case let file as String in files where file.hasSuffix(".swift") && !skip.contains(file) {
            text += try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
        }
        // One pass over the bytes (a search per code costs a second or two in a debug build): every
        // word written after a dot (`.strayWal`), and every word that is a whole string literal.
        var names: Set<String> = []
        var quoted: Set<String> = []
        let bytes = Array(text.utf8) + [0]
        var start = 0
        for (i, byte) in bytes.enumerated() {
            let inWord =
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x5F || byte == 0x2D
            if inWord { continue }
            if i > start, start > 0 {
                let word = String(decoding: bytes[start..<i], as: UTF8.self)
                if bytes[start - 1] == 0x2E { names.insert(word) }
                if bytes[start - 1] == 0x22 && byte == 0x22 { quoted.insert(word) }
            }
            start = i + 1
        }
        for code in ProblemCode.allCases {
            #expect(
                quoted.contains(code.rawValue) || names.contains(String(describing: code)),
                "no test names \(code.rawValue)")
        }
    }
}
