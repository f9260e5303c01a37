/// One column value of a decoded record. Text and blobs are ranges into the record's bytes, so
/// decoding copies nothing; the caller binds them before the bytes go away.
enum FieldValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(Range<Int>)
    case blob(Range<Int>)

    /// SQLite's name for the storage class (for reports).
    var storageClass: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}

/// SQLite's record format (file format section 2.1): a header of serial types, then the values.
/// Decoding is strict, because salvage must never invent a row: the header must parse to exactly
/// its declared size, no serial type may be a reserved one (10, 11), and the values must fill the
/// record to its last byte. A record that was partly overwritten almost never passes all three.
enum RecordDecoder {
    /// Why a record was refused (for reports and the fuzz oracle).
    enum Defect: Equatable, Sendable {
        case headerSize
        case serialType(Int64)
        case tooManyColumns(Int)
        case valuesOverrun
        case valuesShort
    }

    /// Decodes `record` into `fields` (emptied first, capacity kept), at most `maxColumns` values.
    /// - Returns: nil on success, else why the record is not one.
    @discardableResult
    static func decode(_ record: ByteView, into fields: inout [FieldValue], maxColumns: Int) -> Defect? {
        decode(record, total: record.count, into: &fields, maxColumns: maxColumns)
    }

    /// Decodes the part of a record of `total` bytes that lies on its page, `local`, when the rest
    /// (on overflow pages) cannot be read. The header must lie within `local` and the values it
    /// declares must fill exactly `total` bytes, as for a whole record; the values wholly within
    /// `local` are decoded, the others are given by their storage class alone (integers and reals
    /// as NULL, text and blobs as empty ranges inside `local`): enough to check a row's shape
    /// against a table, never to store it.
    /// - Returns: nil when it may be the start of such a record, else why not.
    static func decodeLocal(
        _ local: ByteView, total: Int, into fields: inout [FieldValue], maxColumns: Int
    ) -> Defect? {
        guard total >= local.count else { return .valuesOverrun }
        return decode(local, total: total, into: &fields, maxColumns: maxColumns)
    }

    /// The decoder of both: `record` holds the first bytes of a record of `total` bytes.
    private static func decode(
        _ record: ByteView, total: Int, into fields: inout [FieldValue], maxColumns: Int
    ) -> Defect? {
        fields.removeAll(keepingCapacity: true)
        guard let header = record.varint(0), header.value >= Int64(header.length), header.value <= Int64(record.count)
        else {
            return .headerSize
        }
        let headerEnd = Int(header.value)
        var cursor = header.length
        var offset = headerEnd
        while cursor < headerEnd {
            guard let type = record.varint(cursor), cursor + type.length <= headerEnd else { return .headerSize }
            cursor += type.length
            guard fields.count < maxColumns else { return .tooManyColumns(fields.count + 1) }
            let serial = type.value
            let remaining = total - offset
            switch serial {
            case 0:
                fields.append(.null)
            case 1...6:
                let width = serial == 5 ? 6 : serial == 6 ? 8 : Int(serial)
                guard width <= remaining else { return .valuesOverrun }
                if offset + width > record.count {
                    fields.append(.null)  // on an overflow page that cannot be read
                } else {
                    guard let value = record.signed(offset, width: width) else { return .valuesOverrun }
                    fields.append(.integer(value))
                }
                offset += width
            case 7:
                guard 8 <= remaining else { return .valuesOverrun }
                if offset + 8 > record.count {
                    fields.append(.null)
                } else {
                    guard let bits = record.signed(offset, width: 8) else { return .valuesOverrun }
                    fields.append(.real(Double(bitPattern: UInt64(bitPattern: bits))))
                }
                offset += 8
            case 8:
                fields.append(.integer(0))
            case 9:
                fields.append(.integer(1))
            case 12...:
                let size = (serial - 12) / 2
                guard size <= Int64(remaining) else { return .valuesOverrun }
                let end = offset + Int(size)
                // A value not wholly on the page: an empty range, never past the bytes there are.
                let range = end <= record.count ? offset..<end : min(offset, record.count)..<min(offset, record.count)
                fields.append(serial & 1 == 0 ? .blob(range) : .text(range))
                offset = end
            default:
                return .serialType(serial)
            }
        }
        guard cursor == headerEnd else { return .headerSize }
        guard offset == total else { return .valuesShort }
        return nil
    }
}
