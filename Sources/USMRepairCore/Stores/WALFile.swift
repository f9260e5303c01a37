import Foundation

/// What a `-wal` file holds, read byte by byte without SQLite, in blocks (memory does not grow with
/// the file). SQLite itself says nothing when it ignores a WAL: a header it cannot read makes the
/// whole file empty to it, and frames after the last commit it can verify are dropped silently.
///
/// Format (SQLite's "WAL file format"): a 32-byte header (magic 0x377f0682 or 0x377f0683, format
/// version 3007000, page size, checkpoint sequence, two salts, two checksums over the first 24
/// bytes), then frames of a 24-byte header (page number, database size after a commit or 0, the two
/// salts, two cumulative checksums) followed by one page. A frame counts only when its salts match
/// the header's and its checksum continues the chain; the checksum words are big-endian when the
/// magic's low bit is set, little-endian otherwise. Only frames up to the last commit are used.
public struct WALFile: Sendable, Equatable {
    /// The file's size in bytes.
    public let size: Int64
    /// True when the 32-byte header is one SQLite accepts (magic, version, page size, checksum).
    public let headerValid: Bool
    /// Why the header was refused, when it was.
    public let headerProblem: String?
    /// The page size the header records.
    public let pageSize: Int
    /// The header's salt bytes (offsets 16-23), as the `-shm` copies them.
    public let salts: [UInt8]
    /// Frames that pass SQLite's test, from the first one on.
    public let validFrames: Int
    /// Frames up to and including the last valid commit frame: what SQLite applies.
    public let committedFrames: Int
    /// Frames of the current WAL generation that SQLite ignores: valid frames after the last commit,
    /// plus a frame whose salts match but whose checksum fails or which the file cuts short.
    public let cutFrames: Int

    /// The WAL format version every SQLite 3.7+ writes.
    static let version: UInt32 = 3_007_000
    /// Bytes read per block (whole frames).
    static let blockSize = 1 << 20

    /// Reads the WAL at `path`. `frames`, when given, sees every valid frame in order: its index
    /// (from 0; it starts at byte 32 + index × (24 + page size)), its page number and its commit
    /// size (the database's size in pages after a commit frame, 0 otherwise).
    /// - Throws: `USMError.unreadable` when the file cannot be read.
    public static func read(path: String, frames: ((_ index: Int, _ page: UInt32, _ commit: UInt32) -> Void)? = nil)
        throws -> WALFile
    {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw USMError.unreadable(path: path, reason: errnoDescription())
        }
        defer { try? handle.close() }
        do {
            return try read(handle, frames: frames)
        } catch let error as USMError {
            throw error
        } catch {
            throw USMError.unreadable(path: path, reason: error.localizedDescription)
        }
    }

    private static func read(_ handle: FileHandle, frames: ((Int, UInt32, UInt32) -> Void)?) throws -> WALFile {
        let size = Int64(try handle.seekToEnd())
        try handle.seek(toOffset: 0)
        let header = [UInt8](try handle.read(upToCount: 32) ?? Data())
        func refused(_ why: String, pageSize: Int = 0) -> WALFile {
            WALFile(
                size: size, headerValid: false, headerProblem: why, pageSize: pageSize, salts: [], validFrames: 0,
                committedFrames: 0, cutFrames: 0)
        }
        guard header.count == 32 else { return refused("it is \(size) bytes long, shorter than a WAL header") }
        let magic = bigEndian32(header, 0)
        guard magic & 0xFFFF_FFFE == 0x377F_0682 else { return refused("it does not start with the WAL magic number") }
        let bigEndianSums = magic & 1 == 1
        guard bigEndian32(header, 4) == version else {
            return refused("its format version is \(bigEndian32(header, 4)), not \(version)")
        }
        let pageSize = Int(bigEndian32(header, 8))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            return refused("its page size \(pageSize) is not a power of two from 512 to 65536")
        }
        var sums = (UInt32(0), UInt32(0))
        header.withUnsafeBytes {
            checksum(UnsafeRawBufferPointer(rebasing: $0[0..<24]), bigEndian: bigEndianSums, &sums)
        }
        guard sums == (bigEndian32(header, 24), bigEndian32(header, 28)) else {
            return refused("its header checksum does not match", pageSize: pageSize)
        }
        let salts = Array(header[16..<24])

        // Frames, a block of whole frames at a time.
        let frameSize = 24 + pageSize
        let framesPerBlock = max(1, blockSize / frameSize)
        var valid = 0
        var committed = 0
        var brokenInGeneration = false
        scan: while true {
            guard let block = try handle.read(upToCount: framesPerBlock * frameSize), !block.isEmpty else { break }
            let stop: Bool = block.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let remaining = raw.count - offset
                    // A frame header of this generation (its salts match) marks the frame as SQLite's own.
                    let ownSalts = remaining >= 16 && (0..<8).allSatisfy { raw[offset + 8 + $0] == salts[$0] }
                    guard remaining >= frameSize else {
                        brokenInGeneration = ownSalts
                        return true
                    }
                    let frame = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + frameSize)])
                    var next = sums
                    checksum(UnsafeRawBufferPointer(rebasing: frame[0..<8]), bigEndian: bigEndianSums, &next)
                    checksum(UnsafeRawBufferPointer(rebasing: frame[24..<frameSize]), bigEndian: bigEndianSums, &next)
                    let page = bigEndian32(frame, 0)
                    guard ownSalts, page != 0, next == (bigEndian32(frame, 16), bigEndian32(frame, 20)) else {
                        brokenInGeneration = ownSalts
                        return true
                    }
                    sums = next
                    frames?(valid, page, bigEndian32(frame, 4))
                    valid += 1
                    if bigEndian32(frame, 4) != 0 { committed = valid }
                    offset += frameSize
                }
                return false
            }
            if stop { break scan }
            if block.count < framesPerBlock * frameSize { break }
        }
        return WALFile(
            size: size, headerValid: true, headerProblem: nil, pageSize: pageSize, salts: salts, validFrames: valid,
            committedFrames: committed, cutFrames: valid - committed + (brokenInGeneration ? 1 : 0))
    }

    /// SQLite's WAL checksum: over 32-bit words taken in pairs, continuing from `sums`.
    static func checksum(_ bytes: UnsafeRawBufferPointer, bigEndian: Bool, _ sums: inout (UInt32, UInt32)) {
        var (s0, s1) = sums
        var i = 0
        while i + 8 <= bytes.count {
            let a = bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)
            let b = bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self)
            s0 = s0 &+ (bigEndian ? UInt32(bigEndian: a) : UInt32(littleEndian: a)) &+ s1
            s1 = s1 &+ (bigEndian ? UInt32(bigEndian: b) : UInt32(littleEndian: b)) &+ s0
            i += 8
        }
        sums = (s0, s1)
    }

    static func bigEndian32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    static func bigEndian32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }
}

/// The wal-index header at the start of a `-shm` file: what the last connection recorded about the
/// WAL it indexed. SQLite keeps two copies (bytes 0-47 and 48-95) written in the host's byte order,
/// then the checkpoint information (`nBackfill`, frames already copied into the main file, at 96).
/// Fields: version 3007000, change counter, an "initialised" flag, the checksum byte order, the page
/// size, `mxFrame` (the last frame of the last commit), the database size, frame checksums, the
/// WAL header's salts as raw bytes (offset 32), and a checksum of the header.
public struct WALIndexHeader: Sendable, Equatable {
    /// The last valid commit frame the index covers.
    public let lastCommitFrame: Int
    /// Frames already copied back into the main file.
    public let backfilledFrames: Int
    /// The WAL header's salt bytes, as recorded.
    public let salts: [UInt8]
    /// The page size recorded.
    public let pageSize: Int

    /// Reads the header of the `-shm` at `path`; nil when the file is absent, short, uninitialised,
    /// in the middle of being rewritten (the two copies differ) or in a layout not recognised: none
    /// of those say anything about the WAL.
    public static func read(path: String) -> WALIndexHeader? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 136), data.count >= 100 else { return nil }
        let bytes = [UInt8](data)
        guard bytes[0..<48] == bytes[48..<96], bytes[12] == 1 else { return nil }
        func word(_ at: Int, littleEndian: Bool) -> UInt32 {
            let b = bytes[at..<(at + 4)].map(UInt32.init)
            return littleEndian
                ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[3] | b[2] << 8 | b[1] << 16 | b[0] << 24
        }
        let little: Bool
        if word(0, littleEndian: true) == WALFile.version {
            little = true
        } else if word(0, littleEndian: false) == WALFile.version {
            little = false
        } else {
            return nil
        }
        let rawPage = little ? Int(bytes[14]) | Int(bytes[15]) << 8 : Int(bytes[15]) | Int(bytes[14]) << 8
        // 65536 does not fit 16 bits: SQLite stores it as (size & 0xff00) | (size >> 16), i.e. 1.
        let pageSize = rawPage == 1 ? 65536 : rawPage
        return WALIndexHeader(
            lastCommitFrame: Int(word(16, littleEndian: little)), backfilledFrames: Int(word(96, littleEndian: little)),
            salts: Array(bytes[32..<40]), pageSize: pageSize)
    }
}
