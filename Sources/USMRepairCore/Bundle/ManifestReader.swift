import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a `manifest.json` as a stream: the file records go into a `ManifestIndex` a batch at a
/// time, the few small parts needed are kept, and everything else (the status report, the
/// skipped list, redaction notes) is skipped without being held. Every value kept is bounded, so
/// a manifest of any size costs the same memory, and one that is not ours is refused with a reason.
enum ManifestReader {
    /// Bytes one file record may take.
    static let recordBudget = 1 << 20
    /// Bytes the stores list and the snapshot record may each take (the roots: a sixteenth).
    static let partBudget = 4 << 20

    /// Reads the manifest in `file` into `index` and returns the rest.
    /// - Throws: `notABundle` with the reason, `hostileArchive` for a path listed twice.
    static func read(_ file: URL, into index: ManifestIndex, archive: URL) throws -> ManifestHeader {
        let fd = FileSystemPath.withCString(file.path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: file.path, reason: errnoDescription()) }
        defer { close(fd) }
        var json = JSONStream(fd: fd)
        var format: String?
        var formatVersion: Int?
        var archiveFormat: String?
        var content: String?
        var roots: [BundleRoot]?
        var stores: [BundleStore] = []
        var snapshot: SnapshotRecord?
        var sawFiles = false
        func refuse(_ reason: String) -> USMError {
            .notABundle(path: archive.path, reason: "its manifest.json does not describe a bundle (\(reason))")
        }
        do {
            try json.beginObject()
            while let key = try json.nextKey() {
                switch key {
                case "format":
                    guard let value = try json.readValue(budget: 4096).string else {
                        throw refuse("format is not text")
                    }
                    format = value
                case "formatVersion":
                    guard let value = try json.readValue(budget: 64).int64, let version = Int(exactly: value) else {
                        throw refuse("wrong type at formatVersion")
                    }
                    formatVersion = version
                case "archiveFormat":
                    archiveFormat = try json.readValue(budget: 4096).string
                case "content":
                    content = try json.readValue(budget: 4096).string
                case "roots":
                    let value = try json.readValue(budget: partBudget / 16)
                    guard let list = value.array else { throw refuse("wrong type at roots") }
                    roots = try list.map { item in
                        guard let name = item["name"]?.string, let source = item["source"]?.string else {
                            throw refuse("wrong type at roots")
                        }
                        return BundleRoot(name: name, source: source)
                    }
                case "stores":
                    let value = try json.readValue(budget: partBudget)
                    guard let list = value.array else { throw refuse("wrong type at stores") }
                    stores = try list.map { try store($0, refuse: refuse) }
                case "snapshot":
                    let value = try json.readValue(budget: partBudget)
                    if !value.isNull {
                        guard let operation = value["operation"]?.string, let items = value["items"]?.array,
                            let absent = value["absent"]?.array
                        else { throw refuse("wrong type at snapshot") }
                        snapshot = SnapshotRecord(
                            operation: operation, items: items.compactMap(\.string), absent: absent.compactMap(\.string)
                        )
                    }
                case "files":
                    sawFiles = true
                    try json.beginArray()
                    var batch: [BundleFile] = []
                    var position = 0
                    while try json.nextElement() {
                        batch.append(try record(try json.readValue(budget: recordBudget), at: position, refuse: refuse))
                        position += 1
                        if batch.count == 512 {
                            try index.add(batch)
                            batch.removeAll(keepingCapacity: true)
                        }
                    }
                    try index.add(batch)
                default:
                    try json.skipValue()
                }
            }
        } catch let failure as JSONStream.Failure {
            throw refuse(failure.message == "not JSON" ? "not JSON" : "not JSON: \(failure.message)")
        } catch let duplicate as ManifestIndex.Duplicate {
            throw USMError.hostileArchive(path: archive.path, reason: "the manifest lists \(duplicate.path) twice")
        }
        guard let format else { throw refuse("no format") }
        guard let formatVersion else { throw refuse("no formatVersion") }
        guard let roots else { throw refuse("no roots") }
        guard sawFiles else { throw refuse("no files") }
        return ManifestHeader(
            format: format, formatVersion: formatVersion, archiveFormat: archiveFormat, content: content, roots: roots,
            stores: stores,
            snapshot: snapshot)
    }

    private static func record(_ value: JSONValue, at position: Int, refuse: (String) -> USMError) throws -> BundleFile
    {
        func text(_ key: String) throws -> String {
            guard let text = value[key]?.string else {
                throw refuse(value[key] == nil ? "no \(key) in files[\(position)]" : "wrong type at files.\(key)")
            }
            return text
        }
        func number(_ key: String) throws -> Int64 {
            guard let number = value[key]?.int64 else {
                throw refuse(value[key] == nil ? "no \(key) in files[\(position)]" : "wrong type at files.\(key)")
            }
            return number
        }
        func optional(_ key: String) throws -> String? {
            guard let item = value[key], !item.isNull else { return nil }
            guard let text = item.string else { throw refuse("wrong type at files.\(key)") }
            return text
        }
        let mode = try text("mode")
        var file = BundleFile(
            kind: try text("kind"), path: try text("path"), size: try number("size"), mode: UInt32(mode, radix: 8) ?? 0,
            mtime: FileTime(totalNanoseconds: try number("mtimeNanos")), sha256: try optional("sha256"),
            linkTarget: try optional("linkTarget"), source: nil)
        file.mode = mode
        file.mtime = try text("mtime")
        return file
    }

    private static func store(_ value: JSONValue, refuse: (String) -> USMError) throws -> BundleStore {
        guard let path = value["path"]?.string, let role = value["role"]?.string else {
            throw refuse("wrong type at stores")
        }
        var rows: [String: Int] = [:]
        if case let .object(members)? = value["rows"] {
            for (name, count) in members { if let n = count.int64, let int = Int(exactly: n) { rows[name] = int } }
        }
        return BundleStore(
            path: path, role: role, uuid: value["uuid"]?.string, storeUUID: value["storeUUID"]?.string,
            health: value["health"]?.string ?? "", objects: value["objects"]?.int64.flatMap { Int(exactly: $0) } ?? 0,
            rows: rows,
            captured: value["captured"]?.string ?? "")
    }
}
