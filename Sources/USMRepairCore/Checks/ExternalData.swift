import Foundation
import GRDB

/// External binary data: attribute values Core Data wrote to `.X_SUPPORT/_EXTERNAL_DATA/<UUID>`,
/// referenced from the row by a BLOB that starts with the byte 0x02 followed by the file's UUID.
struct ExternalData {
    /// The store whose references are checked.
    let files: StoreFileSet

    /// The names of the files present in `_EXTERNAL_DATA` (listing never follows links).
    /// - Throws: `unreadable` when the folder exists but cannot be listed (never taken for empty).
    func fileNames() throws -> Set<String> {
        let dir = files.externalDataDirectory.path
        guard FileStatus.lookup(dir)?.kind == .directory else { return [] }
        var names: Set<String> = []
        try DirectoryListing.forEach(dir) { if !$0.hasPrefix(".") { names.insert($0) } }
        return names
    }

    /// How many files `_EXTERNAL_DATA` holds.
    func fileCount() throws -> Int {
        let dir = files.externalDataDirectory.path
        guard FileStatus.lookup(dir)?.kind == .directory else { return 0 }
        var count = 0
        try DirectoryListing.forEach(dir) { if !$0.hasPrefix(".") { count += 1 } }
        return count
    }

    /// A reference names a file when, after the 0x02 tag, it is a UUID (a trailing NUL is tolerated).
    static func referencedName(_ blob: Data) -> String? {
        guard blob.first == 0x02 else { return nil }
        var rest = blob.dropFirst()
        while rest.last == 0 { rest = rest.dropLast() }
        guard rest.count == 36, let text = String(data: rest, encoding: .ascii), UUID(uuidString: text) != nil else { return nil }
        return text
    }

    /// References without a file (error: the value is lost) and files without a reference (warning: garbage).
    func problems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        let present = try fileNames()
        var referenced: Set<String> = []
        var missing: [String: (count: Int, sample: [String])] = [:]
        for table in schema.entityTables {
            for column in schema.tables[table] ?? [] where column.type.uppercased().contains("BLOB") {
                // typeof() and length() of a blob never load it: only 37-40-byte values are read.
                let c = column.name.sqlIdentifier
                let sql = """
                    SELECT \(c) FROM \(table.sqlIdentifier)
                    WHERE typeof(\(c)) = 'blob'
                      AND length(\(c)) BETWEEN 37 AND 40
                      AND substr(\(c), 1, 1) = x'02'
                    """
                let cursor = try Data.fetchCursor(db, sql: sql)
                while let blob = try cursor.next() {
                    guard let name = ExternalData.referencedName(blob) else { continue }
                    referenced.insert(name)
                    if !present.contains(name) {
                        let key = "\(table).\(column.name)"
                        var entry = missing[key] ?? (0, [])
                        entry.count += 1
                        if entry.sample.count < StoreChecks.sampleSize { entry.sample.append(name) }
                        missing[key] = entry
                    }
                }
            }
        }
        var problems: [Problem] = []
        for (subject, entry) in missing.sorted(by: { $0.key < $1.key }) {
            problems.append(Problem(.externalDataMissing, "\(entry.count) values of \(subject) refer to external data files that do not exist in \(files.externalDataDirectory.path) (\(entry.sample.joined(separator: ", ")))",
                subject: subject, count: entry.count))
        }
        let orphans = present.subtracting(referenced).sorted()
        if !orphans.isEmpty {
            problems.append(Problem(.externalDataOrphan, "\(orphans.count) files in \(files.externalDataDirectory.path) are referenced by no row (\(orphans.prefix(StoreChecks.sampleSize).joined(separator: ", ")))",
                subject: files.externalDataDirectory.path, count: orphans.count))
        }
        return problems
    }
}
