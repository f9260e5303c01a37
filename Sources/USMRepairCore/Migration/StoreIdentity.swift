import Foundation
import GRDB

/// The identity a migrated store gets, and its metadata. The store's identity is its `Z_UUID`
/// (the host of every object URI, `x-coredata://<Z_UUID>/<Entity>/p<N>`), mirrored by an
/// `NSStoreUUID` key when the metadata holds one:
/// - a new store gets a fresh one, and the source's metadata without the ubiquity keys;
/// - a store that replaces another (`--overwrite`) keeps the replaced store's, as Core Data's own
///   replace does, so that URIs the app, Spotlight or a history token kept still resolve;
/// - a whole-store repair (a recipe whose first step copies the whole store) keeps its source's;
/// - a merge keeps the destination's, and takes the source's metadata only where the destination
///   has no such key, never the keys that describe the destination's own file and model
///   (`versioningKey`). Recipe edits come last.
enum StoreIdentity {
    /// Which `Z_UUID` the result gets.
    enum Choice: Equatable {
        /// A new UUID.
        case fresh
        /// This UUID (the replaced store's).
        case keep(String)
        /// The one the staged store holds already (the merge destination's, or the source's after a whole copy).
        case staged
    }

    /// What the identity rewrite did.
    struct Result {
        let storeUUID: String?
        let ubiquityKeys: [String]
        /// Core Data's ubiquity bookkeeping tables left out (`UbiquityTables`), with their rows.
        let droppedTables: [UbiquityTables.Table]
        let notes: [String]
    }

    /// The metadata keys that describe a store's own file and model: the model's version hashes and
    /// identifiers, the framework version that wrote it, its type, auto-vacuum level, identity and
    /// ancillary models. Core Data fills a missing one from the store's own model, never from
    /// another store's: in a merge they stay the destination's alone.
    static func isVersioningKey(_ key: String) -> Bool {
        key.hasPrefix("NSStoreModelVersion") || key.hasPrefix("_NSStoreAncillary")
            || ["NSPersistenceFrameworkVersion", "NSStoreType", "NSStoreUUID", "_NSAutoVacuumLevel"].contains(key)
    }

    /// Rewrites `Z_METADATA` of the staged store at `staged`.
    /// - Parameters:
    ///   - sourcePlist: the source's `Z_PLIST` (merges only; a new store already holds the source's row).
    ///   - merge: let the staged store's keys win (its identity is `identity`, `.staged` for a merge).
    /// - Parameter provenance: the entry recorded under `USMRepairProvenance` (after the entries the
    ///   staged store's metadata already holds: the destination's in a merge, the source's otherwise).
    static func apply(
        to staged: URL, sourcePlist: Data?, merge: Bool, identity: Choice, keepUbiquity: Bool, edits: [MetadataEdit],
        provenance: Provenance.Entry? = nil
    ) throws -> Result {
        let queue = try StagedStore.open(staged)
        defer { try? queue.close() }
        return try queue.write { db in
            var notes: [String] = []
            let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA LIMIT 1")
            let stagedPlist = row.flatMap { Data.fromDatabaseValue($0["Z_PLIST"] as DatabaseValue) }
            let stagedUUID = row.flatMap { String.fromDatabaseValue($0["Z_UUID"] as DatabaseValue) }
            let uuid: String? =
                switch identity {
                case .fresh: UUID().uuidString
                case let .keep(kept): kept
                // A staged store without a UUID (a salvage that lost Z_METADATA's) gets a new one.
                case .staged: (stagedUUID ?? "").isEmpty ? UUID().uuidString : stagedUUID
                }
            func decode(_ data: Data?, _ what: String) -> [String: Any]? {
                guard let data, !data.isEmpty else { return [:] }
                guard
                    let dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: nil))
                        as? [String: Any]
                else {
                    notes.append(
                        "the \(what) metadata (Z_PLIST) is not a property-list dictionary; it was kept as it was")
                    return nil
                }
                return dict
            }
            let strip: ([String: Any]) -> [String: Any] = { dict in
                keepUbiquity ? dict : dict.filter { !StoreMetadata.isUbiquityKey($0.key) }
            }
            var result: [String: Any]?
            if merge {
                if let destination = decode(stagedPlist, "destination's"), let source = decode(sourcePlist, "source's")
                {
                    let versioning = source.keys.filter { isVersioningKey($0) && destination[$0] == nil }.sorted()
                    if !versioning.isEmpty {
                        notes.append(
                            "the source's \(versioning.joined(separator: ", ")) not taken: they describe the source's own file and model, not the destination's"
                        )
                    }
                    result = strip(source).filter { !isVersioningKey($0.key) }.merging(destination) { _, kept in kept }
                }
            } else if let own = decode(stagedPlist, "source's") {
                result = strip(own)
            }
            if var dict = result {
                for edit in edits {
                    switch edit {
                    case let .set(key, json):
                        guard let value = try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed]),
                            !(value is NSNull)
                        else {
                            throw USMError.recipeInvalid(
                                path: key,
                                reason: "metadata value for \(key) is not a JSON value a property list can hold")
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
                // A metadata key naming the identity names the one Z_UUID holds.
                if let uuid, dict["NSStoreUUID"] != nil { dict["NSStoreUUID"] = uuid }
                let data = try PropertyListSerialization.data(fromPropertyList: dict, format: .binary, options: 0)
                result = dict
                if row == nil {
                    try db.execute(
                        sql: "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, NULL, ?)",
                        arguments: [data])
                } else {
                    try db.execute(sql: "UPDATE Z_METADATA SET Z_PLIST = ?", arguments: [data])
                }
            }
            if uuid != stagedUUID || row == nil {
                try db.execute(sql: "UPDATE Z_METADATA SET Z_UUID = ?", arguments: [uuid])
            }
            let keys = (result?.keys).map { $0.filter(StoreMetadata.isUbiquityKey).sorted() } ?? []
            // A store without ubiquity metadata is a local store: the bookkeeping of the copy it
            // came from (which peer sent what, key ranges) describes a sync it no longer takes part in.
            var dropped: [UbiquityTables.Table] = []
            if keys.isEmpty {
                dropped = try UbiquityTables.drop(db)
                if !dropped.isEmpty {
                    let list = dropped.map { "\($0.name) (\($0.rows) rows)" }.joined(separator: ", ")
                    notes.append(
                        "Core Data's iCloud bookkeeping tables left out of the local store: \(list); UbiquityStoreManager's own migration (NSPersistentStoreRemoveUbiquitousMetadataOption) writes a store without them"
                    )
                }
            }
            return Result(storeUUID: uuid, ubiquityKeys: keys, droppedTables: dropped, notes: notes)
        }
    }
}

/// The files beside a migrated store that its rows refer to (`ExternalData`): external storage
/// (`.<Name>_SUPPORT/_EXTERNAL_DATA/<UUID>`) and file-backed futures (`.<Name>_SUPPORT/_FBF/<UUID>`),
/// copied from the source (or, in a merge, the destination) into the staged store's own support
/// folder, and no others.
enum ExternalDataCopy {
    /// Copies every file the staged store refers to into its staged `_EXTERNAL_DATA` and `_FBF` folders.
    /// - Throws: `verificationFailed` when source and destination hold different files of one name.
    /// - Parameter prefetched: files `prefetch` copied already (from the first of `stores`): not
    ///   copied again; those the staged store does not refer to are removed.
    static func run(
        staged: StoreFileSet, schema: CoreDataSchema, from stores: [StoreFileSet],
        prefetched: [ExternalData.Kind: Set<String>] = [:]
    ) throws -> Int {
        let names = try referenced(by: staged.main, schema: schema)
        var copied = 0
        for kind in ExternalData.Kind.allCases {
            guard let wanted = names[kind], !wanted.isEmpty else { continue }
            let target = try folder(kind, of: staged)
            for name in wanted.sorted() {
                let candidates = stores.map { kind.directory($0).appendingPathComponent(name) }.filter {
                    FileStatus.resolve($0.path)?.kind == .file
                }
                guard let first = candidates.first else { continue }
                if candidates.count > 1 {
                    let hashes = try Set(candidates.map { try FileCopy.sha256(of: $0.path).sha256 })
                    if hashes.count > 1 {
                        throw USMError.verificationFailed(
                            path: staged.main.path,
                            detail:
                                "the file \(kind.directory(staged).lastPathComponent)/\(name) exists in source and destination with different content; it is never overwritten"
                        )
                    }
                }
                if prefetched[kind]?.contains(name) != true {
                    _ = try FileCopy.copy(from: first.path, to: target.appendingPathComponent(name).path)
                }
                copied += 1
            }
        }
        // What the source refers to and the result does not (a recipe left its rows out): not carried.
        for (kind, carried) in prefetched {
            for name in carried.subtracting(names[kind] ?? []).sorted() {
                let file = kind.directory(staged).appendingPathComponent(name)
                do {
                    try FileManager.default.removeItem(at: file)
                } catch {
                    throw StagedStore.wrapWrite(error, path: file)
                }
            }
        }
        return copied
    }

    /// Copies the files the store at `copy` (a private copy of `store`, read only) refers to from
    /// `store`'s folders into `staged`'s, and returns their names: run beside a strategy whose
    /// result refers to its source's files, so that `run` finds them copied.
    static func prefetch(
        staged: StoreFileSet, copy: URL, schema: CoreDataSchema, from store: StoreFileSet
    ) throws -> [ExternalData.Kind: Set<String>] {
        let names = try referenced(by: copy, schema: schema)
        var copied: [ExternalData.Kind: Set<String>] = [:]
        for kind in ExternalData.Kind.allCases {
            guard let wanted = names[kind], !wanted.isEmpty else { continue }
            let target = try folder(kind, of: staged)
            for name in wanted.sorted() {
                let file = kind.directory(store).appendingPathComponent(name)
                guard FileStatus.resolve(file.path)?.kind == .file else { continue }
                _ = try FileCopy.copy(from: file.path, to: target.appendingPathComponent(name).path)
                copied[kind, default: []].insert(name)
            }
        }
        return copied
    }

    /// The names of the files the rows of the store at `url` (read only) refer to, per kind.
    private static func referenced(by url: URL, schema: CoreDataSchema) throws -> [ExternalData.Kind: Set<String>] {
        let queue = try StagedStore.open(url, readonly: true)
        defer { try? queue.close() }
        var names: [ExternalData.Kind: Set<String>] = [:]
        try queue.read { db in
            try ExternalData.references(db, schema: schema) { reference, _ in
                names[reference.kind, default: []].insert(reference.name)
            }
        }
        return names
    }

    /// The staged store's folder for `kind`, created when missing.
    private static func folder(_ kind: ExternalData.Kind, of staged: StoreFileSet) throws -> URL {
        let target = kind.directory(staged)
        do {
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        } catch {
            throw USMError.wrap(error, path: target.path)
        }
        return target
    }
}
