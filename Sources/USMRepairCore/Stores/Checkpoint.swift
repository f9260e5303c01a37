import Foundation
import GRDB

/// A copy of a store whose WAL is merged into its main file: what UbiquityStoreManager seeds a new
/// cloud store from (it copies the main file only, usm-behaviour.md §5 rule 6). Made from a
/// consistent copy of the file set, in a private folder beside its final place; the user's files are
/// only read.
enum Checkpoint {
    /// Copies `source` (main file and -wal, captured together) to `staged`, merges the WAL there,
    /// checks the result (integrity, Core Data's tables) and leaves the main file alone at `staged`.
    /// - Returns: rows per entity of the result.
    static func run(source: StoreFileSet, into staged: URL) throws -> [String: Int] {
        let folder = staged.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let capture = folder.appendingPathComponent(".capture-\(UUID().uuidString)", isDirectory: true)
        defer { try? SafeRemove.tree(capture) }
        let present = ["main", "wal"].filter {
            source.member($0).map { FileStatus.lookup($0.path)?.kind == .file } ?? false
        }
        let captured = try StoreCapture.capture(source, members: present, into: capture)
        guard let main = captured.members["main"] else {
            throw USMError.notFound(path: source.main.path, what: "store")
        }
        try PlanExecutor.move(main.copy.path, to: staged.path)
        if let wal = captured.members["wal"] { try PlanExecutor.move(wal.copy.path, to: staged.path + "-wal") }

        var config = Configuration()
        config.label = "usm-repair.checkpoint"
        UntrustedDatabase.configure(&config, bytes: UntrustedDatabase.storeBytes(staged.path))
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -2048")
            try db.execute(sql: "PRAGMA mmap_size = 0")
        }
        var rows: [String: Int] = [:]
        do {
            let queue = try DatabaseQueue(path: staged.path, configuration: config)
            try queue.writeWithoutTransaction { db in
                let result = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                if let busy = result?[0] as Int?, busy != 0 {
                    throw USMError.writeFailed(path: staged.path, reason: "the WAL could not be merged into the copy")
                }
                let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check(5)")
                guard integrity == ["ok"] else {
                    throw USMError.sqlite(
                        path: source.main.path, code: 11,
                        message: "integrity_check failed: " + integrity.joined(separator: "; "))
                }
                let schema = try CoreDataSchema.read(db)
                let counts = try StoreChecks.entityCounts(db, schema: schema)
                for entity in schema.entities { rows[entity.name] = counts.rows[entity.number] ?? 0 }
            }
            try queue.close()
        } catch {
            throw USMError.wrap(error, path: staged.path)
        }
        for sidecar in ["-wal", "-shm"] where FileStatus.lookup(staged.path + sidecar) != nil {
            // A fully merged WAL is empty: nothing is lost by removing it.
            guard (FileStatus.lookup(staged.path + sidecar)?.size ?? 0) == 0 || sidecar == "-shm" else {
                throw USMError.writeFailed(
                    path: staged.path + sidecar, reason: "the WAL still holds frames after the merge")
            }
            unlink(staged.path + sidecar)
        }
        let fd = open(staged.path, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
        return rows
    }
}
