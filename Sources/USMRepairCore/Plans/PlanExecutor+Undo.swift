import Foundation

/// Undoing an operation that had not committed: its items come back from the trash, all of them
/// or none, and only when they are what the operation moved aside.
extension PlanExecutor {
    /// Reverses the `install` steps that began and the `retire` steps whose item is in the trash,
    /// newest first. Each is a rename, so it either happened or did not: the files say which.
    /// A retired item is put back whether or not its `begin` reached the journal (a journal cut
    /// short, emptied or replaced must not make recovery forget it), but only when it is what the
    /// plan moved aside (its recorded fingerprint: kind and inode; a symlink or a hard link
    /// planted in the trash is not) and its place will be free. Everything is checked before the
    /// first move: a conflict or a foreign item moves nothing (a store is its file set: its `-wal`
    /// never goes back beside a newcomer's main file), and the operation stays pending.
    /// - Throws: `recoveryConflict` (something new where an item must return), `recoveryRefused`
    ///   (an item in the trash is not what was retired).
    static func undo(_ plan: Plan, begun: Set<Int>, installs: [Int: String] = [:]) throws {
        // What would be where once the undo ran (paths not in here: as they are now).
        var present: [[UInt8]: Bool] = [:]
        func exists(_ path: String) -> Bool { present[path.pathKey] ?? (FileStatus.lookup(path) != nil) }
        var moves: [(from: String, to: String)] = []
        var conflicts: [(path: String, kept: String)] = []
        var foreign: [String] = []
        for index in plan.steps.indices.reversed() {
            switch plan.steps[index].action {
            case let .install(staged, path, optional):
                // Only a step that began: otherwise what is at `path` was never ours to take away.
                guard begun.contains(index), exists(path), !exists(staged) else { break }
                // And only the item it installed (its identity recorded as the step began): an
                // optional item never made installed nothing, and whatever lies at its place
                // (the customer's) stays. A journal without the record (an older version's)
                // is trusted for a required item only.
                if let identity = installs[index] {
                    guard identity != Journal.absent, present[path.pathKey] == nil,
                        Journal.identity(of: path) == identity
                    else { break }
                } else if optional {
                    break
                }
                moves.append((path, staged))
                present[path.pathKey] = false
                present[staged.pathKey] = true
            case let .retire(path, trash):
                guard exists(trash) else { break }
                if let problem = foreignItem(trash, retired: path, expected: plan.expected[path]) {
                    foreign.append(problem)
                } else if exists(path) {
                    conflicts.append((path, trash))
                } else {
                    moves.append((trash, path))
                    present[trash.pathKey] = false
                    present[path.pathKey] = true
                }
            default:
                break
            }
        }
        if !foreign.isEmpty, let primary = plan.primaryRoot {
            throw USMError.recoveryRefused(
                path: primary.operationURL(plan.id).path, reason: foreign.joined(separator: "; "))
        }
        if !conflicts.isEmpty {
            throw USMError.recoveryConflict(
                path: conflicts.map(\.path).joined(separator: ", "), kept: conflicts.map(\.kept).joined(separator: ", ")
            )
        }
        for move in moves { try Self.move(move.from, to: move.to, in: plan) }
    }

    /// Why the item at `trash` is not the one the operation moved aside from `retired`, or nil
    /// when it is. With the fingerprint recorded at planning, the kind and the inode must match
    /// (a rename keeps both); without one, only a regular file with one link or a real folder is
    /// taken back.
    static func foreignItem(_ trash: String, retired: String, expected: Plan.Fingerprint?) -> String? {
        guard let status = FileStatus.lookup(trash) else { return nil }
        if let expected {
            if status.kind.rawValue != expected.kind {
                return
                    "\(trash) is a \(status.kind.description), but the operation moved aside a \(expected.kind) from \(retired)"
            }
            if status.inode != expected.inode {
                return "\(trash) is not the \(expected.kind) the operation moved aside from \(retired) (another inode)"
            }
        } else if status.kind != .file && status.kind != .directory {
            return "\(trash) is a \(status.kind.description), not what the operation moved aside from \(retired)"
        }
        if status.kind == .file, expected?.inode != status.inode, let links = FileStatus.links(trash), links > 1 {
            return "\(trash) has \(links) hard links: another name of it lies elsewhere"
        }
        return nil
    }

    /// What the trash folders of `plan` (in every folder it works in) still hold after its undo:
    /// items nothing put back. Each retired item lies at `trash/<n>/<name>`; empty `<n>` folders
    /// are what the undo leaves.
    static func trashLeftovers(_ plan: Plan) -> [String] {
        plan.roots.flatMap { trashLeftovers(in: $0.operationURL(plan.id)) }
    }

    /// The items left in `folder`'s `trash` (an operation folder of one root), and anything
    /// beside it that usm-repair does not put there (a trash renamed away and replaced).
    static func trashLeftovers(in folder: URL) -> [String] {
        var left: [String] = []
        let own: Set<String> = [Journal.planName, Journal.journalName, "staging", "trash"]
        for name in ((try? DirectoryListing.names(folder.path)) ?? []).sorted() where !own.contains(name) {
            left.append(folder.appendingPathComponent(name).path)
        }
        let trash = folder.appendingPathComponent("trash").path
        guard let status = FileStatus.lookup(trash) else { return left }
        guard status.kind == .directory else { return left + [trash] }
        for name in ((try? DirectoryListing.names(trash)) ?? []).sorted() {
            let slot = trash + "/" + name
            guard FileStatus.lookup(slot)?.kind == .directory else {
                left.append(slot)
                continue
            }
            guard let items = try? DirectoryListing.names(slot) else {
                left.append(slot)
                continue
            }
            left += items.sorted().map { slot + "/" + $0 }
        }
        return left
    }

    /// Refuses to discard an undone operation whose trash still holds anything: recovery never
    /// removes what it did not put back (a journal emptied or cut short, an item no step names).
    static func refuseLeftovers(_ plan: Plan) throws {
        let left = trashLeftovers(plan)
        guard !left.isEmpty, let primary = plan.primaryRoot else { return }
        throw USMError.recoveryRefused(
            path: primary.operationURL(plan.id).path,
            reason:
                "its trash still holds \(left.joined(separator: ", ")), which its plan does not put back (is its journal.jsonl damaged or altered?); look at them and move them where they belong"
        )
    }
}

extension USMError {
    /// Names the snapshot taken before an operation when one was recorded and is there (a
    /// regular file): the way back that needs nothing else.
    static func snapshotNote(_ snapshot: String?) -> String? {
        guard let snapshot, FileStatus.lookup(snapshot)?.kind == .file else { return nil }
        return
            "the snapshot taken before it, \(snapshot), holds the files as they were (usm-repair restore \(snapshot) --yes)"
    }

    /// A refused or conflicting recovery that also names the snapshot taken before the operation.
    func namingSnapshot(_ snapshot: String?) -> USMError {
        guard let note = Self.snapshotNote(snapshot) else { return self }
        switch self {
        case let .recoveryRefused(path, reason): return .recoveryRefused(path: path, reason: "\(reason); \(note)")
        case let .recoveryConflict(path, kept): return .recoveryConflict(path: path, kept: "\(kept); \(note)")
        default: return self
        }
    }
}
