import CArchive
import Foundation

/// Entry names and link targets between our strings and libarchive, byte for byte.
///
/// libarchive converts names between UTF-8 and the thread's locale. This tool never sets a
/// process locale, so that conversion would fail for every non-ASCII name (the pax header writer
/// then crashed on a NULL name when only a UTF-8 form was given). So names are handed over as raw
/// bytes: the pax writer converts them under a UTF-8 thread locale (`ArchiveWriter`), which keeps
/// valid UTF-8 names as they are and writes any other name's bytes with `hdrcharset=BINARY`; zip
/// marks valid UTF-8 names as UTF-8 (its flag bit 11) and stores other names' bytes as they are.
/// Reading takes the raw bytes when libarchive has them and its UTF-8 form otherwise.
enum ArchiveNames {
    /// Sets an entry's path.
    static func setPath(_ entry: OpaquePointer, _ name: String, zip: Bool) {
        let bytes = FileSystemPath.bytes(name)
        if zip, let text = String(validating: bytes, as: UTF8.self) {
            archive_entry_set_pathname_utf8(entry, text)
        } else {
            withNulTerminated(bytes) { archive_entry_copy_pathname(entry, $0) }
        }
    }

    /// Sets a symlink entry's target.
    static func setLink(_ entry: OpaquePointer, _ target: String, zip: Bool) {
        let bytes = FileSystemPath.bytes(target)
        if zip, let text = String(validating: bytes, as: UTF8.self) {
            archive_entry_set_symlink_utf8(entry, text)
        } else {
            withNulTerminated(bytes) { archive_entry_copy_symlink(entry, $0) }
        }
    }

    /// An entry's path as our string: raw bytes first, UTF-8 form second.
    static func path(of entry: OpaquePointer) -> String {
        if let raw = archive_entry_pathname(entry) { return string(raw) }
        if let utf8 = archive_entry_pathname_utf8(entry) { return string(utf8) }
        return ""
    }

    /// A symlink entry's target, nil for other entries.
    static func symlink(of entry: OpaquePointer) -> String? {
        if let raw = archive_entry_symlink(entry) { return string(raw) }
        return archive_entry_symlink_utf8(entry).map(string)
    }

    /// A hard-link entry's target, nil for other entries.
    static func hardlink(of entry: OpaquePointer) -> String? {
        if let raw = archive_entry_hardlink(entry) { return string(raw) }
        return archive_entry_hardlink_utf8(entry).map(string)
    }

    private static func string(_ pointer: UnsafePointer<CChar>) -> String {
        let length = strlen(pointer)
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            FileSystemPath.string(fromBytes: UnsafeBufferPointer(start: $0, count: length))
        }
    }

    private static func withNulTerminated(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> Void) {
        var raw = bytes
        raw.append(0)
        raw.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
