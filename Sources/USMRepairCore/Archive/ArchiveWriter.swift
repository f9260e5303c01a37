import CArchive
import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Streams entries into a new archive file through libarchive, hashing the archive's bytes as
/// they are written (for the `.sha256` sidecar) and stopping once it passes a size limit.
/// A libarchive handle is not thread-safe: use one writer from one task.
final class ArchiveWriter {
    /// The archive file: every byte that stays in it passes here (limit, write, hash). Shared
    /// with the parallel compressor's writer thread.
    private final class OutputFile: Sendable {
        let fd: Int32
        let path: String
        let limit: Int64?
        private let state = Mutex<(hasher: SHA256, written: Int64)>((SHA256(), 0))

        init(fd: Int32, path: String, limit: Int64?) {
            self.fd = fd
            self.path = path
            self.limit = limit
        }

        func emit(_ bytes: UnsafeRawBufferPointer) throws {
            try state.withLock { state in
                if let limit, state.written + Int64(bytes.count) > limit {
                    throw USMError.tooLarge(
                        estimate: limit + 1, limit: limit,
                        detail: "the compressed bundle passed the limit while being written")
                }
                var done = 0
                while done < bytes.count {
                    let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw USMError.writing(path)
                    }
                    done += n
                }
                state.hasher.update(bufferPointer: bytes)
                state.written += Int64(bytes.count)
            }
        }

        var result: (bytes: Int64, sha256: String) {
            state.withLock { ($0.written, $0.hasher.finalize().hex) }
        }
    }

    /// What the write callback needs, reachable from C through an unmanaged pointer.
    private final class Sink {
        let output: OutputFile
        var errorText: String?
        /// The error that stopped the output, kept whole (out of space and too large stay what they are).
        var error: USMError?
        /// Set for tar.zst: libarchive writes plain tar and this compresses it on several cores.
        var zstd: ParallelZstd?
        init(fd: Int32, path: String, limit: Int64?) {
            output = OutputFile(fd: fd, path: path, limit: limit)
        }

        var fd: Int32 { output.fd }

        /// What libarchive hands over: compressed already, or plain tar for the parallel compressor.
        func accept(_ bytes: UnsafeRawBufferPointer) -> Bool {
            do {
                if let zstd { try zstd.append(bytes) } else { try output.emit(bytes) }
                return true
            } catch let error as USMError {
                if errorText == nil { errorText = error.message }
                if self.error == nil { self.error = error }
                return false
            } catch {
                errorText = "\(error)"
                return false
            }
        }
    }

    private let handle: OpaquePointer
    /// A UTF-8 character-type locale the headers are written under (see `init`); nil when the
    /// system has none, and every pax header then says `hdrcharset=BINARY`.
    private let headerLocale: locale_t?
    private let sink: Sink
    private let format: ArchiveFormat
    private let sinkRef: Unmanaged<Sink>
    /// The archive file being written.
    let path: String
    private var finished = false

    /// Bytes read from disk per block.
    static let blockSize = 1 << 20

    /// Creates `path` (which must not exist) and opens it for writing in `format`.
    convenience init(path: String, format: ArchiveFormat, limit: Int64?, threads: Int, zstdLevel: Int32 = 3) throws {
        let fd = FileSystemPath.withCString(path) {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw USMError.writing(path) }
        try self.init(fd: fd, path: path, format: format, limit: limit, threads: threads, zstdLevel: zstdLevel)
    }

    /// Writes the archive into `fd`, a new file open for writing at `path` (a scratch item the
    /// caller made); the writer closes it. `zstdLevel`: the level of `.tarZstd` (3, zstd's default).
    init(fd: Int32, path: String, format: ArchiveFormat, limit: Int64?, threads: Int, zstdLevel: Int32 = 3) throws {
        self.path = path
        self.format = format
        sink = Sink(fd: fd, path: path, limit: limit)
        sinkRef = Unmanaged.passRetained(sink)
        // Names go into pax headers as UTF-8, the standard's own charset, which every tar reads:
        // libarchive converts them from the thread's locale, so headers are written under a
        // UTF-8 one (this tool never sets a process locale; in the C locale every non-ASCII name
        // would fail). A name that is not valid UTF-8 then fails that conversion alone, and
        // libarchive writes its exact bytes with pax's `hdrcharset=BINARY` for that entry only
        // (GNU tar warns once about the keyword it does not know, for that entry). Without a
        // UTF-8 locale, every name goes as bytes with `hdrcharset=BINARY`.
        headerLocale = format == .zip ? nil : Self.utf8Locale()
        guard let h = archive_write_new() else {
            close(fd)
            sinkRef.release()
            if let headerLocale { freelocale(headerLocale) }
            throw USMError.archive(path: path, code: ARCHIVE_FATAL, message: "archive_write_new failed")
        }
        handle = h
        // From here on deinit frees the handle, closes the file and releases the sink.
        let r = format.configure(h)
        if format == .tarZstd {
            // Plain pax tar from libarchive, compressed by our own frame-parallel zstd: all cores,
            // a few MiB of memory whatever the input. The tar comes in large blocks, not
            // libarchive's default 10 KiB.
            archive_write_set_bytes_per_block(h, Int32(ParallelZstd.chunkSize))
            let output = sink.output
            sink.zstd = ParallelZstd(level: zstdLevel, workers: threads) { bytes in try output.emit(bytes) }
        }
        if r < ARCHIVE_WARN {
            throw USMError.archive(path: path, code: r, message: Self.errorString(h))
        }
        if format != .zip, headerLocale == nil {
            let option = archive_write_set_format_option(h, "pax", "hdrcharset", "BINARY")
            if option < ARCHIVE_WARN { throw USMError.archive(path: path, code: option, message: Self.errorString(h)) }
        }
        archive_write_set_bytes_in_last_block(h, 1)
        let opened = archive_write_open2(
            h, sinkRef.toOpaque(), nil,
            { _, context, buffer, length in
                guard let context, let buffer else { return -1 }
                let sink = Unmanaged<Sink>.fromOpaque(context).takeUnretainedValue()
                return sink.accept(UnsafeRawBufferPointer(start: buffer, count: length)) ? length : -1
            }, nil, nil)
        if opened != ARCHIVE_OK {
            throw USMError.archive(path: path, code: opened, message: Self.errorString(h))
        }
    }

    deinit {
        if let headerLocale { freelocale(headerLocale) }
        if !finished {
            archive_write_free(handle)
            // Stop the compressor's writer thread before its file descriptor is closed.
            sink.zstd = nil
            close(sink.fd)
        }
        sinkRef.release()
    }

    /// Adds a directory entry.
    func addDirectory(_ name: String, mode: UInt32, mtime: FileTime) throws {
        try writeHeader(name: name, type: USM_AE_IFDIR, mode: mode, size: 0, mtime: mtime, link: nil)
    }

    /// Adds a symlink entry holding `target` as it is (never followed).
    func addSymlink(_ name: String, target: String, mtime: FileTime) throws {
        try writeHeader(name: name, type: USM_AE_IFLNK, mode: 0o777, size: 0, mtime: mtime, link: target)
    }

    /// Adds a file whose content is `data` (the manifest, redacted stand-ins).
    func addData(_ name: String, _ data: Data, mode: UInt32, mtime: FileTime) throws {
        try writeHeader(name: name, type: USM_AE_IFREG, mode: mode, size: Int64(data.count), mtime: mtime, link: nil)
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = archive_write_data(handle, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { throw failure() }
                offset += n
            }
        }
    }

    /// Adds the regular file at `source`, streamed in blocks; the entry declares `size` bytes and
    /// exactly that many are written (a file that grew or shrank meanwhile is an error).
    /// - Returns: the SHA-256 of the bytes written, in hex, when `hashing`.
    @discardableResult
    func addFile(
        _ name: String, source: String, size: Int64, mode: UInt32, mtime: FileTime, hashing: Bool = true,
        progress: (Int64) -> Void = { _ in }
    ) throws -> String? {
        let fd = FileSystemPath.withCString(source) { open($0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { throw USMError.unreadable(path: source, reason: errnoDescription()) }
        defer { close(fd) }
        try writeHeader(name: name, type: USM_AE_IFREG, mode: mode, size: size, mtime: mtime, link: nil)
        var hasher: SHA256? = hashing ? SHA256() : nil
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.blockSize, alignment: 16)
        defer { buffer.deallocate() }
        var remaining = size
        while remaining > 0 {
            let n = read(fd, buffer, Int(min(Int64(Self.blockSize), remaining)))
            if n < 0 {
                if errno == EINTR { continue }
                throw USMError.unreadable(path: source, reason: errnoDescription())
            }
            if n == 0 { throw USMError.unreadable(path: source, reason: "the file shrank while it was being archived") }
            hasher?.update(bufferPointer: UnsafeRawBufferPointer(start: buffer, count: n))
            var offset = 0
            while offset < n {
                let w = archive_write_data(handle, buffer + offset, n - offset)
                if w < 0 { throw failure() }
                offset += w
            }
            remaining -= Int64(n)
            progress(Int64(n))
        }
        return hasher?.finalize().hex
    }

    /// Closes the archive, fsyncs it, and returns its size and SHA-256.
    func finish() throws -> (bytes: Int64, sha256: String) {
        let r = archive_write_close(handle)
        if r != ARCHIVE_OK { throw failure() }
        archive_write_free(handle)
        finished = true
        do { try sink.zstd?.finish() } catch {
            close(sink.fd)
            if let error = error as? USMError {
                if sink.errorText == nil { sink.errorText = error.message }
                if sink.error == nil { sink.error = error }
            }
            throw failure()
        }
        let synced = fsync(sink.fd) == 0
        let code = errno
        close(sink.fd)
        guard synced else { throw USMError.writing(path, errno: code) }
        return sink.output.result
    }

    private func writeHeader(name: String, type: UInt32, mode: UInt32, size: Int64, mtime: FileTime, link: String?)
        throws
    {
        guard let entry = archive_entry_new() else {
            throw USMError.archive(path: path, code: ARCHIVE_FATAL, message: "out of memory")
        }
        defer { archive_entry_free(entry) }
        ArchiveNames.setPath(entry, name, zip: format == .zip)
        archive_entry_set_filetype(entry, type)
        archive_entry_set_perm(entry, mode_t(mode & 0o7777))
        archive_entry_set_mtime(entry, time_t(mtime.seconds), Int(mtime.nanoseconds))
        if type == USM_AE_IFREG { archive_entry_set_size(entry, la_int64_t(size)) }
        if let link { ArchiveNames.setLink(entry, link, zip: format == .zip) }
        let previous = headerLocale.map { uselocale($0) }
        defer { if let previous { uselocale(previous) } }
        let r = archive_write_header(handle, entry)
        if r < ARCHIVE_WARN { throw failure() }
    }

    /// A new UTF-8 character-type locale, nil when the system has none.
    private static func utf8Locale() -> locale_t? {
        for name in ["C.UTF-8", "C.utf8", "en_US.UTF-8", "UTF-8"] {
            if let locale = newlocale(LC_CTYPE_MASK, name, nil) { return locale }
        }
        return nil
    }

    private func failure() -> USMError {
        switch sink.error {
        case let error?:
            if case .outOfSpace = error { return error }
            if case .tooLarge = error { return error }
        case nil: break
        }
        if let text = sink.errorText {
            return USMError.archive(path: path, code: ARCHIVE_FATAL, message: text)
        }
        return USMError.archive(path: path, code: archive_errno(handle), message: Self.errorString(handle))
    }

    static func errorString(_ handle: OpaquePointer) -> String {
        archive_error_string(handle).map { String(cString: $0) } ?? "unknown libarchive error"
    }
}
