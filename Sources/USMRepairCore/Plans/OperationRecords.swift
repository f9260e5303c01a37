import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// This machine's own record of every plan it wrote into a layout, kept in the state folder
/// outside every layout (`$XDG_STATE_HOME/usm-repair/operations/<id>.json`): the plan's SHA-256,
/// the folders it works in and the command. A layout is a stranger's data: an operation folder
/// found in it is obeyed (finished or undone by `recover`) only when this record says this
/// machine wrote exactly that plan for exactly those folders. The record is written and fsynced
/// before the plan reaches the layout, and removed once the operation is purged.
public struct OperationRecords: Sendable {
    /// One plan written by this machine.
    public struct Record: Codable, Sendable, Equatable {
        public let id: String
        /// SHA-256 (hex) of the `plan.json` bytes written into the layout.
        public let sha256: String
        /// The folders the plan works in (its roots' paths), in the plan's order.
        public let roots: [String]
        /// The command, for messages.
        public let operation: String
        public let created: String
    }

    /// `<state>/operations`.
    public let folder: URL

    /// Records kept under `stateFolder` (default `$XDG_STATE_HOME/usm-repair`).
    public init(stateFolder: URL = StateFolder.base()) {
        folder = stateFolder.appendingPathComponent("operations", isDirectory: true)
    }

    /// A record larger than this was not written by us.
    static let maxRecordBytes = 1 << 20

    func url(_ id: String) -> URL { folder.appendingPathComponent(id + ".json") }

    /// The hex SHA-256 of plan bytes.
    static func digest(_ bytes: Data) -> String { SHA256.hash(data: bytes).hex }

    /// Records that this machine is about to write `bytes` as the plan of `plan` (fsynced, so a
    /// kill right after still finds it).
    /// - Throws: `writeFailed` / `outOfSpace` naming the state folder: without the record the
    ///   operation could not be recovered, so it does not start.
    func write(_ plan: Plan, bytes: Data) throws {
        try Folders.create(
            folder.path, mode: 0o700, purpose: "cannot create the folder where usm-repair records its operations")
        let record = Record(
            id: plan.id, sha256: Self.digest(bytes), roots: plan.roots.map(\.path), operation: plan.operation,
            created: FileTime.now.iso8601)
        let target = url(plan.id)
        try? FileManager.default.removeItem(at: target)
        try FileWrite.create(target, contents: try JSONOutput.data(record), mode: 0o600)
        FileSync.directory(folder)
    }

    /// The record of `id`, when this machine wrote one (and it reads as one).
    func read(_ id: String) -> Record? {
        guard PlanCheck.isPlainID(id), let status = FileStatus.lookup(url(id).path), status.kind == .file,
            status.size <= Int64(Self.maxRecordBytes),
            let data = try? Data(contentsOf: url(id)),
            let record = try? JSONDecoder().decode(Record.self, from: data), record.id == id
        else { return nil }
        return record
    }

    /// Every record this machine holds (at most `limit`, in name order).
    func all(limit: Int = 10_000) -> [Record] {
        let names = ((try? DirectoryListing.names(folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted().prefix(
            limit)
        return names.compactMap { read(String($0.dropLast(5))) }
    }

    /// Forgets `id` (its operation is finished and purged).
    func remove(_ id: String) {
        guard PlanCheck.isPlainID(id) else { return }
        _ = FileSystemPath.withCString(url(id).path) { unlink($0) }
        FileSync.directory(folder)
    }
}
