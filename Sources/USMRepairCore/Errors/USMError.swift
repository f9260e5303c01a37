import Foundation
import GRDB
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The documented exit codes of usm-repair. Values are part of the public contract (README, "Exit codes").
public enum ExitStatus: Int32, Sendable, CaseIterable, Codable {
    /// Everything asked for was done; every store read is a healthy Core Data store.
    case ok = 0
    /// `check` found violated invariants (the stores could be read).
    case problemsFound = 1
    /// A file could be opened but is not what it must be: not SQLite, not Core Data, truncated,
    /// damaged beyond reading, a marker or preferences file holding garbage.
    case badInput = 2
    /// Refused for safety: a path leaves the container through a symlink, or similar.
    case refused = 3
    /// The operation needs the ubiquity container, which was not given or found.
    case needsCloudContainer = 4
    /// A store the operation touches is open or locked by another process (or has a hot journal).
    case storeInUse = 5
    /// Another usm-repair run holds the layout's lock.
    case busy = 6
    /// An interrupted operation is pending in the layout (`recover` finishes or undoes it).
    case interrupted = 7
    /// A precondition of the operation does not hold (no local store to seed from, the active
    /// store's copy missing or damaged, several copies and no choice made).
    case preconditionFailed = 8
    /// The files changed between planning and running.
    case changedSincePlanning = 9
    /// A migration ran but did not produce a store that passed verification (a strategy, recipe
    /// step or external plugin failed, or the staged store broke an invariant); nothing was installed.
    case migrationFailed = 10
    /// With `--detailed-exitcode`: a changing command changed files (or, in a dry run, would);
    /// 0 then means there was nothing to do.
    case applied = 20
    /// Command-line usage error (unknown flag, bad value, conflicting options).
    case usage = 64
    /// A path named on the command line does not exist.
    case notFound = 66
    /// Reading or writing failed at the operating-system level (permissions, I/O).
    case ioError = 74
    /// No room to write: the disk or quota is full (ENOSPC, EDQUOT), or a file would pass the
    /// process's file-size limit (EFBIG, `ulimit -f`). Make room and run again.
    case outOfSpace = 75

    /// How serious the status is when several stores give different answers: the worst one wins.
    var rank: Int {
        switch self {
        case .ok, .applied: 0
        case .problemsFound: 1
        case .badInput: 2
        case .migrationFailed: 3
        case .notFound: 3
        case .ioError: 4
        case .outOfSpace: 5
        case .refused: 6
        case .needsCloudContainer, .preconditionFailed: 7
        case .changedSincePlanning, .storeInUse, .busy, .interrupted: 8
        case .usage: 9
        }
    }

    /// The worse of two statuses.
    public func worst(_ other: ExitStatus) -> ExitStatus { other.rank > rank ? other : self }

    /// A short stable name, used in JSON error reports.
    /// What the code means, in one line (`usm-repair help exit-codes`; the README's table says more).
    public var meaning: String {
        switch self {
        case .ok:
            "done; status: every store present is healthy; check: every invariant holds; a changing command: done or nothing to do"
        case .problemsFound:
            "status/check found an error-level problem (check: warnings too with --strict); bundle verify found differences"
        case .badInput:
            "a file is not what it must be: not SQLite or Core Data, damaged, a marker or the preferences holding garbage, not a bundle"
        case .refused:
            "refused for safety: a symlink out of the folder, an untrusted operation folder, a hostile archive, no --yes without a terminal"
        case .needsCloudContainer:
            "a changing command needs the ubiquity container (--cloud-dir), which was not given or found"
        case .storeInUse:
            "a store is open or locked by another process, or the Mac app (--mac-app) is running: quit the app"
        case .busy: "another usm-repair run is changing the same folders"
        case .interrupted: "an interrupted operation is pending (recover finishes or undoes it)"
        case .preconditionFailed:
            "the operation's precondition does not hold (no healthy store to seed from, several copies, unknown store)"
        case .changedSincePlanning: "the files changed between planning and running; nothing changed"
        case .migrationFailed: "a migration ran but produced no store that passed verification; nothing was installed"
        case .applied: "with --detailed-exitcode: files were changed (with --dry-run: would be)"
        case .usage: "bad flags or values, an unknown strategy, a recipe parameter not given"
        case .notFound: "a path named on the command line does not exist (a recipe: the folders searched are named)"
        case .ioError: "a file or folder could not be read or written (permissions, I/O), or kept changing while read"
        case .outOfSpace: "no room to write (ENOSPC, EDQUOT, EFBIG): make room, or set TMPDIR to a folder with space"
        }
    }

    public var name: String {
        switch self {
        case .ok: "ok"
        case .problemsFound: "problems-found"
        case .badInput: "bad-input"
        case .refused: "refused"
        case .migrationFailed: "migration-failed"
        case .usage: "usage"
        case .notFound: "not-found"
        case .ioError: "io-error"
        case .outOfSpace: "out-of-space"
        case .needsCloudContainer: "needs-cloud-container"
        case .storeInUse: "store-in-use"
        case .busy: "busy"
        case .interrupted: "interrupted"
        case .preconditionFailed: "precondition-failed"
        case .changedSincePlanning: "changed"
        case .applied: "applied"
        }
    }
}

/// The one public error type of the core. Each case carries the data a person needs; `message`
/// turns it into a sentence and `exitStatus` into a documented exit code.
public enum USMError: Error, Sendable, Equatable {
    /// A path the user named does not exist.
    case notFound(path: String, what: String)
    /// A path exists but is not the kind of thing expected (a file where a folder was wanted...).
    case wrongKind(path: String, expected: String)
    /// Permission denied or another OS-level read failure.
    case unreadable(path: String, reason: String)
    /// Writing (to a private temporary folder or a destination) failed.
    case writeFailed(path: String, reason: String)
    /// Writing failed for want of room: disk or quota full, or the file-size limit reached.
    case outOfSpace(path: String, reason: String)
    /// The file is not an SQLite database at all (empty, random bytes, another format).
    case notSQLite(path: String, reason: String)
    /// The file is SQLite but lacks the Core Data bookkeeping tables.
    case notCoreData(path: String, missing: [String])
    /// SQLite reported an error while reading the store.
    case sqlite(path: String, code: Int32, message: String)
    /// A name in the layout that is not valid UTF-8 (or holds the escape block U+F700...U+F7FF):
    /// a damaged copy's; nothing below it is read, and no change is planned on the layout.
    case undecodableName(path: String)
    /// A store whose schema holds text that is not one accepted `CREATE` statement (a second
    /// statement, `TEMP`, another schema's name, a costly function in an index or check), or
    /// whose expressions ran past the step budget: nothing of it is executed, nothing written.
    case hostileSchema(path: String, reason: String)
    /// A symlink would take us outside the folder the user gave.
    case symlinkEscapes(path: String, target: String, root: String)
    /// Flags that contradict each other or name nothing usable.
    case usage(String)
    /// A libarchive call failed while writing.
    case archive(path: String, code: Int32, message: String)
    /// An archive that cannot be read: truncated, corrupt, or not an archive at all.
    case brokenArchive(path: String, message: String)
    /// An archive that is not a usm-repair bundle (no manifest first, another format name).
    case notABundle(path: String, reason: String)
    /// An archive entry that could write outside the target (absolute path, `..`, links out,
    /// devices, duplicates, more bytes than declared): nothing is extracted.
    case hostileArchive(path: String, reason: String)
    /// The bundle's content does not match its manifest.
    case manifestMismatch(path: String, count: Int, first: String)
    /// The bundle would be larger than `--max-size`.
    case tooLarge(estimate: Int64, limit: Int64, detail: String)
    /// A destructive step needs `--yes` (or a yes at the prompt).
    case confirmationRequired(String)
    /// A file changed while it was being read, so no consistent copy could be taken.
    case changedWhileReading(path: String)
    /// The operation needs the ubiquity container (`--cloud-dir`).
    case cloudContainerRequired(operation: String, why: String)
    /// A store the plan touches is open or locked by another process.
    case storeBusy(path: String, reason: String, pid: Int32?)
    /// Another usm-repair run holds the lock of a folder.
    case layoutBusy(path: String, pid: Int32?)
    /// An interrupted operation is pending and this command does not recover it (`--dry-run`).
    case interruptedOperation(path: String, operation: String)
    /// An operation folder this machine has no record of writing, or whose plan differs from the
    /// one it wrote, or names paths outside the folders given: reported, never obeyed.
    case untrustedOperation(path: String, reason: String)
    /// Recovery cannot put an item back: something new is at its place (the original stays in `kept`).
    case recoveryConflict(path: String, kept: String)
    /// Recovery will not undo an operation (`path`, its folder) as it is: its trash holds an item
    /// that is not what the operation moved aside, or items its plan does not put back. Nothing
    /// was moved; the folder stays pending.
    case recoveryRefused(path: String, reason: String)
    /// A precondition of the operation does not hold.
    case preconditionFailed(String)
    /// A path changed between planning and running.
    case changedSincePlanning(path: String)
    /// `--strategy` names no registered strategy.
    case unknownStrategy(String, known: [String])
    /// The migration destination exists and neither `--into` nor `--overwrite` was given.
    case destinationExists(path: String)
    /// The migration source is a Core Data store that fails its integrity or invariant checks.
    case sourceDamaged(path: String, detail: String)
    /// A merge destination whose schema cannot take the source's rows.
    case schemaMismatch(path: String, detail: String)
    /// A merge would duplicate values a uniqueness constraint forbids (`--on-conflict` not given).
    case mergeConflict(entity: String, count: Int, values: String)
    /// A recipe that does not decode, has an unsupported version, or names what the store lacks.
    case recipeInvalid(path: String, reason: String)
    /// A `--model` that is not a Core Data model this reads (Xcode model XML, `.mom`, `.momd`).
    case modelInvalid(path: String, reason: String)
    /// A recipe step failed while running; its transaction was rolled back.
    case recipeFailed(recipe: String, step: Int, message: String)
    /// An external plugin failed: non-zero exit, timeout, or output that is not its protocol.
    case pluginFailed(program: String, reason: String)
    /// An external plugin touched what it must not (its source copy, files outside its destination).
    case pluginRefused(program: String, reason: String)
    /// The staged store failed verification; nothing was installed.
    case verificationFailed(path: String, detail: String)
    /// A failure no other case describes (a library error without a path); the text says what it was.
    case unexpected(String)
    /// An operation failed and could not be left clean: it had committed (its change is in place)
    /// and removing its working files failed, or it had not and undoing it failed too; either
    /// way it is pending and `recover` finishes or undoes it. The exit code is the failure's.
    case operationPending(operation: String, committed: Bool, reason: String, underlying: ExitStatus)

    /// The documented exit code for this error.
    public var exitStatus: ExitStatus {
        switch self {
        case .notFound: .notFound
        case .wrongKind, .undecodableName: .badInput
        case .unreadable, .writeFailed: .ioError
        case .outOfSpace: .outOfSpace
        // SQLite's I/O errors (SQLITE_IOERR, SQLITE_CANTOPEN, and SQLITE_PERM and SQLITE_READONLY,
        // which it answers when a file it needs cannot be opened for writing, e.g. a -wal whose
        // open failed) come from the file system, not from the store's bytes: an I/O error, never
        // bad input.
        case let .sqlite(_, code, _) where [3, 8, 10, 14].contains(code & 0xFF): .ioError
        case .notSQLite, .notCoreData, .sqlite, .hostileSchema: .badInput
        case .symlinkEscapes: .refused
        case .usage: .usage
        case .archive: .ioError
        case .brokenArchive, .notABundle: .badInput
        case .manifestMismatch: .problemsFound
        case .hostileArchive, .tooLarge, .confirmationRequired: .refused
        case .changedWhileReading: .ioError
        case .unexpected: .ioError
        case .cloudContainerRequired: .needsCloudContainer
        case .storeBusy: .storeInUse
        case .layoutBusy: .busy
        case .interruptedOperation: .interrupted
        case .untrustedOperation, .recoveryConflict, .recoveryRefused: .refused
        case .preconditionFailed: .preconditionFailed
        case .changedSincePlanning: .changedSincePlanning
        case .unknownStrategy: .usage
        case .destinationExists, .mergeConflict, .pluginRefused: .refused
        case .sourceDamaged, .schemaMismatch, .recipeInvalid, .modelInvalid: .badInput
        case .recipeFailed, .pluginFailed, .verificationFailed: .migrationFailed
        case let .operationPending(_, _, _, underlying): underlying
        }
    }

    /// A stable machine-readable code for JSON output.
    public var code: String {
        switch self {
        case .notFound: "not-found"
        case .wrongKind: "wrong-kind"
        case .undecodableName: "undecodable-name"
        case .unreadable: "unreadable"
        case .writeFailed: "write-failed"
        case .outOfSpace: "out-of-space"
        case .notSQLite: "not-sqlite"
        case .notCoreData: "not-core-data"
        case .sqlite: "sqlite-error"
        case .hostileSchema: "hostile-schema"
        case .symlinkEscapes: "symlink-escapes"
        case .usage: "usage"
        case .archive: "archive-error"
        case .brokenArchive: "broken-archive"
        case .notABundle: "not-a-bundle"
        case .hostileArchive: "hostile-archive"
        case .manifestMismatch: "manifest-mismatch"
        case .tooLarge: "too-large"
        case .confirmationRequired: "confirmation-required"
        case .changedWhileReading: "changed-while-reading"
        case .unexpected: "unexpected-error"
        case .cloudContainerRequired: "needs-cloud-container"
        case .storeBusy: "store-in-use"
        case .layoutBusy: "busy"
        case .interruptedOperation: "interrupted"
        case .untrustedOperation: "untrusted-operation"
        case .recoveryConflict, .recoveryRefused: "recovery-conflict"
        case .preconditionFailed: "precondition-failed"
        case .changedSincePlanning: "changed"
        case .unknownStrategy: "unknown-strategy"
        case .destinationExists: "destination-exists"
        case .sourceDamaged: "source-damaged"
        case .schemaMismatch: "schema-mismatch"
        case .mergeConflict: "merge-conflict"
        case .recipeInvalid: "recipe-invalid"
        case .modelInvalid: "model-invalid"
        case .recipeFailed: "recipe-failed"
        case .pluginFailed: "plugin-failed"
        case .pluginRefused: "plugin-refused"
        case .verificationFailed: "verification-failed"
        case let .operationPending(_, committed, _, _): committed ? "cleanup-failed" : "undo-failed"
        }
    }

    /// The problem code a report lists when this error stops the reading of one store or file.
    public var problemCode: ProblemCode {
        switch self {
        case .notFound: .notFound
        case .wrongKind: .wrongKind
        case .undecodableName: .undecodableName
        case .writeFailed, .outOfSpace: .writeFailed
        case .notSQLite: .notSqlite
        case .notCoreData: .notCoreData
        case .sqlite: .sqliteError
        case .hostileSchema: .hostileSchema
        case .symlinkEscapes: .symlinkEscapes
        default: .unreadable
        }
    }

    /// One sentence for a person: what is wrong, where, and what to do when there is something to do.
    public var message: String {
        switch self {
        case let .notFound(path, what):
            "\(what) not found: \(path)"
        case let .wrongKind(path, expected):
            "\(path) is not \(expected)"
        case let .unreadable(path, reason):
            "cannot read \(path): \(reason)"
        case let .undecodableName(path):
            "\(path) has a name that \(FileSystemPath.undecodableDefect(path)); no change is planned on a layout read in part: give it back the name it had and run again; nothing was changed"
        case let .writeFailed(path, reason):
            "cannot write \(path): \(reason)"
        case let .outOfSpace(path, reason):
            "out of space writing \(path): \(reason); make room (or set TMPDIR to a folder with space) and run again"
        case let .notSQLite(path, reason):
            "\(path) is not an SQLite database (\(reason))"
        case let .notCoreData(path, missing):
            "\(path) is an SQLite database but not a Core Data store (no \(missing.joined(separator: ", ")) table)"
        case let .hostileSchema(path, reason):
            "\(path): its schema is refused (\(reason)); a store's schema text is data and is never run as SQL; nothing was read or written further"
        case let .sqlite(path, code, message):
            "SQLite error \(code) reading \(path): \(message)"
        case let .symlinkEscapes(path, target, root):
            "refusing to follow \(path): it is a symlink to \(target), outside \(root)"
        case let .usage(text):
            text
        case let .archive(path, code, message):
            "archive error \(code) on \(path): \(message)"
        case let .brokenArchive(path, message):
            "\(path) cannot be read as an archive: \(message)"
        case let .notABundle(path, reason):
            "\(path) is not a usm-repair bundle: \(reason)"
        case let .hostileArchive(path, reason):
            "refusing \(path): \(reason); nothing was extracted"
        case let .manifestMismatch(path, count, first):
            "\(path) does not match its manifest (\(count) difference\(count == 1 ? "" : "s"); first: \(first))"
        case let .tooLarge(estimate, limit, detail):
            "the bundle would be about \(estimate) bytes, over --max-size \(limit) (\(detail)); nothing was written"
        case let .confirmationRequired(text):
            text
        case let .changedWhileReading(path):
            "\(path) changed while it was being read (is the app still running?); close the app and try again"
        case let .unexpected(text):
            text
        case let .operationPending(operation, committed, reason, _):
            committed
                ? "\(operation) is complete (its change is in place), but removing its working files failed: \(reason); run usm-repair recover with the same folder flags to finish"
                : "\(operation) failed (\(reason)) and undoing what it had done failed too: it is pending; run usm-repair recover with the same folder flags to undo it"
        case let .cloudContainerRequired(operation, why):
            "\(operation) needs the ubiquity container (\(why)); give it with --cloud-dir (an .xcappdata download does not hold it); nothing was changed"
        case let .storeBusy(path, reason, pid):
            "\(path) is in use: \(reason)\(pid.map { " (process \($0))" } ?? ""); quit the app (or the program holding it) and try again; nothing was changed"
        case let .layoutBusy(path, pid):
            "another usm-repair run\(pid.map { " (process \($0))" } ?? "") is changing \(path); wait for it; nothing was changed"
        case let .interruptedOperation(path, operation):
            "an interrupted \(operation) is pending in \(path); run usm-repair recover (with the same folder flags) to finish or undo it"
        case let .untrustedOperation(path, reason):
            "refusing the operation folder \(path): \(reason); usm-repair finishes or undoes only operations this machine recorded writing, so it is left as it is (remove it by hand once you know what it is)"
        case let .recoveryConflict(path, kept):
            "cannot put \(path) back: something made after the operation moved the original aside is there now; the original is kept in \(kept); move the new item away and run usm-repair recover again"
        case let .recoveryRefused(path, reason):
            "cannot undo the interrupted operation in \(path): \(reason); nothing was put back and the operation folder is kept as it is (with its trash); its snapshot holds the originals too"
        case let .preconditionFailed(text):
            "\(text); nothing was changed"
        case let .changedSincePlanning(path):
            "\(path) changed since the plan was made (is the app running?); nothing was changed"
        case let .unknownStrategy(id, known):
            "unknown strategy \(id.debugDescription); known: \(known.joined(separator: ", "))"
        case let .destinationExists(path):
            "\(path) exists; give --into to merge into it or --overwrite --yes to replace it (it is snapshotted first)"
        case let .sourceDamaged(path, detail):
            "\(path) is damaged (\(detail)); nothing was migrated (usm-repair check shows every problem)"
        case let .schemaMismatch(path, detail):
            "\(path) cannot take the source's rows: \(detail); nothing was changed"
        case let .mergeConflict(entity, count, values):
            "\(count) rows of \(entity) have uniqueness-constrained values the destination already holds (\(values)); nothing was changed (--on-conflict keep-destination or keep-source resolves them)"
        case let .recipeInvalid(path, reason):
            "recipe \(path) is not usable: \(reason)"
        case let .modelInvalid(path, reason):
            "model \(path) is not usable: \(reason)"
        case let .recipeFailed(recipe, step, message):
            "recipe \(recipe) failed at step \(step): \(message); its transaction was rolled back and nothing was installed"
        case let .pluginFailed(program, reason):
            "plugin \(program) failed: \(reason); nothing was installed"
        case let .pluginRefused(program, reason):
            "plugin \(program) refused: \(reason); nothing was installed"
        case let .verificationFailed(path, detail):
            "the migrated store failed verification (\(detail)); nothing was installed at \(path)"
        }
    }
}

extension USMError {
    /// The one translation point from any error to a `USMError`: a `USMError` stays as it is, an
    /// SQLite error keeps its code and message, an OS error its path and reason.
    public static func wrap(_ error: any Error, path: String? = nil) -> USMError {
        if let error = error as? USMError { return error }
        if let error = error as? DatabaseError {
            if error.resultCode.primaryResultCode == .SQLITE_FULL {
                return .outOfSpace(path: path ?? "(a private copy)", reason: "SQLite found the disk full")
            }
            return .sqlite(
                path: path ?? "(unknown store)", code: error.resultCode.rawValue, message: error.message ?? "\(error)")
        }
        let ns = error as NSError
        let file = path ?? (ns.userInfo[NSFilePathErrorKey] as? String) ?? (ns.userInfo[NSURLErrorKey] as? URL)?.path
        let posix =
            (ns.domain == NSPOSIXErrorDomain ? ns.code : nil)
            ?? (ns.userInfo[NSUnderlyingErrorKey] as? NSError).flatMap {
                $0.domain == NSPOSIXErrorDomain ? $0.code : nil
            }
        if let posix, isOutOfSpace(Int32(posix)) || ns.code == NSFileWriteOutOfSpaceError {
            return .outOfSpace(path: file ?? "(unknown file)", reason: String(cString: strerror(Int32(posix))))
        }
        if let file {
            let reason =
                (ns.userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription ?? ns.localizedDescription
            return ns.domain == NSCocoaErrorDomain
                && (ns.code == NSFileWriteUnknownError || (640...642).contains(ns.code)
                    || ns.code == NSFileWriteNoPermissionError || ns.code == NSFileWriteVolumeReadOnlyError)
                ? .writeFailed(path: file, reason: reason) : .unreadable(path: file, reason: reason)
        }
        return .unexpected(ns.localizedDescription)
    }
}

extension USMError {
    /// True for the errno values that mean "no room": ENOSPC, EDQUOT, EFBIG.
    public static func isOutOfSpace(_ code: Int32) -> Bool {
        code == ENOSPC || code == EDQUOT || code == EFBIG
    }

    /// The error for a failed write of `path` with `errno` `code`: out of space, or another write failure.
    public static func writing(_ path: String, errno code: Int32 = errno, purpose: String? = nil) -> USMError {
        let reason = purpose.map { "\($0): \(String(cString: strerror(code)))" } ?? String(cString: strerror(code))
        return isOutOfSpace(code) ? .outOfSpace(path: path, reason: reason) : .writeFailed(path: path, reason: reason)
    }
}

extension USMError {
    /// This error, told as what it is when the file system ran out of room: SQLite reports a write
    /// that found no room as a generic I/O error (`SQLITE_IOERR`, its errno gone by the time the
    /// error surfaces), and some system calls lose errno on the way. A write failure or an SQLite
    /// I/O error on a file system with almost nothing left (or under a file size limit) is
    /// `outOfSpace` naming the folder; anything else stays as it is.
    public func diagnosingSpace() -> USMError {
        let path: String
        switch self {
        case let .writeFailed(p, reason):
            // A failure that says why, and it is not room: stays what it is.
            for code in [EROFS, EACCES, EPERM, ENOTDIR, EISDIR, EEXIST, ENOENT, ELOOP]
            where reason.contains(String(cString: strerror(code))) {
                return self
            }
            path = p
        case let .sqlite(p, code, _) where [10, 13, 14].contains(code & 0xFF): path = p
        case let .unexpected(text) where text.contains("disk I/O error") || text.contains("database or disk is full"):
            path = "/"
        default: return self
        }
        guard let room = Self.roomLeft(near: path), room.exhausted else { return self }
        return .outOfSpace(path: room.folder, reason: room.reason)
    }

    /// The free space of the file system holding `path` (its nearest existing folder).
    static func roomLeft(near path: String) -> (folder: String, exhausted: Bool, reason: String)? {
        var folder = path
        while FileStatus.lookup(folder)?.kind != .directory, folder != "/", !folder.isEmpty {
            folder = FileSystemPath.parent(folder)
        }
        var stats = statvfs()
        guard statvfs(folder, &stats) == 0 else { return nil }
        let free = Int64(stats.f_bavail) * Int64(stats.f_frsize)
        if free < 256 << 10 { return (folder, true, "the file system holding it has \(free) bytes free") }
        var limit = rlimit()
        #if canImport(Glibc)
            let fileSize = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
        #else
            let fileSize = RLIMIT_FSIZE
        #endif
        if getrlimit(fileSize, &limit) == 0, limit.rlim_cur != rlim_t.max {
            return (folder, true, "a file size limit of \(limit.rlim_cur) bytes is set (ulimit -f)")
        }
        return (folder, false, "")
    }
}

extension USMError: LocalizedError {
    /// Foundation's description hook, so `error.localizedDescription` is the same sentence.
    public var errorDescription: String? { message }
}
