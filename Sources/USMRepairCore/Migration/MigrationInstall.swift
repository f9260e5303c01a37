import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Moves a verified staged store into place with renames on one file system: the old file set (if
/// any) is first moved aside into the staging folder, then the new main file and `_SUPPORT` folder
/// are renamed in, and the old members are removed only after that. A failure midway moves
/// everything back. (A crash midway leaves the old members in `.usm-repair-staging-*`; recovery
/// from that comes with the journal of the maintenance operations.)
enum MigrationInstall {
    /// Installs `staged` (inside `staging`) as `destination`.
    static func install(staged: StoreFileSet, staging: URL, destination: StoreFileSet, replacing: Bool) throws {
        let retired = staging.appendingPathComponent("retired", isDirectory: true)
        var movedAside: [(from: URL, to: URL)] = []
        var movedIn: [(from: URL, to: URL)] = []
        func move(_ from: URL, _ to: URL) throws {
            guard rename(from.path, to.path) == 0 else {
                throw USMError.writeFailed(path: to.path, reason: String(cString: strerror(errno)))
            }
        }
        func undo() {
            for item in movedIn.reversed() { _ = rename(item.to.path, item.from.path) }
            for item in movedAside.reversed() { _ = rename(item.to.path, item.from.path) }
        }
        do {
            if replacing {
                try FileManager.default.createDirectory(at: retired, withIntermediateDirectories: true)
                for member in destination.existingMembers() {
                    let target = retired.appendingPathComponent(member.lastPathComponent)
                    try move(member, target)
                    movedAside.append((member, target))
                }
            }
            if FileStatus.lookup(staged.supportDirectory.path) != nil {
                try move(staged.supportDirectory, destination.supportDirectory)
                movedIn.append((staged.supportDirectory, destination.supportDirectory))
            }
            try move(staged.main, destination.main)
            movedIn.append((staged.main, destination.main))
        } catch {
            undo()
            throw USMError.wrap(error, path: destination.main.path)
        }
        FileSync.directory(destination.directory)
        try? FileManager.default.removeItem(at: retired)
    }

    /// fsync of one file, so its bytes are on disk before a rename makes it visible.
    static func sync(_ url: URL) {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
