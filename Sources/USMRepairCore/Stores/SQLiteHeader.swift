import Foundation

/// The first 100 bytes of an SQLite database file, read without SQLite so that a file can be
/// judged (empty, not SQLite, truncated, WAL mode) before anything opens it.
public struct SQLiteHeader: Sendable, Equatable {
    /// Page size in bytes.
    public let pageSize: Int
    /// 1 = legacy rollback journal, 2 = WAL.
    public let writeVersion: UInt8
    /// Database size in pages as the header records it; nil when the header marks it stale.
    public let declaredPageCount: Int?

    /// True when the file is in WAL mode (Core Data's default since iOS 7 / OS X 10.9).
    public var isWAL: Bool { writeVersion == 2 }

    /// The 16-byte magic string every SQLite 3 database starts with.
    static let magic: [UInt8] = Array("SQLite format 3\u{0}".utf8)

    /// Reads and validates the header of the file at `path`.
    /// - Throws: `notSQLite` for an empty file, a short file or a wrong magic string,
    ///   `unreadable` when the file cannot be read.
    public static func read(path: String) throws -> SQLiteHeader {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw USMError.unreadable(path: path, reason: errnoDescription())
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: 100) ?? Data()
        } catch {
            throw USMError.unreadable(path: path, reason: error.localizedDescription)
        }
        return try parse(Array(data), path: path)
    }

    /// Parses header bytes (at least 100 for a valid header).
    static func parse(_ bytes: [UInt8], path: String) throws -> SQLiteHeader {
        if bytes.isEmpty { throw USMError.notSQLite(path: path, reason: "the file is empty") }
        guard bytes.count >= 100, Array(bytes[0..<16]) == magic else {
            let reason =
                bytes.count < 100
                    && Array(bytes.prefix(min(16, bytes.count))) == Array(magic.prefix(min(16, bytes.count)))
                ? "only \(bytes.count) bytes: truncated inside the header"
                : "no SQLite header"
            throw USMError.notSQLite(path: path, reason: reason)
        }
        let rawPage = Int(bytes[16]) << 8 | Int(bytes[17])
        let pageSize = rawPage == 1 ? 65536 : rawPage
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            throw USMError.notSQLite(path: path, reason: "invalid page size \(rawPage) in the header")
        }
        let writeVersion = bytes[18]
        guard writeVersion == 1 || writeVersion == 2 else {
            throw USMError.notSQLite(path: path, reason: "unknown file format version \(writeVersion)")
        }
        func be32(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }
        // The in-header size is valid only when the change counter matches "version-valid-for".
        let count = be32(28)
        let valid = count > 0 && be32(24) == be32(92)
        return SQLiteHeader(pageSize: pageSize, writeVersion: writeVersion, declaredPageCount: valid ? Int(count) : nil)
    }

    /// The number of bytes the header says the file holds, when known.
    public var declaredSize: Int64? { declaredPageCount.map { Int64($0) * Int64(pageSize) } }
}
