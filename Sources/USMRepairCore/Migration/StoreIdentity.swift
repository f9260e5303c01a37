import Foundation
import GRDB

/// The identity a migrated store gets: a new store gets a fresh `Z_UUID` and the source's metadata
/// without the ubiquity keys; a merge keeps the destination's `Z_UUID` and merges the source's
/// metadata under the destination's (destination keys win). Recipe edits come last.
enum StoreIdentity {
    /// What the identity rewrite did.
    struct Result {
        let storeUUID: String?
        let ubiquityKeys: [String]
        let notes: [String]
    }

    /// Rewrites `Z_METADATA` of the staged store at `staged`.
    /// - Parameters:
    ///   - sourcePlist: the source's `Z_PLIST` (merges only; a new store already holds the source's row).
    ///   - merge: keep the staged store's UUID and let its keys win.
    /// - Parameter provenance: the entry recorded under `USMRepairProvenance` (after the entries the
    ///   staged store's metadata already holds: the destination's in a merge, the source's otherwise).
    /// - Parameter keepUUID: a new store keeps the `Z_UUID` it was copied with (`salvage`).
    static func apply(to staged: URL, sourcePlist: Data?, merge: Bool, keepUbiquity: Bool, edits: [MetadataEdit],
                      provenance: Provenance.Entry? = nil, keepUUID: Bool = false) throws -> Result {
        let queue = try StagedStore.open(staged)
        defer { try? queue.close() }
        return try queue.write { db in
            var notes: [String] = []
            let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA LIMIT 1")
            let stagedPlist = row.flatMap { Data.fromDatabaseValue($0["Z_PLIST"] as DatabaseValue) }
            let stagedUUID = row.flatMap { String.fromDatabaseValue($0["Z_UUID"] as DatabaseValue) }
            func decode(_ data: Data?, _ what: String) -> [String: Any]? {
                guard let data, !data.isEmpty else { return [:] }
                guard let dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)) as? [String: Any] else {
                    notes.append("the \(what) metadata (Z_PLIST) is not a property-list dictionary; it was kept as it was")
                    return nil
                }
                return dict
            }
            let strip: ([String: Any]) -> [String: Any] = { dict in
                keepUbiquity ? dict : dict.filter { !StoreMetadata.isUbiquityKey($0.key) }
            }
            var result: [String: Any]?
            if merge {
                if let destination = decode(stagedPlist, "destination's"), let source = decode(sourcePlist, "source's") {
                    result = strip(source).merging(destination) { _, kept in kept }
                }
            } else if let own = decode(stagedPlist, "source's") {
                result = strip(own)
            }
            if var dict = result {
                for edit in edits {
                    switch edit {
                    case let .set(key, json):
                        guard let value = try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed]), !(value is NSNull) else {
                            throw USMError.recipeInvalid(path: key, reason: "metadata value for \(key) is not a JSON value a property list can hold")
                        }
                        dict[key] = value
                    case let .remove(pattern):
                        dict = dict.filter { !MigrationSession.matches($0.key, pattern) }
                    }
                }
                if let provenance {
                    let kept = merge ? Provenance.entries(inPlist: stagedPlist) : Provenance.entries(in: dict)
                    dict[Provenance.metadataKey] = Provenance.value(kept + [provenance])
                }
                let data = try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0)
                result = dict
                if row == nil {
                    try db.execute(sql: "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, NULL, ?)", arguments: [data])
                } else {
                    try db.execute(sql: "UPDATE Z_METADATA SET Z_PLIST = ?", arguments: [data])
                }
            }
            let keep = merge || (keepUUID && !(stagedUUID ?? "").isEmpty)
            let uuid = keep ? stagedUUID : UUID().uuidString
            if !keep { try db.execute(sql: "UPDATE Z_METADATA SET Z_UUID = ?", arguments: [uuid]) }
            let keys = (result?.keys).map { $0.filter(StoreMetadata.isUbiquityKey).sorted() } ?? []
            return Result(storeUUID: uuid, ubiquityKeys: keys, notes: notes)
        }
    }
}

/// The external-data files (`.<Name>_SUPPORT/_EXTERNAL_DATA/<UUID>`) a migrated store refers to:
/// copied from the source (or, in a merge, the destination) into staging, and no others.
enum ExternalDataCopy {
    /// Copies every file the staged store refers to into its staged `_EXTERNAL_DATA` folder.
    /// - Throws: `verificationFailed` when source and destination hold different files of one name.
    static func run(staged: StoreFileSet, schema: CoreDataSchema, from folders: [URL]) throws -> Int {
        let queue = try StagedStore.open(staged.main, readonly: true)
        defer { try? queue.close() }
        var names: Set<String> = []
        try queue.read { db in
            for table in schema.entityTables {
                for column in schema.tables[table] ?? [] where column.type.uppercased().contains("BLOB") {
                    let c = SQLName.quote(column.name)
                    let cursor = try Data.fetchCursor(db, sql: """
                        SELECT \(c) FROM \(SQLName.quote(table)) WHERE typeof(\(c)) = 'blob' AND substr(\(c), 1, 1) = x'02'
                          AND length(\(c)) BETWEEN 37 AND 40
                        """)
                    while let blob = try cursor.next() {
                        if let name = ExternalData.referencedName(blob) { names.insert(name) }
                    }
                }
            }
        }
        guard !names.isEmpty else { return 0 }
        let target = staged.externalDataDirectory
        do {
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        } catch {
            throw USMError.wrap(error, path: target.path)
        }
        var copied = 0
        for name in names.sorted() {
            let candidates = folders.map { $0.appendingPathComponent(name) }.filter { FileStatus.resolve($0.path)?.kind == .file }
            guard let first = candidates.first else { continue }
            if candidates.count > 1 {
                let hashes = try Set(candidates.map { try FileCopy.sha256(of: $0.path).sha256 })
                if hashes.count > 1 {
                    throw USMError.verificationFailed(path: staged.main.path,
                        detail: "the external-data file \(name) exists in source and destination with different content; it is never overwritten")
                }
            }
            _ = try FileCopy.copy(from: first.path, to: target.appendingPathComponent(name).path)
            copied += 1
        }
        return copied
    }
}
