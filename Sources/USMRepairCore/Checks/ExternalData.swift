import Foundation
import GRDB

/// Attribute values Core Data keeps in files beside the store, in the store's `.X_SUPPORT` folder,
/// each named by a reference in the row. Two kinds, as Core Data writes them (decompiled CoreData:
/// `_PFExternalReferenceData -initForExternalLocation:…`, `_NSDataFileBackedFuture -_storeMetadata`,
/// `NSSQLCore -externalDataReferencesDirectory`, `-fileBackedFuturesDirectory`):
/// - external storage ("Allows External Storage"): the byte 0x02, the file's name (a UUID) and a
///   NUL; the file is `.X_SUPPORT/_EXTERNAL_DATA/<UUID>`. (0x01 and the bytes themselves is a value
///   kept inline.)
/// - a file-backed future (`NSFileBackedFuture`, iOS 13+): the bytes `03 23 23 23` ("\x03###"), the
///   file's size (64-bit, little-endian on Apple's platforms), the UUID's 16 bytes, then the file's
///   name; the file is `.X_SUPPORT/_FBF/<UUID>` (Core Data builds the path from the 16 bytes).
struct ExternalData {
    /// Which of the two a reference is.
    enum Kind: CaseIterable {
        case externalStorage, fileBackedFuture

        /// The folder of the store's `_SUPPORT` folder holding this kind's files.
        func directory(_ files: StoreFileSet) -> URL {
            switch self {
            case .externalStorage: files.externalDataDirectory
            case .fileBackedFuture: files.fileBackedFuturesDirectory
            }
        }

        /// The SQL condition a column value `c` (quoted) meets when it may be a reference of this kind:
        /// `typeof()`, `length()` and `substr()` of a blob never load it, so only references are read.
        func filter(_ c: String) -> String {
            switch self {
            case .externalStorage:
                "typeof(\(c)) = 'blob' AND length(\(c)) BETWEEN 37 AND 40 AND substr(\(c), 1, 1) = x'02'"
            case .fileBackedFuture:
                "typeof(\(c)) = 'blob' AND length(\(c)) BETWEEN 29 AND 300 AND substr(\(c), 1, 4) = x'03232323'"
            }
        }
    }

    /// One reference read from a row.
    struct Reference: Equatable {
        let kind: Kind
        /// The file's name in its folder.
        let name: String
        /// The size the reference records (file-backed futures only).
        let size: UInt64?
    }

    /// The store whose references are checked.
    let files: StoreFileSet

    /// The names of the files present in the folder of `kind` (listing never follows links).
    /// - Throws: `unreadable` when the folder exists but cannot be listed (never taken for empty).
    func fileNames(_ kind: Kind = .externalStorage) throws -> Set<String> {
        let dir = kind.directory(files).path
        guard FileStatus.lookup(dir)?.kind == .directory else { return [] }
        var names: Set<String> = []
        try DirectoryListing.forEach(dir) { if !$0.hasPrefix(".") { names.insert($0) } }
        return names
    }

    /// How many files `_EXTERNAL_DATA` and `_FBF` hold.
    func fileCount() throws -> Int {
        try Kind.allCases.reduce(0) { $0 + (try fileNames($1)).count }
    }

    /// An external-storage reference names a file when, after the 0x02 tag, it is a UUID (a
    /// trailing NUL, which Core Data writes, is tolerated, and so is its absence).
    static func referencedName(_ blob: Data) -> String? {
        guard blob.first == 0x02 else { return nil }
        var rest = blob.dropFirst()
        while rest.last == 0 { rest = rest.dropLast() }
        guard rest.count == 36, let text = String(data: rest, encoding: .ascii), UUID(uuidString: text) != nil else {
            return nil
        }
        return text
    }

    /// The reference a column value holds, if it is one of either kind.
    static func reference(_ blob: Data) -> Reference? {
        if let name = referencedName(blob) { return Reference(kind: .externalStorage, name: name, size: nil) }
        let bytes = [UInt8](blob)
        guard bytes.count >= 29, bytes[0] == 0x03, bytes[1] == 0x23, bytes[2] == 0x23, bytes[3] == 0x23 else {
            return nil
        }
        let size = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[4 + $1]) << (8 * UInt64($1)) }
        let u = Array(bytes[12..<28])
        let uuid = UUID(
            uuid: (u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15])
        )
        return Reference(kind: .fileBackedFuture, name: uuid.uuidString, size: size)
    }

    /// Every reference of the store's entity tables, by kind, with the `TABLE.COLUMN` holding it.
    static func references(_ db: Database, schema: CoreDataSchema, _ body: (Reference, String) throws -> Void) throws {
        for table in schema.entityTables {
            for column in schema.tables[table] ?? [] where column.type.uppercased().contains("BLOB") {
                let c = column.name.sqlIdentifier
                // One scan of the table for both kinds (a value is one kind or neither: its first
                // byte tells them apart), references in the order of the rows, none kept.
                let filter = Kind.allCases.map { "(\($0.filter(c)))" }.joined(separator: " OR ")
                let cursor = try Data.fetchCursor(db, sql: "SELECT \(c) FROM \(table.sqlIdentifier) WHERE \(filter)")
                while let blob = try cursor.next() {
                    guard let reference = reference(blob) else { continue }
                    try body(reference, "\(table).\(column.name)")
                }
            }
        }
    }

    /// References without a file (error: the value is lost), a file-backed future's file of
    /// another size than recorded (error: not the file written), and files without a reference
    /// (warning: garbage).
    func problems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        var present: [Kind: Set<String>] = [:]
        for kind in Kind.allCases { present[kind] = try fileNames(kind) }
        var referenced: [Kind: Set<String>] = [:]
        var missing: [String: (count: Int, sample: [String], folder: String)] = [:]
        var sized: [String: (count: Int, sample: [String])] = [:]
        try Self.references(db, schema: schema) { reference, subject in
            referenced[reference.kind, default: []].insert(reference.name)
            let folder = reference.kind.directory(files)
            if !(present[reference.kind] ?? []).contains(reference.name) {
                var entry = missing[subject] ?? (0, [], folder.path)
                entry.count += 1
                if entry.sample.count < StoreChecks.sampleSize { entry.sample.append(reference.name) }
                missing[subject] = entry
            } else if let size = reference.size,
                let status = FileStatus.lookup(folder.appendingPathComponent(reference.name).path),
                status.kind != .file || UInt64(max(status.size, 0)) != size
            {
                var entry = sized[subject] ?? (0, [])
                entry.count += 1
                if entry.sample.count < StoreChecks.sampleSize {
                    entry.sample.append("\(reference.name): \(status.size) bytes, \(size) recorded")
                }
                sized[subject] = entry
            }
        }
        var problems: [Problem] = []
        for (subject, entry) in missing.sorted(by: { $0.key < $1.key }) {
            problems.append(
                Problem(
                    .externalDataMissing,
                    "\(entry.count) values of \(subject) refer to files that do not exist in \(entry.folder) (\(entry.sample.joined(separator: ", ")))",
                    subject: subject, count: entry.count))
        }
        for (subject, entry) in sized.sorted(by: { $0.key < $1.key }) {
            problems.append(
                Problem(
                    .externalDataSize,
                    "\(entry.count) file-backed values of \(subject) name a file in \(files.fileBackedFuturesDirectory.path) that is not the size they record (\(entry.sample.joined(separator: "; ")))",
                    subject: subject, count: entry.count))
        }
        for kind in Kind.allCases {
            let orphans = (present[kind] ?? []).subtracting(referenced[kind] ?? []).sorted()
            guard !orphans.isEmpty else { continue }
            let folder = kind.directory(files).path
            problems.append(
                Problem(
                    .externalDataOrphan,
                    "\(orphans.count) files in \(folder) are referenced by no row (\(orphans.prefix(StoreChecks.sampleSize).joined(separator: ", ")))",
                    subject: folder, count: orphans.count))
        }
        return problems
    }
}
