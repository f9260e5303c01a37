import CZstd
import Dispatch
import Foundation
import Synchronization

/// Compresses a byte stream with Zstandard on several cores while keeping memory flat: the stream
/// is cut into 1 MiB chunks, each compressed on a worker into an independent frame, and a writer
/// thread emits the frames in order. Concatenated frames are one valid `.zst` stream for every
/// decoder (zstd, libarchive, GNU tar). At most `workers + 2` chunks exist at once, so memory does
/// not grow with the input. `append` and `finish` are called from one thread.
final class ParallelZstd {
    /// One chunk being compressed.
    private final class Job: Sendable {
        let done = DispatchSemaphore(value: 0)
        let output = Mutex<Result<Data, USMError>?>(nil)
    }

    /// What the feeding thread and the writer thread share.
    private final class Pipeline: Sendable {
        /// Jobs in stream order; nil marks the end.
        let jobs = Mutex<[Job?]>([])
        let available = DispatchSemaphore(value: 0)
        let slots: DispatchSemaphore
        let failure = Mutex<USMError?>(nil)
        let finished = DispatchSemaphore(value: 0)

        init(slots: Int) { self.slots = DispatchSemaphore(value: slots) }

        func check() throws {
            if let error = failure.withLock({ $0 }) { throw error }
        }
    }

    /// Bytes per chunk (and frame).
    static let chunkSize = 1 << 20

    /// Compression contexts reused across chunks (one per worker at most), so tables are not
    /// allocated anew for every frame.
    private final class ContextPool: Sendable {
        private let free = Mutex<[UInt]>([])

        func take() -> OpaquePointer? {
            if let raw = free.withLock({ $0.popLast() }) { return OpaquePointer(bitPattern: raw) }
            return ZSTD_createCCtx()
        }

        func give(_ context: OpaquePointer) {
            free.withLock { $0.append(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(context)))) }
        }

        deinit {
            for raw in free.withLock({ $0 }) { ZSTD_freeCCtx(OpaquePointer(bitPattern: raw)) }
        }
    }

    private let contexts = ContextPool()

    private let level: Int32
    private let pipeline: Pipeline
    private var buffer: UnsafeMutableRawPointer
    private var filled = 0
    private var ended = false

    /// - Parameters:
    ///   - level: the zstd level (3, zstd's default, as `bsdtar --zstd` writes).
    ///   - workers: cores to compress on.
    ///   - emit: receives compressed frames in order, on the writer thread.
    init(level: Int32 = 3, workers: Int, emit: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void) {
        self.level = level
        let pipeline = Pipeline(slots: max(1, workers) + 2)
        self.pipeline = pipeline
        buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        Thread.detachNewThread {
            while true {
                pipeline.available.wait()
                guard let job = pipeline.jobs.withLock({ $0.removeFirst() }) else { break }
                job.done.wait()
                let result = job.output.withLock { $0! }
                if pipeline.failure.withLock({ $0 == nil }) {
                    do {
                        try result.get().withUnsafeBytes { try emit($0) }
                    } catch let error as USMError {
                        pipeline.failure.withLock { $0 = error }
                    } catch {
                        pipeline.failure.withLock { $0 = .archive(path: "zstd", code: -1, message: "\(error)") }
                    }
                }
                pipeline.slots.signal()
            }
            pipeline.finished.signal()
        }
    }

    deinit {
        end()
        buffer.deallocate()
    }

    /// Adds bytes of the stream.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        try pipeline.check()
        var offset = 0
        while offset < bytes.count {
            let n = min(Self.chunkSize - filled, bytes.count - offset)
            (buffer + filled).copyMemory(from: bytes.baseAddress! + offset, byteCount: n)
            filled += n
            offset += n
            if filled == Self.chunkSize { try submit() }
        }
    }

    /// Compresses what is left, waits until every frame is written, and reports any failure.
    func finish() throws {
        if filled > 0 { try submit() }
        end()
        try pipeline.check()
    }

    private func submit() throws {
        try pipeline.check()
        pipeline.slots.wait()
        // The filled buffer moves into the job without a copy; a fresh one takes its place.
        let chunk = Data(
            bytesNoCopy: buffer, count: filled, deallocator: .custom { pointer, _ in pointer.deallocate() })
        buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        filled = 0
        let job = Job()
        let level = self.level
        let contexts = self.contexts
        pipeline.jobs.withLock { $0.append(job) }
        pipeline.available.signal()
        DispatchQueue.global(qos: .userInitiated).async {
            job.output.withLock { $0 = ParallelZstd.compress(chunk, level: level, contexts: contexts) }
            job.done.signal()
        }
    }

    /// Tells the writer thread the stream is over and waits for it.
    private func end() {
        guard !ended else { return }
        ended = true
        pipeline.jobs.withLock { $0.append(nil) }
        pipeline.available.signal()
        pipeline.finished.wait()
    }

    private static func compress(_ chunk: Data, level: Int32, contexts: ContextPool) -> Result<Data, USMError> {
        guard let context = contexts.take() else {
            return .failure(.archive(path: "zstd", code: -1, message: "out of memory"))
        }
        defer { contexts.give(context) }
        let bound = ZSTD_compressBound(chunk.count)
        var out = Data(count: bound)
        let written = out.withUnsafeMutableBytes { dst in
            chunk.withUnsafeBytes { src in
                ZSTD_compressCCtx(context, dst.baseAddress, bound, src.baseAddress, src.count, level)
            }
        }
        if ZSTD_isError(written) != 0 {
            return .failure(.archive(path: "zstd", code: -1, message: String(cString: ZSTD_getErrorName(written))))
        }
        out.count = written
        return .success(out)
    }
}
