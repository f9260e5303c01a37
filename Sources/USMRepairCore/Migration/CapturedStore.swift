import Foundation
import GRDB
import Synchronization

/// A store read for a migration: a consistent private copy of its file set (rows only in the
/// `-wal` included, a hot `-journal` rolled back in the copy), checked with `check`'s depth.
struct CapturedStore: Sendable {
    /// The private main file to open (its `-wal` beside it).
    let copy: URL
    /// Its structure.
    let schema: CoreDataSchema
    /// `check` on the copy.
    let report: StoreReport
    /// `Z_METADATA.Z_PLIST`.
    let plist: Data?
    /// The originals' status at capture, by member name.
    let members: [String: FileStatus]
    /// The original file set.
    let files: StoreFileSet
    /// The `quick_check` of the private copy when it runs beside the strategy instead of at capture
    /// (`MigrationEngine.capture(defersCheck:)`): settled before anything uses what was read.
    var pendingCheck: PendingCheck? = nil

    /// `check`'s every invariant on the private copy (integrity_check included): what the verifier
    /// compares a result's errors with, to tell inherited problems from new ones.
    func fullCheck() -> StoreReport {
        StoreInspector(depth: .check).inspect(
            files, role: .store, confinement: Confinement(root: files.directory), privateCopy: copy)
    }

    /// `check`'s invariants at error level on the private copy, without SQLite's page check and
    /// the search for duplicated objects: what the verifier compares a result's errors with, to
    /// tell inherited problems from new ones. It asks only once the result passed its own
    /// `integrity_check`, so `integrity` is never among the errors compared, and duplicated
    /// objects are a warning, never compared: the same verdict as `fullCheck`, without reading
    /// every page of the input again (on 300k objects a second check of 2.4 s, issue 33).
    func inheritedCheck() -> StoreReport {
        var inspector = StoreInspector(depth: .check)
        inspector.checksIntegrity = false
        inspector.checksDuplicates = false
        return inspector.inspect(
            files, role: .store, confinement: Confinement(root: files.directory), privateCopy: copy)
    }

    /// True when no member of `files` changed since the capture.
    func unchanged(_ files: StoreFileSet) -> Bool {
        ["main", "wal", "journal"].allSatisfy { name in
            guard let url = files.member(name) else { return true }
            let now = FileStatus.lookup(url.path)
            guard let was = members[name] else { return now == nil }
            return now.map { $0.sameContent(as: was) } ?? false
        }
    }
}

extension MigrationEngine {
    /// The tables a strategy that moves no rows reads besides the schema (`StagedStore.cloneSchema`).
    static let bookkeepingTables = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    /// Captures and checks `files`; refuses what is not a readable, undamaged Core Data store.
    /// `model` (`--model`) says where relationships point when the store holds no model cache.
    /// - Parameter readsRows: false for a strategy that reads only the schema and the bookkeeping
    ///   tables (`none`): `quick_check` then covers those tables, not every page of the store.
    /// - Parameter defersCheck: run the private copy's `quick_check` on another thread, beside
    ///   what follows the capture, instead of before returning (issue 33): the capture's
    ///   `pendingCheck`, which its user settles before trusting anything read from the copy.
    ///   Every other check of the capture (the schema's text, metadata, counts, invariants) still
    ///   runs first. Only for a copy SQLite opened as it was (no hot journal rolled back).
    static func capture(
        _ files: StoreFileSet, into directory: URL, role: String, model: ManagedObjectModel? = nil,
        readsRows: Bool = true, defersCheck: Bool = false
    ) throws -> CapturedStore {
        // The members' SHA-256 is a bundle's business: a migration compares statuses, not hashes.
        let capture = try StoreCapture.capture(
            files, members: ["main", "wal", "journal"], into: directory, hashing: false)
        var copy: URL
        if let openable = capture.openable {
            copy = openable
        } else {
            // A hot journal: roll it back in a copy of our own (a writer is needed for that).
            let folder = directory.appendingPathComponent("rolled-back", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            copy = folder.appendingPathComponent("store.sqlite")
            if let main = capture.members["main"] { _ = try FileCopy.copy(from: main.copy.path, to: copy.path) }
            if let journal = capture.members["journal"] {
                _ = try FileCopy.copy(from: journal.copy.path, to: copy.path + "-journal")
            }
            do {
                var config = Configuration()
                UntrustedDatabase.configure(&config, bytes: UntrustedDatabase.storeBytes(copy.path))
                let queue = try DatabaseQueue(path: copy.path, configuration: config)
                _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master") }
                try queue.close()
            } catch {
                throw USMError.wrap(error, path: files.main.path)
            }
        }
        // quick_check and the cheap invariants here; the full check of the source runs only when the
        // result has an error to compare with (`CapturedStore.fullCheck`).
        var inspector = StoreInspector(depth: .status, quickCheckTables: readsRows ? nil : bookkeepingTables)
        // The layout's inspection may have checked these very bytes already (its own copy, taken
        // while the members had the status they had when this one was taken): not again.
        if readsRows, capture.openable != nil, capture.members["journal"] == nil {
            let members = capture.members.mapValues(\.status)
            if let lines = CaptureCache.current?.quickCheck(of: files, members: members) {
                inspector.quickCheckLines = lines
                PhaseTimings.note("check: quick_check of \(files.main.lastPathComponent) (reused)", seconds: 0)
            }
        }
        // Deferred: the inspection below reads as if the pages were sound, and the real answer
        // comes from `pendingCheck` (a failure is refused as this capture would have refused it).
        let defers =
            defersCheck && readsRows && capture.openable != nil && capture.members["journal"] == nil
            && inspector.quickCheckLines == nil
        if defers { inspector.quickCheckLines = ["ok"] }
        let report = inspector.inspect(
            files, role: .store, confinement: Confinement(root: files.directory), privateCopy: copy)
        try refuse(report, files: files)
        let pending = defers ? PendingCheck(copy: copy, files: files) : nil
        if pending != nil { CaptureCache.current?.noteCheckBeside() }
        let schema: CoreDataSchema
        let plist: Data?
        do {
            schema = try CoreDataSchema.load(from: copy, model: model)
            plist = try {
                let queue = try StagedStore.open(copy, readonly: true)
                defer { try? queue.close() }
                return try queue.read { db in
                    try Row.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA LIMIT 1").flatMap {
                        Data.fromDatabaseValue($0["Z_PLIST"] as DatabaseValue)
                    }
                }
            }()
        } catch {
            // A damaged page explains a failed read: the check's refusal, not the read's error.
            try pending?.settle()
            throw error
        }
        return CapturedStore(
            copy: copy, schema: schema, report: report, plist: plist, members: capture.members.mapValues(\.status),
            files: files, pendingCheck: pending)
    }

    /// Throws the refusal a capture's inspection calls for: an unreadable or damaged store
    /// (`sourceDamaged`), a read error of this machine's (`ioError`), or the inspection's own error.
    static func refuse(_ report: StoreReport, files: StoreFileSet) throws {
        if let failure = report.readFailure {
            switch failure {
            // An I/O error reading the copy (a full disk under the scratch folder, a failing
            // device) says nothing about the source's bytes.
            case .sqlite where failure.exitStatus == .ioError: throw failure.diagnosingSpace()
            case .sqlite: throw USMError.sourceDamaged(path: files.main.path, detail: failure.message)
            default: throw failure
            }
        }
        if report.integrity != "ok" {
            let detail = report.problems.first { $0.code == .integrity }?.message ?? "integrity_check failed"
            throw USMError.sourceDamaged(path: files.main.path, detail: detail)
        }
        if report.health == .damaged {
            let detail = report.problems.first { $0.severity == .error }?.message ?? "damaged"
            throw USMError.sourceDamaged(path: files.main.path, detail: detail)
        }
    }

    /// Rows per entity before a run (the dry run's table).
    static func rowsBefore(_ source: StoreReport, _ destination: StoreReport?) -> [MigrationReport.EntityRows] {
        let s = Dictionary(source.entities.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        let d = Dictionary((destination?.entities ?? []).map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        return Set(s.keys).union(d.keys).sorted().map {
            .init(
                name: $0, source: s[$0] ?? 0, destinationBefore: d[$0] ?? 0, expected: nil, after: nil,
                digest: "not-compared")
        }
    }

    /// Puts the staged store in rollback-journal mode (a plugin may leave it in WAL), folding any WAL in.
    static func deleteJournalMode(_ url: URL) throws {
        let queue = try StagedStore.open(url)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in try StagedStore.setJournalMode(db, "DELETE") }
    }

    /// Gives the verified store its final form: WAL journal mode in the header and fully
    /// checkpointed, so no `-wal` or `-shm` is left; then its bytes reach the disk.
    static func finish(_ staged: StoreFileSet) throws {
        do {
            let queue = try StagedStore.open(staged.main)
            try queue.writeWithoutTransaction { db in
                try StagedStore.setJournalMode(db, "WAL")
                _ = try db.checkpoint(.truncate)
            }
            try queue.close()
        } catch {
            throw StagedStore.wrapWrite(error, path: staged.main)
        }
        for sidecar in [staged.wal, staged.shm] {
            guard let status = FileStatus.lookup(sidecar.path) else { continue }
            guard status.size == 0 else {
                throw USMError.verificationFailed(
                    path: staged.main.path, detail: "\(sidecar.lastPathComponent) still holds data after the checkpoint"
                )
            }
            try? FileManager.default.removeItem(at: sidecar)
        }
        guard (try? SQLiteHeader.read(path: staged.main.path))?.isWAL == true else {
            // SQLite said it switched: a header that does not say so is a write that never reached
            // the file (the file system failed it), not a wrong migration.
            throw USMError.writeFailed(
                path: staged.main.path,
                reason:
                    "SQLite switched the store to WAL but its header does not say so: a write did not reach the file"
            ).diagnosingSpace()
        }
        FileSync.file(staged.main)
    }
}

/// A capture's `quick_check`, running on another thread beside the strategy (issue 33): on
/// 1,001,000 objects 0.24 s that no longer stand before the page copy. The same check as the
/// capture's (a connection configured as `StoreInspector`'s, `PRAGMA quick_check(20)` of the
/// private copy); `settle` waits for it and, unless it answered "ok", inspects the copy again the
/// way the capture does and throws that inspection's refusal, so a damaged store is refused with
/// the same error, message and exit status as when it was checked first. Nothing the strategy made
/// is used or installed before `settle` returns.
final class PendingCheck: Sendable {
    private let work = Mutex<Background<[String]>?>(nil)
    private let copy: URL
    private let files: StoreFileSet

    init(copy: URL, files: StoreFileSet) {
        self.copy = copy
        self.files = files
    }

    /// Starts the check on another thread (once). The engine starts it once its own connections
    /// to the copy are open: the copy's WAL index is then built, not rebuilt by two openers at once.
    func start() {
        let copy = copy
        work.withLock { work in
            guard work == nil else { return }
            work = Background {
                try PhaseTimings.measure("check: quick_check beside the strategy") { try Self.quickCheck(copy) }
            }
        }
    }

    /// The lines of `PRAGMA quick_check(20)` on the private copy at `copy`.
    static func quickCheck(_ copy: URL) throws -> [String] {
        // The capture's own connection, as `StoreInspector` opens it; the strategy's connections
        // read the same copy meanwhile.
        var config = StoreInspector.configuration(for: copy, readonly: true, cacheKiB: StagedStore.cacheKiB)
        config.busyMode = .timeout(30)
        let queue = try DatabaseQueue(path: copy.path, configuration: config)
        defer { try? queue.close() }
        return try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check(20)") }
    }

    /// Waits for the check (starting it if nobody did); throws the capture's refusal unless it passed.
    func settle() throws {
        start()
        if (try? work.withLock({ $0 })?.value()) == ["ok"] { return }
        let report = StoreInspector(depth: .status).inspect(
            files, role: .store, confinement: Confinement(root: files.directory), privateCopy: copy)
        try MigrationEngine.refuse(report, files: files)
    }

    /// Waits for the check, if it started, without judging it (before its copy is removed).
    func wait() { _ = try? work.withLock({ $0 })?.value() }
}
