import Foundation

/// What the sidecars of a store say about it, read from the files themselves (never through SQLite,
/// which ignores a bad WAL without a word): a WAL-mode store without its `-wal`, a `-wal` SQLite
/// cannot read or that ends in a cut transaction, a `-wal` that does not belong with its main file
/// or its `-shm`, a stray `-wal`, a hot `-journal`.
///
/// A store in WAL mode without a `-wal` and without a `-shm` is what every clean close leaves, so it
/// is information. Where the files are evidence that a sidecar was lost or swapped (a `-shm` without
/// its `-wal`, a `-wal` of another page size, salts or frames other than the `-shm` recorded) it is an error.
enum SidecarChecks {
    /// The problems of `files`, whose main file has `header`; `walPresent` when a regular `-wal` exists.
    static func problems(files: StoreFileSet, header: SQLiteHeader, walPresent: Bool) -> [Problem] {
        var problems: [Problem] = []
        let shmPresent = FileStatus.lookup(files.shm.path) != nil
        if header.isWAL && !walPresent {
            if shmPresent {
                problems.append(
                    Problem(
                        .walMissing,
                        "the store is in WAL mode and its -shm is present but its -wal is not: the newest rows were probably lost when the file set was split",
                        subject: files.wal.path))
            } else {
                problems.append(
                    Problem(
                        .walHeaderWithoutWal,
                        "the header says WAL and there is no -wal beside the file: what SQLite leaves on every clean close; only if the file was copied without its -wal are the newest rows missing",
                        subject: files.wal.path))
            }
        }
        if !header.isWAL && walPresent {
            problems.append(
                Problem(
                    .strayWal, "a -wal file sits beside a store in rollback-journal mode; SQLite will ignore it",
                    subject: files.wal.path))
        }
        if FileStatus.lookup(files.journal.path) != nil {
            problems.append(
                Problem(
                    .hotJournal,
                    "a -journal file is present: a write was interrupted; SQLite rolls it back on the next open (this report shows the rolled-back state)",
                    subject: files.journal.path))
        }
        if header.isWAL && walPresent {
            // Only a regular file is read: opening a FIFO planted as -shm would block for ever.
            problems += walProblems(
                files: files, header: header, shmReadable: FileStatus.resolve(files.shm.path)?.kind == .file)
        }
        return problems
    }

    /// The `-wal` read frame by frame, and compared with the main file and the `-shm`.
    static func walProblems(files: StoreFileSet, header: SQLiteHeader, shmReadable: Bool) -> [Problem] {
        let path = files.wal.path
        // Unreadable here means unreadable for the private copy too, which reports it.
        guard let wal = try? WALFile.read(path: path) else { return [] }
        var problems: [Problem] = []
        if wal.size > 0, !wal.headerValid {
            problems.append(
                Problem(
                    .walInvalid,
                    "the -wal is not a WAL SQLite can read (\(wal.headerProblem ?? "bad header")): SQLite ignores all \(wal.size) bytes of it, so any rows only it held are lost",
                    subject: path))
        }
        if wal.headerValid {
            if wal.pageSize != header.pageSize {
                problems.append(
                    Problem(
                        .walMismatch,
                        "the -wal was written for pages of \(wal.pageSize) bytes but the main file's pages are \(header.pageSize) bytes: it belongs to another database",
                        subject: path))
            }
            if wal.cutFrames > 0 {
                problems.append(
                    Problem(
                        .walCutTransaction,
                        "\(wal.cutFrames) frames of the -wal come after its last valid commit (frame \(wal.committedFrames) of \(wal.validFrames) valid): a transaction was cut short and SQLite drops it",
                        subject: path, count: wal.cutFrames))
            }
        }
        if shmReadable, let index = WALIndexHeader.read(path: files.shm.path),
            index.lastCommitFrame > index.backfilledFrames
        {
            // The -shm recorded committed frames that the main file does not hold yet: this -wal must hold them.
            let pending = index.lastCommitFrame - index.backfilledFrames
            if !wal.headerValid {
                problems.append(
                    Problem(
                        .walMismatch,
                        "the -shm records \(index.lastCommitFrame) committed frames (\(pending) not yet in the main file) but the -wal holds none: committed rows are missing",
                        subject: path, count: pending))
            } else if wal.salts != index.salts {
                problems.append(
                    Problem(
                        .walMismatch,
                        "the -wal's salt values differ from those its -shm records: this -wal is not the one the -shm indexed (\(pending) committed frames not yet in the main file are elsewhere)",
                        subject: path, count: pending))
            } else if wal.committedFrames < index.lastCommitFrame {
                let lost = index.lastCommitFrame - wal.committedFrames
                problems.append(
                    Problem(
                        .walMismatch,
                        "the -shm records \(index.lastCommitFrame) committed frames but the -wal holds only \(wal.committedFrames): committed rows are missing",
                        subject: path, count: lost))
            }
        }
        return problems
    }
}
