import CZstd
import Dispatch
import Foundation
import Synchronization

/// Compresses a byte stream with Zstandard on several cores while keeping memory flat: the stream
/// is cut into fixed chunks, each compressed on a worker into an independent frame, and frames are
/// written in order. Concatenated frames are one valid `.zst` stream for every decoder (zstd,
/// libarchive, GNU tar). At most `inFlight` chunks exist at once, so memory does not grow with
/// the input. Used from one thread: `append` and `finish` are not reentrant.
final class ParallelZstd {
    /// One chunk being compressed.
    private final class Job: Sendable {
        let done = DispatchSemaphore(value: 0)
        let output = Mutex<Result<Data, USMError>?>(nil)
    }

    /// Bytes per chunk (and frame).
    static let chunkSize = 1 << 20

    private let level: Int32
    private let inFlight: Int
    private let emit: (UnsafeRawBufferPointer) throws -> Void
    private var buffer: UnsafeMutableRawPointer
    private var filled = 0
    private var pending: [Job] = []

    /// - Parameters:
    ///   - level: the zstd level (3, zstd's default, as `bsdtar --zstd` writes).
    ///   - workers: cores to use.
    ///   - emit: receives compressed frames in order.
    init(level: Int32 = 3, workers: Int, emit: @escaping (UnsafeRawBufferPointer) throws -> Void) {
        self.level = level
        inFlight = max(1, workers) + 1
        self.emit = emit
        buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
    }

    deinit {
        for job in pending { job.done.wait() }
        buffer.deallocate()
    }

    /// Adds bytes of the stream.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = min(Self.chunkSize - filled, bytes.count - offset)
            (buffer + filled).copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            filled += n
            offset += n
            if filled == Self.chunkSize { try submit() }
        }
    }

    /// Compresses what is left and writes every remaining frame.
    func finish() throws {
        if filled > 0 { try submit() }
        while !pending.isEmpty { try drainOldest() }
    }

    private func submit() throws {
        if pending.count >= inFlight { try drainOldest() }
        let chunk = Data(bytes: buffer, count: filled)
        filled = 0
        let job = Job()
        let level = self.level
        pending.append(job)
        DispatchQueue.global(qos: .userInitiated).async {
            job.output.withLock { $0 = ParallelZstd.compress(chunk, level: level) }
            job.done.signal()
        }
    }

    private func drainOldest() throws {
        let job = pending.removeFirst()
        job.done.wait()
        let result = job.output.withLock { $0! }
        let frame = try result.get()
        try frame.withUnsafeBytes { try emit($0) }
    }

    private static func compress(_ chunk: Data, level: Int32) -> Result<Data, USMError> {
        let bound = ZSTD_compressBound(chunk.count)
        var out = Data(count: bound)
        let written = out.withUnsafeMutableBytes { dst in
            chunk.withUnsafeBytes { src in
                ZSTD_compress(dst.baseAddress, bound, src.baseAddress, src.count, level)
            }
        }
        if ZSTD_isError(written) != 0 {
            return .failure(.archive(path: "zstd", code: -1, message: String(cString: ZSTD_getErrorName(written))))
        }
        out.count = written
        return .success(out)
    }
}
