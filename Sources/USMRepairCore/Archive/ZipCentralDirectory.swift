import Foundation

/// The names a zip's central directory lists, read from the file itself. A zip names each entry
/// twice: in its local header (what libarchive reads, even in its seekable mode) and in the
/// central directory at the end (what `unzip`, Python's `zipfile` and most extractors read). A
/// bundle is checked entry by entry through the first; this reads the second, so that the two can
/// be compared, streaming (memory does not grow with the number of entries).
enum ZipCentralDirectory {
    /// Calls `body` with each name the central directory lists, in its order (raw bytes).
    static func forEachName(_ path: String, _ body: ([UInt8]) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw USMError.unreadable(path: path, reason: "could not be opened")
        }
        defer { try? handle.close() }
        func broken(_ why: String) -> USMError { .brokenArchive(path: path, message: "zip central directory: \(why)") }
        let size: UInt64
        do { size = try handle.seekToEnd() } catch { throw USMError.unreadable(path: path, reason: "\(error)") }
        func read(_ offset: UInt64, _ count: Int) throws -> [UInt8] {
            // An offset read from the file is checked before it is used: past the end (or past
            // what an off_t holds, which Foundation's seek traps on) is a broken zip.
            guard offset <= size, UInt64(count) <= size - offset else {
                throw broken("points past the end of the file")
            }
            do {
                try handle.seek(toOffset: offset)
                let data = try handle.read(upToCount: count) ?? Data()
                guard data.count == count else { throw broken("ends early") }
                return [UInt8](data)
            } catch let error as USMError {
                throw error
            } catch {
                throw USMError.unreadable(path: path, reason: "\(error)")
            }
        }
        // The end-of-central-directory record: 22 bytes and a comment of up to 65,535.
        let tailLength = Int(min(size, 22 + 65_535))
        guard tailLength >= 22 else { throw broken("no end record") }
        let tail = try read(size - UInt64(tailLength), tailLength)
        guard
            let end = stride(from: tailLength - 22, through: 0, by: -1).first(where: {
                tail[$0] == 0x50 && tail[$0 + 1] == 0x4B && tail[$0 + 2] == 0x05 && tail[$0 + 3] == 0x06
            })
        else { throw broken("no end record") }
        var count = UInt64(le(tail, end + 10, 2))
        var offset = UInt64(le(tail, end + 16, 4))
        var length = UInt64(le(tail, end + 12, 4))
        if count == 0xFFFF || offset == 0xFFFF_FFFF || length == 0xFFFF_FFFF {
            // ZIP64: a locator just before the end record points at the ZIP64 end record.
            let locatorAt = size - UInt64(tailLength) + UInt64(end)
            guard locatorAt >= 20 else { throw broken("no ZIP64 locator") }
            let locator = try read(locatorAt - 20, 20)
            guard le(locator, 0, 4) == 0x0706_4B50 else { throw broken("no ZIP64 locator") }
            let record = try read(le(locator, 8, 8), 56)
            guard le(record, 0, 4) == 0x0606_4B50 else { throw broken("no ZIP64 end record") }
            count = le(record, 32, 8)
            length = le(record, 40, 8)
            offset = le(record, 48, 8)
        }
        guard offset <= size, length <= size - offset else { throw broken("lies past the end of the file") }
        var position = offset
        for _ in 0..<count {
            guard position + 46 <= offset + length else { throw broken("lists more entries than it holds") }
            let fixed = try read(position, 46)
            guard le(fixed, 0, 4) == 0x0201_4B50 else { throw broken("an entry without its signature") }
            let nameLength = Int(le(fixed, 28, 2))
            let rest = UInt64(nameLength) + le(fixed, 30, 2) + le(fixed, 32, 2)
            guard position + 46 + rest <= offset + length else { throw broken("an entry runs past its end") }
            try body(nameLength == 0 ? [] : read(position + 46, nameLength))
            position += 46 + rest
        }
    }

    /// The little-endian integer of `width` bytes at `at`.
    private static func le(_ bytes: [UInt8], _ at: Int, _ width: Int) -> UInt64 {
        (0..<width).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
    }
}
