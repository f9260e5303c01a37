import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The record of an operation's steps, beside its `plan.json`: one JSON line per event, each
/// fsynced before the executor goes on, so that after a kill `recover` knows which steps began,
/// which finished, and whether the operation committed. It holds no paths: they are in the plan.
struct Journal {
    /// One event.
    struct Event: Codable, Equatable {
        enum Kind: String, Codable { case begin, done, committed, finished }
        let event: Kind
        var step: Int?
        /// For the snapshot step: where the snapshot was written.
        var snapshot: String?
        /// For the `begin` of an install step: the identity of what it moves into place
        /// (`<device>:<inode>` of the staged item, which a rename keeps), or `absent` when there
        /// is nothing to install (an optional item never made). Its undo moves back only that.
        var installs: String?
    }

    /// The identity `installs` records for the item at `path`: `<device>:<inode>`, or `absent`.
    static func identity(of path: String) -> String {
        FileStatus.lookup(path).map { "\($0.device):\($0.inode)" } ?? absent
    }

    /// What `installs` records when nothing was installed.
    static let absent = "absent"

    static let planName = "plan.json"
    static let journalName = "journal.jsonl"

    /// The operation folder holding `plan.json` and the journal.
    let folder: URL
    private var fd: Int32 = -1

    var planURL: URL { folder.appendingPathComponent(Self.planName) }
    var url: URL { folder.appendingPathComponent(Self.journalName) }

    /// Creates the folder's plan and an empty journal, both fsynced, and the folder's entry too.
    static func create(in folder: URL, planBytes: Data) throws -> Journal {
        try FileWrite.create(folder.appendingPathComponent(planName), contents: planBytes, mode: 0o600)
        var journal = Journal(folder: folder)
        journal.fd = openFile(journal.url.path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard journal.fd >= 0 else { throw USMError.writeFailed(path: journal.url.path, reason: errnoDescription()) }
        guard fsync(journal.fd) == 0 else {
            throw USMError.writeFailed(path: journal.url.path, reason: errnoDescription())
        }
        FileSync.directory(folder)
        FileSync.directory(folder.deletingLastPathComponent())
        return journal
    }

    /// Opens an existing journal for appending (recovery).
    static func reopen(_ folder: URL) throws -> Journal {
        var journal = Journal(folder: folder)
        journal.fd = openFile(journal.url.path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0)
        guard journal.fd >= 0 else { throw USMError.writeFailed(path: journal.url.path, reason: errnoDescription()) }
        return journal
    }

    private init(folder: URL) { self.folder = folder }

    /// Appends one event and makes it durable.
    func append(_ event: Event) throws {
        var line = try JSONEncoder().encode(event)
        line.append(0x0A)
        try line.withUnsafeBytes { try FileSync.writeAll(fd, $0, path: url.path) }
        guard fsync(fd) == 0 else { throw USMError.writeFailed(path: url.path, reason: errnoDescription()) }
    }

    func close() {
        if fd >= 0 { closeFile(fd) }
    }

    /// The longest line a journal of ours holds; anything longer is not one of its events.
    static let maxLine = 4096

    /// What a journal says about a plan of `stepCount` steps, read as a stream in bounded memory
    /// (a journal is read back from the layout: its size is whatever the folder holds). A last
    /// line cut by a kill is ignored (its event never counted), as are lines that are not events
    /// of this plan (an index out of range, a line too long).
    struct State: Equatable {
        /// Steps whose `begin` was recorded.
        var begun = Set<Int>()
        /// For install steps that began: the identity of what each moves into place (`installs`).
        var installs: [Int: String] = [:]
        /// Steps whose `done` was recorded.
        var done = Set<Int>()
        /// True when `committed` was recorded.
        var committed = false
        /// Where the snapshot step says it wrote the snapshot (for messages only: the journal lies
        /// in the layout, so this names a file, it is never acted on).
        var snapshot: String?
    }

    /// The state a journal records (an absent or unreadable journal: nothing began).
    static func state(in folder: URL, stepCount: Int) -> State {
        var state = State()
        let path = folder.appendingPathComponent(journalName).path
        // Only a regular file is opened: a FIFO planted as a journal would block for ever.
        guard FileStatus.lookup(path)?.kind == .file, let handle = FileHandle(forReadingAtPath: path) else {
            return state
        }
        defer { try? handle.close() }
        var line: [UInt8] = []
        var tooLong = false
        func finish() {
            defer {
                line.removeAll(keepingCapacity: true)
                tooLong = false
            }
            guard !tooLong, !line.isEmpty, let event = try? JSONDecoder().decode(Event.self, from: Data(line)) else {
                return
            }
            if let step = event.step, !(0..<stepCount).contains(step) { return }
            switch event.event {
            case .begin:
                if let step = event.step {
                    state.begun.insert(step)
                    if let installs = event.installs { state.installs[step] = installs }
                }
            case .done:
                if let step = event.step { state.done.insert(step) }
                if let snapshot = event.snapshot { state.snapshot = snapshot }
            case .committed: state.committed = true
            case .finished: break
            }
        }
        while let chunk = try? handle.read(upToCount: 1 << 16), !chunk.isEmpty {
            for byte in chunk {
                if byte == 0x0A {
                    finish()
                } else if line.count < maxLine {
                    line.append(byte)
                } else {
                    tooLong = true
                }
            }
        }
        // A last line without its line break was cut by a kill: not counted.
        return state
    }

    /// A plan larger than this is not one of ours (plans name whole folders, not their files).
    static let maxPlanBytes = 8 << 20

    /// The bytes of an operation folder's `plan.json`, read whole only when they are few enough.
    /// - Throws: `unreadable` when it cannot be read, `tooLargePlan` past `maxPlanBytes`.
    static func planBytes(in folder: URL) throws -> Data {
        let url = folder.appendingPathComponent(planName)
        guard let status = FileStatus.lookup(url.path), status.kind == .file else {
            throw USMError.unreadable(path: url.path, reason: "the interrupted operation's plan is not a file")
        }
        guard status.size <= Int64(maxPlanBytes) else {
            throw USMError.untrustedOperation(
                path: folder.path, reason: "its plan.json is \(status.size) bytes, larger than any plan of usm-repair")
        }
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            return try handle.read(upToCount: maxPlanBytes + 1) ?? Data()
        } catch {
            throw USMError.unreadable(
                path: url.path,
                reason: "the interrupted operation's plan cannot be read (\(USMError.wrap(error).message))")
        }
    }

    /// The plan of an operation folder, for a report (its operation's name), trusted or not.
    static func plan(in folder: URL) throws -> Plan {
        let bytes = try planBytes(in: folder)
        do {
            return try JSONDecoder().decode(Plan.self, from: bytes)
        } catch {
            throw USMError.untrustedOperation(path: folder.path, reason: "its plan.json is not a plan of usm-repair")
        }
    }
}

private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func closeFile(_ fd: Int32) { _ = close(fd) }

/// At most one usm-repair changes a folder at a time: an `flock` on `<root>/<private>/lock`, which
/// the kernel releases when the process dies (no stale lock after a crash). The file holds the
/// holder's pid for the message. Removing the file at the end is safe because a run that opened it
/// before the removal finds, once it holds the lock, that the path no longer names its file, and retries.
final class OperationLock {
    private var held: [(fd: Int32, path: String, folder: URL, createdFolder: Bool)] = []

    /// Takes the lock of every root, in path order (so two runs never wait on each other crosswise).
    /// - Throws: `layoutBusy` when another run holds one; `symlinkEscapes` when a private folder is a
    ///   symlink, `wrongKind` when it is anything else but a folder.
    init(roots: [Plan.Root]) throws {
        do {
            for root in roots.sorted(by: { $0.path < $1.path }) { try lock(root) }
        } catch {
            release()
            throw error
        }
    }

    private func lock(_ root: Plan.Root) throws {
        let folder = root.privateURL
        var created = false
        switch FileStatus.lookup(folder.path)?.kind {
        case nil:
            guard mkdir(folder.path, 0o700) == 0 || errno == EEXIST else {
                throw USMError.writeFailed(path: folder.path, reason: errnoDescription())
            }
            created = true
        case .directory?:
            break
        case .symlink?:
            throw USMError.symlinkEscapes(
                path: folder.path, target: folder.resolvingSymlinksInPath().path, root: root.path)
        case let kind?:
            // Say what it is: a plain file there is no link, and calling it one misleads.
            throw USMError.wrongKind(
                path: folder.path,
                expected:
                    "a folder (usm-repair's private folder): it is a \(kind.description); move it away and run again (nothing was changed)"
            )
        }
        let path = folder.appendingPathComponent("lock").path
        for _ in 0..<10 {
            let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw USMError.writeFailed(path: path, reason: errnoDescription()) }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let pid = (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
                    Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }
                close(fd)
                throw USMError.layoutBusy(path: root.path, pid: pid)
            }
            var opened = stat()
            var named = stat()
            guard fstat(fd, &opened) == 0, lstat(path, &named) == 0, opened.st_ino == named.st_ino,
                opened.st_dev == named.st_dev
            else {
                close(fd)  // removed by the previous holder between our open and our lock: try the new file
                continue
            }
            _ = ftruncate(fd, 0)
            let pid = Data("\(getpid())\n".utf8)
            try? pid.withUnsafeBytes { try FileSync.writeAll(fd, $0, path: path) }
            held.append((fd, path, folder, created))
            return
        }
        throw USMError.layoutBusy(path: root.path, pid: nil)
    }

    /// Removes the lock files (while holding them) and the private folders left empty, then
    /// unlocks. Returns what could not be removed and why (a folder still holding a pending
    /// operation is not a failure): the next run in that folder removes it.
    @discardableResult
    func release() -> [String] {
        var left: [String] = []
        for entry in held.reversed() {
            if unlink(entry.path) != 0, errno != ENOENT { left.append("\(entry.path): \(errnoDescription())") }
            let operations = entry.folder.appendingPathComponent("operations").path
            if rmdir(operations) != 0, ![ENOENT, ENOTEMPTY, EEXIST].contains(errno) {
                left.append("\(operations): \(errnoDescription())")
            }
            if rmdir(entry.folder.path) != 0, ![ENOENT, ENOTEMPTY, EEXIST].contains(errno), left.isEmpty {
                left.append("\(entry.folder.path): \(errnoDescription())")
            }
            close(entry.fd)
        }
        held = []
        return left
    }

    deinit { release() }
}
