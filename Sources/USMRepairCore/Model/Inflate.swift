import CZlib
import Foundation

/// Raw-DEFLATE decompression (no zlib header), the encoding of `Z_MODELCACHE.Z_CONTENT`.
enum Inflate {
    /// Why decompression stopped.
    enum Failure: Error, Equatable {
        /// Not a valid raw DEFLATE stream.
        case invalid
        /// The output would pass the limit.
        case tooLarge
    }

    /// Decompresses `data`, or nil when it is not valid raw DEFLATE or exceeds `limit` bytes.
    static func raw(_ data: Data, limit: Int) -> Data? { try? inflate(data, limit: limit) }

    /// Decompresses `data`, refusing output larger than `limit` bytes (a hostile cache must not
    /// exhaust memory): the input is read in place and the output grows into one buffer, never past
    /// the limit plus one block.
    static func inflate(_ data: Data, limit: Int) throws(Failure) -> Data {
        guard !data.isEmpty else { throw .invalid }
        var stream = z_stream()
        guard usm_inflate_init_raw(&stream) == Z_OK else { throw .invalid }
        defer { inflateEnd(&stream) }

        let chunk = 64 * 1024
        var output = Data()
        output.reserveCapacity(min(limit, max(chunk, data.count * 4)))
        var buffer = [UInt8](repeating: 0, count: chunk)
        var status: Int32 = Z_OK
        var overLimit = false
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            // zlib never writes through next_in; its C declaration just lacks the const.
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            repeat {
                buffer.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(chunk)
                    status = zlibInflate(&stream, Z_NO_FLUSH)
                    let produced = chunk - Int(stream.avail_out)
                    if output.count + produced > limit {
                        overLimit = true
                    } else if let base = out.baseAddress {
                        output.append(base, count: produced)
                    }
                }
            } while !overLimit && status == Z_OK && (stream.avail_in > 0 || stream.avail_out == 0)
        }
        if overLimit { throw .tooLarge }
        guard status == Z_STREAM_END else { throw .invalid }
        return output
    }

    /// zlib's `inflate`, named apart from this enum's own function.
    private static func zlibInflate(_ stream: inout z_stream, _ flush: Int32) -> Int32 { CZlib.inflate(&stream, flush) }
}
