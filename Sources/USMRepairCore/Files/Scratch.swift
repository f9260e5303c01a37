import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One scratch item this run created: a private folder, a partial file, a staging folder.
public struct ScratchItem: Sendable, Equatable {
    /// Where it was created.
    public let path: String
    /// What was created there; the item is removed only while the path still holds exactly this.
    public let identity: FileIdentity

    /// The item's location.
    public var url: URL { URL(fileURLWithPath: path, isDirectory: identity.kind == .directory) }
}

/// The registry of scratch items: everything this tool creates only for the length of a run
/// (private copies under `$TMPDIR`, an archive's partial file beside its output, a restore's
/// extraction folder inside the target, and the staging folders of later operations).
///
/// A run keeps an owner record in `$XDG_STATE_HOME/usm-repair/scratch/` (else
/// `~/.local/state/usm-repair/scratch/`) naming each item with its device, inode and kind, and holds
/// an exclusive `flock` on that record for as long as it lives. `cleanUpAbandoned()`, called when a
/// run starts, removes the items of records whose lock is free (their run ended without releasing
/// them: killed, crashed) and only while the path still holds that very device, inode and kind.
/// Nothing is ever removed by its name alone, never an item a live run holds, never through a
/// symlink (see `SafeRemove`), and only regular files and folders.
///
/// Usage: `make...` creates and records; `release` removes and forgets; `forget` keeps the item and
/// forgets it (a partial file renamed into place is no longer scratch). When a run has released
/// or forgotten everything its record is deleted. When the state folder cannot be written the
/// items are still made and released, just not recorded (a killed run then leaves them behind).
public final class Scratch: Sendable {
    /// The process's registry, in the per-user state folder.
    public static let shared = Scratch(folder: Scratch.defaultFolder())

    /// The registry of the run in progress: `shared`, or the one a command context gave
    /// (`$current.withValue`), so that a command run in process (tests) keeps its records and
    /// private copies where its own environment says.
    @TaskLocal public static var current: Scratch = .shared

    /// A registry for `environment`: records in its state folder, private copies under its `TMPDIR`.
    public static func forEnvironment(_ environment: [String: String]) -> Scratch {
        Scratch(
            folder: defaultFolder(environment: environment),
            temporaryBase: URL(fileURLWithPath: environment["TMPDIR"] ?? "/tmp", isDirectory: true))
    }

    /// `$XDG_STATE_HOME/usm-repair/scratch`, else `~/.local/state/usm-repair/scratch`.
    public static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        StateFolder.base(environment: environment).appendingPathComponent("scratch", isDirectory: true)
    }

    /// The folder holding the owner records.
    public let folder: URL
    /// Where private copies go (`TemporaryDirectory`); nil for the process's `TMPDIR`.
    public let temporaryBase: URL?

    /// The folder private copies go in.
    public var temporaryDirectory: URL { temporaryBase ?? FileManager.default.temporaryDirectory }

    private struct State: ~Copyable {
        /// The open, locked record of this run (-1: none yet).
        var fd: Int32 = -1
        var recordPath: String?
        /// Items made and not yet released or forgotten.
        var outstanding: [ScratchItem] = []
        /// Set once the folder proved unusable: items are made unrecorded.
        var disabled = false
    }

    private let state = Mutex(State())

    /// A registry keeping its records in `folder` (created, private, when first needed), its
    /// private copies under `temporaryBase` (nil: the process's `TMPDIR`).
    public init(folder: URL, temporaryBase: URL? = nil) {
        self.folder = folder
        self.temporaryBase = temporaryBase
    }

    /// A registry that goes away with items outstanding (as a killed process does) only lets go of
    /// its lock: its items are then the next cleanup's to remove.
    deinit {
        state.withLock { state in
            if state.fd >= 0 { close(state.fd) }
        }
    }

    // MARK: - Making items

    /// Creates the private (0700) folder `name` inside `parent` (which must exist) and records it.
    /// - Throws: `writeFailed` naming the folder.
    public func makeDirectory(in parent: URL, name: String, mode: mode_t = 0o700) throws -> ScratchItem {
        let path = parent.appendingPathComponent(name).path
        guard FileSystemPath.withCString(path, { mkdir($0, mode) }) == 0 else { throw USMError.writing(path) }
        let fd = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0, let identity = FileIdentity.of(fd: fd) else {
            let reason = errnoDescription()
            if fd >= 0 { close(fd) }
            throw USMError.writeFailed(path: path, reason: reason)
        }
        close(fd)
        let item = ScratchItem(path: path, identity: identity)
        record(item)
        return item
    }

    /// Creates the new file `name` inside `parent` and records it; returns it with a descriptor
    /// open for writing (the caller closes it).
    /// - Throws: `writeFailed` naming the file (it may not exist yet).
    public func makeFile(in parent: URL, name: String, mode: mode_t = 0o644) throws -> (item: ScratchItem, fd: Int32) {
        let path = parent.appendingPathComponent(name).path
        let fd = FileSystemPath.withCString(path) {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        }
        guard fd >= 0 else { throw USMError.writing(path) }
        guard let identity = FileIdentity.of(fd: fd) else {
            let reason = errnoDescription()
            close(fd)
            throw USMError.writeFailed(path: path, reason: reason)
        }
        let item = ScratchItem(path: path, identity: identity)
        record(item)
        return (item, fd)
    }

    /// Removes the item (a folder with everything in it, never through a link) and forgets it.
    public func release(_ item: ScratchItem) {
        SafeRemove.remove(item.path, expected: item.identity)
        forget(item)
    }

    /// Forgets the item without removing it: it is no longer scratch (renamed into place).
    public func forget(_ item: ScratchItem) {
        state.withLock { state in
            guard let index = state.outstanding.firstIndex(of: item) else { return }
            state.outstanding.remove(at: index)
            guard state.fd >= 0 else { return }
            if state.outstanding.isEmpty {
                // Nothing left to prove: the record goes, and with it the lock.
                if let path = state.recordPath { _ = FileSystemPath.withCString(path) { unlink($0) } }
                close(state.fd)
                state.fd = -1
                state.recordPath = nil
            } else {
                Self.append(.init(op: "release", path: item.path, identity: item.identity), to: state.fd)
            }
        }
    }

    // MARK: - Cleaning up after other runs

    /// Removes the items of every run that ended without releasing them (its record is not locked),
    /// each only while its path holds the recorded device, inode and kind, then the record itself.
    /// Returns the paths removed.
    @discardableResult
    public func cleanUpAbandoned() -> [String] {
        let own = state.withLock { $0.recordPath }
        guard let names = try? DirectoryListing.names(folder.path) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(Self.recordPrefix) || name.hasPrefix(Self.newRecordPrefix) {
            let path = folder.appendingPathComponent(name).path
            guard path != own else { continue }
            // A record being set up right now is left to its run; one left half set up long ago goes.
            if name.hasPrefix(Self.newRecordPrefix), let status = FileStatus.lookup(path),
                FileTime.now.seconds - status.mtime.seconds < 600
            {
                continue
            }
            let fd = FileSystemPath.withCString(path) { open($0, O_RDWR | O_NOFOLLOW | O_CLOEXEC) }
            guard fd >= 0 else { continue }
            defer { close(fd) }
            // A live run holds its lock: its items are left alone.
            guard flock(fd, LOCK_EX | LOCK_NB) == 0, FileIdentity.of(fd: fd)?.kind == .file else { continue }
            for item in Self.outstanding(in: fd) where SafeRemove.remove(item.path, expected: item.identity) {
                removed.append(item.path)
            }
            // The record goes only if it is still the file that was read (not replaced meanwhile).
            var st = stat()
            if FileSystemPath.withCString(path, { lstat($0, &st) }) == 0, FileIdentity(st) == FileIdentity.of(fd: fd) {
                _ = FileSystemPath.withCString(path) { unlink($0) }
            }
        }
        return removed
    }

    // MARK: - The record

    static let recordPrefix = "run-"
    /// A record being set up (created, then locked, then renamed to its `run-` name).
    static let newRecordPrefix = "new-"
    /// A record larger than this is not one of ours.
    static let maxRecordSize = 16 << 20

    /// One line of a record.
    private struct Line: Codable {
        let op: String
        let path: String
        let identity: FileIdentity
    }

    private func record(_ item: ScratchItem) {
        state.withLock { state in
            state.outstanding.append(item)
            guard !state.disabled else { return }
            if state.fd < 0 {
                guard let (fd, path) = openRecord() else {
                    state.disabled = true
                    return
                }
                state.fd = fd
                state.recordPath = path
            }
            Self.append(.init(op: "add", path: item.path, identity: item.identity), to: state.fd)
        }
    }

    /// Creates this run's record, locked before any other run can see it under its `run-` name.
    private func openRecord() -> (Int32, String)? {
        guard
            (try? FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])) != nil
        else { return nil }
        let id = "\(getpid())-\(UUID().uuidString.lowercased())"
        let fresh = folder.appendingPathComponent(Self.newRecordPrefix + id).path
        let final = folder.appendingPathComponent(Self.recordPrefix + id).path
        let fd = FileSystemPath.withCString(fresh) {
            open($0, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { return nil }
        let renamed = FileSystemPath.withCString(fresh) { from in FileSystemPath.withCString(final) { rename(from, $0) }
        }
        guard flock(fd, LOCK_EX) == 0, renamed == 0 else {
            _ = FileSystemPath.withCString(fresh) { unlink($0) }
            close(fd)
            return nil
        }
        return (fd, final)
    }

    private static func append(_ line: Line, to fd: Int32) {
        guard var data = try? JSONEncoder().encode(line) else { return }
        data.append(UInt8(ascii: "\n"))
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// The items a record names as added and not released.
    private static func outstanding(in fd: Int32) -> [ScratchItem] {
        var data = Data()
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65536, alignment: 8)
        defer { buffer.deallocate() }
        _ = lseek(fd, 0, SEEK_SET)
        while data.count <= maxRecordSize {
            let n = read(fd, buffer, 65536)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            data.append(buffer.assumingMemoryBound(to: UInt8.self), count: n)
        }
        guard data.count <= maxRecordSize else { return [] }
        var items: [ScratchItem] = []
        let decoder = JSONDecoder()
        for line in data.split(separator: UInt8(ascii: "\n")) {
            // A line cut short by a kill is ignored: its item was not recorded whole.
            guard let entry = try? decoder.decode(Line.self, from: Data(line)) else { continue }
            let item = ScratchItem(path: entry.path, identity: entry.identity)
            if entry.op == "add" {
                items.append(item)
            } else if let index = items.firstIndex(of: item) {
                items.remove(at: index)
            }
        }
        return items
    }
}

/// The per-user folder where usm-repair keeps its own state (snapshots, scratch records):
/// `$XDG_STATE_HOME/usm-repair`, else `~/.local/state/usm-repair` (the XDG Base Directory default).
public enum StateFolder {
    /// The folder, from the environment (a relative `XDG_STATE_HOME` is ignored, as the spec says).
    public static func base(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return URL(fileURLWithPath: state, isDirectory: true).appendingPathComponent(
                "usm-repair", isDirectory: true)
        }
        let home =
            environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".local/state/usm-repair", isDirectory: true)
    }
}
