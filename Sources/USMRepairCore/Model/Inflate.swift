import CZlib
import Foundation

/// Raw-DEFLATE decompression (no zlib header), the encoding of `Z_MODELCACHE.Z_CONTENT`.
enum Inflate {
    /// Decompresses `data`, refusing output larger than `limit` bytes (a hostile cache must not
    /// exhaust memory). Returns nil when the data is not valid raw DEFLATE or exceeds the limit.
    static func raw(_ data: Data, limit: Int = 32 << 20) -> Data? {
        guard !data.isEmpty else { return nil }
        var stream = z_stream()
        guard usm_inflate_init_raw(&stream) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }

        var output = Data()
        let chunk = 64 * 1024
        var buffer = [UInt8](repeating: 0, count: chunk)
        var input = [UInt8](data)
        var status: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inPtr in
            stream.next_in = inPtr.baseAddress
            stream.avail_in = uInt(inPtr.count)
            repeat {
                buffer.withUnsafeMutableBufferPointer { outPtr in
                    stream.next_out = outPtr.baseAddress
                    stream.avail_out = uInt(chunk)
                    status = inflate(&stream, Z_NO_FLUSH)
                    let produced = chunk - Int(stream.avail_out)
                    output.append(outPtr.baseAddress!, count: produced)
                }
                if output.count > limit { status = Z_MEM_ERROR }
            } while status == Z_OK && (stream.avail_in > 0 || stream.avail_out == 0)
        }
        return status == Z_STREAM_END ? output : nil
    }
}
