import Foundation
import Synchronization

/// The stores one command has captured, so that each is copied, checked and hashed once per
/// command (issue 33): the plan's comparison captures the stores it compares and hashes them, and
/// the build, its verification and the provenance then work from the same private copies and the
/// same content digests instead of capturing and hashing the store again.
///
/// A capture is reused only while the original's main file, `-wal` and `-journal` have the status
/// (kind, size, mtime, ctime, inode) they had when it was made (`CapturedStore.unchanged`): a store
/// written to between the plan and the build is captured again. A capture made with a `--model` is
/// never reused. The copies live in private folders of the command's scratch registry and are
/// removed when the command ends (`scope`).
public final class CaptureCache: Sendable {
    private struct Entry: Sendable {
        let store: CapturedStore
        let folder: TemporaryDirectory
        var digests: ContentDigest.Read?

        /// Removes the copy once its check, if one still runs, is done with it.
        func retire() {
            store.pendingCheck?.wait()
            folder.remove()
        }
    }

    private let entries = Mutex<[String: Entry]>([:])
    /// `quick_check`s of whole stores this command made on copies of its own (the layout's
    /// inspection before planning), with the originals' status when copied.
    private let quickChecks = Mutex<[String: QuickCheck]>([:])

    /// A `quick_check` of a copy of a store's file set: the originals' members (main, -wal) as they
    /// were when the copy was made, and the lines it gave.
    struct QuickCheck: Sendable {
        let members: [String: FileStatus]
        let lines: [String]
    }
    private let made = Mutex(Counts(captures: 0, digestReads: 0, quickChecksReused: 0))

    /// How many captures and digest reads this cache made (not counting the ones it reused).
    struct Counts: Equatable {
        var captures: Int
        var digestReads: Int
        var quickChecksReused: Int
        /// Captures whose `quick_check` ran beside the strategy (`CapturedStore.pendingCheck`).
        var checksBeside = 0
    }

    /// What this cache made so far.
    var counts: Counts { made.withLock { $0 } }

    /// The cache of the command in progress, if its caller opened one (`scope`).
    @TaskLocal public static var current: CaptureCache?

    /// Creates an empty cache.
    public init() {}

    /// Runs `body` with a fresh cache as `current`, and removes every copy it made when `body` ends.
    public static func scope<T>(_ body: () throws -> T) rethrows -> T {
        let cache = CaptureCache()
        defer { cache.removeAll() }
        return try $current.withValue(cache) { try body() }
    }

    /// The status of `files`' main file, `-wal` and `-journal` as `CapturedStore.members` keeps them,
    /// or nil when one is not a regular file (a symlink: its target may change under the same
    /// status) or a `-journal` is there (a hot journal is rolled back in a copy of its own).
    static func memberStatus(_ files: StoreFileSet) -> [String: FileStatus]? {
        var members: [String: FileStatus] = [:]
        for name in ["main", "wal", "journal"] {
            guard let url = files.member(name), let status = FileStatus.lookup(url.path) else { continue }
            guard status.kind == .file, name != "journal" else { return nil }
            members[name] = status
        }
        return members["main"] == nil ? nil : members
    }

    /// The same members with the same status each (`FileStatus.sameContent`).
    static func alike(_ a: [String: FileStatus], _ b: [String: FileStatus]) -> Bool {
        a.keys == b.keys && a.allSatisfy { name, status in b[name].map { status.sameContent(as: $0) } ?? false }
    }

    /// Remembers a `quick_check` of the whole store `files` made on a copy taken while its
    /// members had the status `members`.
    func noteQuickCheck(_ files: StoreFileSet, members: [String: FileStatus], lines: [String]) {
        quickChecks.withLock { $0[files.main.path] = QuickCheck(members: members, lines: lines) }
    }

    /// The lines of a `quick_check` this command already made of `files` when its members had the
    /// status they have in `members` (the same bytes: kind, size, mtime, ctime and inode each
    /// alike, as `CapturedStore.unchanged` judges), else nil.
    func quickCheck(of files: StoreFileSet, members: [String: FileStatus]) -> [String]? {
        guard let known = quickChecks.withLock({ $0[files.main.path] }), Self.alike(members, known.members) else {
            return nil
        }
        made.withLock { $0.quickChecksReused += 1 }
        return known.lines
    }

    /// Counts a capture whose `quick_check` runs beside the strategy.
    func noteCheckBeside() {
        made.withLock { $0.checksBeside += 1 }
    }

    /// Removes every copy and forgets every capture.
    public func removeAll() {
        let retired = entries.withLock { entries in
            let values = Array(entries.values)
            entries = [:]
            return values
        }
        for entry in retired { entry.retire() }
    }

    /// `files` captured as `MigrationEngine.capture` does, or the capture this command already made of
    /// it when nothing of the original changed since.
    ///
    /// `defersCheck`: as `MigrationEngine.capture`'s; a capture reused is settled first, so that
    /// nobody but the command that asked for it ever reads a copy not yet checked.
    func capture(
        _ files: StoreFileSet, role: String, model: ManagedObjectModel? = nil, readsRows: Bool = true,
        defersCheck: Bool = false
    ) throws -> CapturedStore {
        let key = files.main.path
        if model == nil, let entry = entries.withLock({ $0[key] }), entry.store.unchanged(files) {
            try entry.store.pendingCheck?.settle()
            PhaseTimings.note("capture \(files.main.lastPathComponent) (reused)", seconds: 0)
            return entry.store
        }
        let started = Date()
        let folder = try TemporaryDirectory(prefix: "usm-repair-capture")
        let store: CapturedStore
        do {
            // Into a folder inside the private one: the capture makes its folder anew, and the
            // private folder is removed only while it is still the one made (`SafeRemove`).
            store = try MigrationEngine.capture(
                files, into: folder.url.appendingPathComponent("store", isDirectory: true), role: role, model: model,
                readsRows: readsRows, defersCheck: defersCheck)
        } catch {
            folder.remove()
            throw error
        }
        PhaseTimings.note("capture \(files.main.lastPathComponent)", seconds: Date().timeIntervalSince(started))
        made.withLock { $0.captures += 1 }
        // A partial capture (`readsRows: false` checks only the bookkeeping tables) or one made
        // with a model is not what a later full capture may stand in for.
        guard model == nil, readsRows else {
            let kept = entries.withLock { entries in
                let old = entries[key + "\u{0}partial"]
                entries[key + "\u{0}partial"] = Entry(store: store, folder: folder, digests: nil)
                return old
            }
            kept?.retire()
            return store
        }
        let replaced = entries.withLock { entries in
            let old = entries[key]
            entries[key] = Entry(store: store, folder: folder, digests: nil)
            return old
        }
        // The capture it replaces was of an older state of the store; nothing reads it any more.
        replaced?.retire()
        return store
    }

    /// The content digests of `store` (a capture of this cache or any other): read once per copy.
    func digests(of store: CapturedStore) throws -> ContentDigest.Read {
        let key = store.files.main.path
        if let known = entries.withLock({ $0[key].flatMap { $0.store.copy == store.copy ? $0.digests : nil } }) {
            PhaseTimings.note("digests \(store.files.main.lastPathComponent) (reused)", seconds: 0)
            return known
        }
        let started = Date()
        let read = try ContentDigest.read(store.copy, schema: store.schema)
        PhaseTimings.note("digests \(store.files.main.lastPathComponent)", seconds: Date().timeIntervalSince(started))
        made.withLock { $0.digestReads += 1 }
        entries.withLock { entries in
            guard entries[key]?.store.copy == store.copy else { return }
            entries[key]?.digests = read
        }
        return read
    }
}

/// Per-phase durations on stderr when `USM_REPAIR_TIMINGS=1` (for the benchmarks: where a
/// command's time goes, measured inside the process).
enum PhaseTimings {
    static let enabled = ProcessInfo.processInfo.environment["USM_REPAIR_TIMINGS"] == "1"

    /// Writes `timing: <phase> <seconds>` to stderr when enabled.
    static func note(_ phase: String, seconds: TimeInterval) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("timing: \(phase) \(String(format: "%.3f", seconds))\n".utf8))
    }

    /// Runs `body` and notes how long it took as `phase`.
    static func measure<T>(_ phase: String, _ body: () throws -> T) rethrows -> T {
        let started = Date()
        defer { note(phase, seconds: Date().timeIntervalSince(started)) }
        return try body()
    }
}
