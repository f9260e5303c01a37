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
            let remaining = record.count - offset
            switch serial {
            case 0:
                fields.append(.null)
            case 1...6:
                let width = serial == 5 ? 6 : serial == 6 ? 8 : Int(serial)
                guard width <= remaining, let value = record.signed(offset, width: width) else { return .valuesOverrun }
                fields.append(.integer(value))
                offset += width
            case 7:
                guard 8 <= remaining, let bits = record.signed(offset, width: 8) else { return .valuesOverrun }
                fields.append(.real(Double(bitPattern: UInt64(bitPattern: bits))))
                offset += 8
            case 8:
                fields.append(.integer(0))
            case 9:
                fields.append(.integer(1))
            case 12...:
                let size = (serial - 12) / 2
                guard size <= Int64(remaining) else { return .valuesOverrun }
                let range = offset..<(offset + Int(size))
                fields.append(serial & 1 == 0 ? .blob(range) : .text(range))
                offset += Int(size)
            default:
                return .serialType(serial)
            }
        }
        guard cursor == headerEnd else { return .headerSize }
        guard offset == record.count else { return .valuesShort }
        return nil
    }
}
