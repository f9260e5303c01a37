import Foundation
@testable import USMRepairCore

/// What an archive holds, read in process through libarchive (what `bsdtar -t`/`-xO` print),
/// for tests that look inside a bundle without starting a tool.
enum ArchiveContents {
    /// One entry: its header and, for files, its bytes.
    struct Item {
        let path: String
        let kind: ArchiveReader.Entry.Kind
        let mode: UInt32
        let mtime: FileTime
        let linkTarget: String?
        let data: Data
    }

    /// Every entry in archive order.
    static func items(_ archive: URL) throws -> [Item] {
        let reader = try ArchiveReader(path: archive.path)
        var items: [Item] = []
        while let entry = try reader.next() {
            var data = Data()
            if entry.kind == .file {
                try reader.readData(limit: .max) { data.append(contentsOf: $0) }
            }
            items.append(
                Item(
                    path: entry.path, kind: entry.kind, mode: entry.mode, mtime: entry.mtime,
                    linkTarget: entry.linkTarget, data: data))
        }
        return items
    }

    /// The entry names in archive order (`bsdtar -tf`).
    static func names(_ archive: URL) throws -> [String] { try items(archive).map(\.path) }

    /// The bytes of the file entry `name` (`bsdtar -xOf archive name`).
    static func file(_ name: String, in archive: URL) throws -> Data? {
        try items(archive).first { $0.path == name && $0.kind == .file }?.data
    }

    /// The bytes of every file entry, one after the other (`bsdtar -xOf archive`).
    static func allFileData(_ archive: URL) throws -> Data {
        try items(archive).reduce(into: Data()) { $0.append($1.data) }
    }
}
