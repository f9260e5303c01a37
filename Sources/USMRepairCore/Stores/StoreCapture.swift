import Foundation
import Synchronization

/// A consistent private copy of one store's file set: main file, `-wal`, `-shm` and `-journal`
/// copied together, every member checked unchanged from before the first copy to after the last,
/// so the receiver of a bundle opens exactly what the sender had.
struct StoreCapture {
    /// A captured member: the copy, the SHA-256 (empty when not asked for) and the original's status at capture.
    struct Member {
        let copy: URL
        let sha256: String
        let status: FileStatus
    }

    /// Copies by member name (`main`, `wal`, `shm`, `journal`).
    let members: [String: Member]
    /// A file set SQLite may open (main and -wal linked under the store's name, -shm left out so
    /// SQLite builds its own); nil when a -journal needs a writable copy (the inspector copies then).
    let openable: URL?

    /// How often a store that keeps changing is copied again before giving up.
    static let attempts = 3

    /// Captures `files` (the members `present` names) into `directory`. With `hashing` off (a
    /// migration, which never records the members' bytes) no SHA-256 is computed and `sha256` is empty.
    static func capture(_ files: StoreFileSet, members present: [String], into directory: URL, hashing: Bool = true)
        throws -> StoreCapture
    {
        let raw = directory.appendingPathComponent("raw", isDirectory: true)
        for attempt in 1...attempts {
            try? FileManager.default.removeItem(at: directory)
            try FileManager.default.createDirectory(at: raw, withIntermediateDirectories: true)
            var before: [String: FileStatus] = [:]
            for name in present {
                guard let url = files.member(name), let status = FileStatus.lookup(url.path) else { continue }
                before[name] = status
            }
            var copies: [String: Member] = [:]
            for name in present {
                guard let url = files.member(name), let status = before[name] else { continue }
                let copy = raw.appendingPathComponent(name)
                let result = try FileCopy.copy(from: url.path, to: copy.path, hashing: hashing)
                copies[name] = Member(copy: copy, sha256: result.sha256 ?? "", status: status)
            }
            let unchanged = present.allSatisfy { name in
                guard let url = files.member(name), let was = before[name] else { return true }
                guard let now = FileStatus.lookup(url.path) else { return false }
                return now.sameContent(as: was)
                    && copies[name].map { FileStatus.lookup($0.copy.path)?.size == was.size } ?? false
            }
            if unchanged {
                return StoreCapture(members: copies, openable: try openable(copies, in: directory))
            }
            if attempt == attempts { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        throw USMError.changedWhileReading(path: files.main.path)
    }

    private static func openable(_ copies: [String: Member], in directory: URL) throws -> URL? {
        guard copies["journal"] == nil, let main = copies["main"] else { return nil }
        let open = directory.appendingPathComponent("open", isDirectory: true)
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        let store = open.appendingPathComponent("store.sqlite")
        // Hard links: the same bytes under SQLite's names, no second copy. A read-only
        // connection writes neither of them.
        try FileManager.default.linkItem(at: main.copy, to: store)
        if let wal = copies["wal"] {
            try FileManager.default.linkItem(at: wal.copy, to: URL(fileURLWithPath: store.path + "-wal"))
        }
        return store
    }
}
