import Foundation

/// A Core Data SQLite store as the set of files that make it up. Nothing in usm-repair copies,
/// moves, archives or deletes a bare `.sqlite` path: it goes through this value.
///
/// For a store at `Dir/X.sqlite` the members are `X.sqlite`, `X.sqlite-wal`, `X.sqlite-shm`,
/// `X.sqlite-journal` and the external-data folder `Dir/.X_SUPPORT/` (the name without extension).
public struct StoreFileSet: Sendable, Hashable, Codable {
    /// The main database file.
    public let main: URL

    /// Creates the file set of the store whose main file is `main`.
    public init(main: URL) {
        self.main = main.standardizedFileURL
    }

    /// The store's file name, e.g. `UbiquityStore.sqlite`.
    public var fileName: String { main.lastPathComponent }

    /// The file name without its extension, e.g. `UbiquityStore` (a cloud store's UUID).
    public var baseName: String { main.deletingPathExtension().lastPathComponent }

    /// The folder holding the store.
    public var directory: URL { main.deletingLastPathComponent() }

    /// The write-ahead log.
    public var wal: URL { sibling(suffix: "-wal") }
    /// The WAL's shared-memory index.
    public var shm: URL { sibling(suffix: "-shm") }
    /// The rollback journal (stores in DELETE journal mode, or a crash mid-transaction).
    public var journal: URL { sibling(suffix: "-journal") }
    /// The external binary data folder, `.X_SUPPORT`.
    public var supportDirectory: URL {
        directory.appendingPathComponent(".\(baseName)_SUPPORT", isDirectory: true)
    }
    /// Where Core Data keeps values of "Allows External Storage" attributes.
    public var externalDataDirectory: URL {
        supportDirectory.appendingPathComponent("_EXTERNAL_DATA", isDirectory: true)
    }
    /// Where Core Data keeps the files of file-backed futures (`NSFileBackedFuture`).
    public var fileBackedFuturesDirectory: URL {
        supportDirectory.appendingPathComponent("_FBF", isDirectory: true)
    }

    /// The file member called `name` (`main`, `wal`, `shm`, `journal`).
    public func member(_ name: String) -> URL? {
        switch name {
        case "main": main
        case "wal": wal
        case "shm": shm
        case "journal": journal
        default: nil
        }
    }

    /// Every member path, present or not, main file first.
    public var allMembers: [URL] { [main, wal, shm, journal, supportDirectory] }

    /// The members that exist on disk now (a dangling symlink counts as existing: it is part of
    /// what the user has, and must not be silently skipped).
    public func existingMembers() -> [URL] {
        allMembers.filter { FileStatus.lookup($0.path) != nil }
    }

    private func sibling(suffix: String) -> URL {
        directory.appendingPathComponent(fileName + suffix)
    }
}
