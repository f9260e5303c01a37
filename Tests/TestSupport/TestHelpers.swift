import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A temporary folder for one test, removed when released.
public final class TempDir {
    public let url: URL

    public init() throws {
        url = TestTemporary.base.appendingPathComponent(
            "usm-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func path(_ relative: String) -> URL { url.appendingPathComponent(relative) }

    deinit {
        // Tests make folders unreadable on purpose; give them back before removing.
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        try? FileManager.default.removeItem(at: url)
    }
}

/// Every entry below a folder with its kind, mode and full content (or link target): two snapshots
/// are equal only when not one byte, mode, file or link changed. Used to prove read-only commands read only.
public struct TreeSnapshot: Equatable, CustomStringConvertible {
    public struct Entry: Equatable {
        public let kind: String
        public let mode: Int
        public let content: Data
        public let modified: Date?
    }

    public let entries: [String: Entry]

    public init(_ root: URL) throws {
        var result: [String: Entry] = [:]
        let fm = FileManager.default
        var stack = [""]
        while let rel = stack.popLast() {
            let dir = rel.isEmpty ? root : root.appendingPathComponent(rel)
            for name in try fm.contentsOfDirectory(atPath: dir.path) {
                let childRel = rel.isEmpty ? name : rel + "/" + name
                let child = root.appendingPathComponent(childRel)
                let attrs = try fm.attributesOfItem(atPath: child.path)
                let type = attrs[.type] as? FileAttributeType
                let mode = (attrs[.posixPermissions] as? NSNumber)?.intValue ?? 0
                let modified = attrs[.modificationDate] as? Date
                switch type {
                case .typeDirectory?:
                    result[childRel] = Entry(kind: "dir", mode: mode, content: Data(), modified: nil)
                    stack.append(childRel)
                case .typeSymbolicLink?:
                    let target = try fm.destinationOfSymbolicLink(atPath: child.path)
                    result[childRel] = Entry(kind: "link", mode: 0, content: Data(target.utf8), modified: nil)
                default:
                    result[childRel] = Entry(
                        kind: "file", mode: mode, content: try Data(contentsOf: child), modified: modified)
                }
            }
        }
        entries = result
    }

    public var description: String { entries.keys.sorted().joined(separator: "\n") }

    /// The paths that differ between two snapshots.
    public func differences(from other: TreeSnapshot) -> [String] {
        Set(entries.keys).union(other.entries.keys).sorted().filter { entries[$0] != other.entries[$0] }
    }
}

/// The real Core Data stores in ../shared/corpus/real, when this checkout sits beside them.
public enum Corpus {
    /// The corpus folder, or nil (tests then skip with a note).
    public static var directory: URL? {
        if let env = ProcessInfo.processInfo.environment["USM_CORPUS_DIR"] { return URL(fileURLWithPath: env) }
        let here = URL(fileURLWithPath: #filePath)
        let packageRoot = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus/real")
        return FileManager.default.fileExists(atPath: candidate.path) ? candidate : nil
    }

    /// The main store file of every corpus folder.
    public static func stores() -> [URL] {
        guard let dir = directory, let folders = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else {
            return []
        }
        return folders.sorted().compactMap { folder in
            let url = dir.appendingPathComponent(folder)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            return files.sorted().first { name in
                !name.hasSuffix("-wal") && !name.hasSuffix("-shm") && !name.hasSuffix(".md") && !name.hasPrefix(".")
                    && (try? FileHandle(forReadingFrom: url.appendingPathComponent(name)).read(upToCount: 15))
                        == Data("SQLite format 3".utf8)
            }.map { url.appendingPathComponent($0) }
        }
    }

    /// Copies a store's file set (main, -wal, -shm) into `dir`, writable, and returns the copy's main file.
    public static func copy(_ store: URL, into dir: URL) throws -> URL {
        let dest = dir.appendingPathComponent(store.lastPathComponent)
        for suffix in ["", "-wal", "-shm"] {
            let src = store.path + suffix
            guard FileManager.default.fileExists(atPath: src) else { continue }
            try FileManager.default.copyItem(atPath: src, toPath: dest.path + suffix)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dest.path + suffix)
        }
        return dest
    }
}
