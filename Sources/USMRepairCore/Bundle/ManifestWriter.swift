import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes `manifest.json` into a file, streaming `files` and `skipped` from the catalog, so a
/// manifest of 200,000 entries never exists in memory. Keys come in sorted order, one top-level
/// key per line and one file record per line.
enum ManifestWriter {
    /// Writes the manifest for `header` and `catalog` to `url` (a new file in a private folder).
    static func write(_ header: BundleManifest, catalog: BundleCatalog, to url: URL) throws {
        let fd = FileSystemPath.withCString(url.path) { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw USMError.writing(url.path) }
        defer { close(fd) }
        var out = BufferedOutput(fd: fd, path: url.path)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func field(_ key: String, _ value: some Encodable, last: Bool = false) throws {
            out.append("  \"\(key)\": ")
            out.append(try encoder.encode(value))
            out.append(last ? "\n" : ",\n")
            try out.flushIfFull()
        }
        out.append("{\n")
        try field("archiveFormat", header.archiveFormat)
        try field("commandLine", header.commandLine)
        try field("content", header.content)
        try field("createdAt", header.createdAt)
        out.append("  \"files\": [")
        var first = true
        try catalog.forEach { page in
            for entry in page {
                out.append(first ? "\n    " : ",\n    ")
                first = false
                JSONText.appendRecord(entry.record, to: &out)
            }
            try out.flushIfFull()
        }
        out.append(first ? "],\n" : "\n  ],\n")
        try field("format", header.format)
        try field("formatVersion", header.formatVersion)
        try field("host", header.host)
        try field("personalData", header.personalData)
        try field("redaction", NullEncoded(wrappedValue: header.redaction))
        try field("roots", header.roots)
        out.append("  \"skipped\": [")
        first = true
        try catalog.forEachSkipped { page in
            for skip in page {
                out.append(first ? "\n    " : ",\n    ")
                first = false
                out.append(try encoder.encode(skip))
            }
            try out.flushIfFull()
        }
        out.append(first ? "],\n" : "\n  ],\n")
        try field("snapshot", NullEncoded(wrappedValue: header.snapshot))
        try field("status", NullEncoded(wrappedValue: header.status))
        try field("stores", header.stores)
        try field("tool", header.tool)
        try field("totals", header.totals, last: true)
        out.append("}\n")
        try out.flush()
        guard fsync(fd) == 0 || errno == EINVAL else { throw USMError.writing(url.path) }
    }
}

/// Bytes collected and written to a file descriptor in large blocks.
struct BufferedOutput {
    let fd: Int32
    let path: String
    private(set) var buffer = Data()

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
        buffer.reserveCapacity(1 << 20)
    }

    mutating func append(_ text: String) { buffer.append(contentsOf: text.utf8) }
    mutating func append(_ data: Data) { buffer.append(data) }
    mutating func append(byte: UInt8) { buffer.append(byte) }
    mutating func append(bytes: [UInt8]) { buffer.append(contentsOf: bytes) }

    /// Writes out once a MiB has gathered.
    mutating func flushIfFull() throws {
        if buffer.count >= 1 << 20 { try flush() }
    }

    mutating func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { try FileSync.writeAll(fd, $0, path: path) }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// JSON text written by hand where the encoder would cost more than the work (one manifest
/// record per file). Same rules as `JSONEncoder`: UTF-8, `"` `\` and control characters escaped.
enum JSONText {
    /// Appends `"text"` with JSON escapes (gathered, then appended once).
    static func appendString(_ text: String, to out: inout BufferedOutput) {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        bytes.reserveCapacity(text.utf8.count + 2)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                let hex = String(byte, radix: 16)
                bytes += Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        out.append(bytes: bytes)
    }

    private static func appendOptional(_ text: String?, to out: inout BufferedOutput) {
        if let text { appendString(text, to: &out) } else { out.append("null") }
    }

    /// One manifest file record, keys sorted as the encoder sorts them.
    static func appendRecord(_ r: BundleFile, to out: inout BufferedOutput) {
        out.append("{\"kind\":")
        appendString(r.kind, to: &out)
        out.append(",\"linkTarget\":")
        appendOptional(r.linkTarget, to: &out)
        out.append(",\"mode\":")
        appendString(r.mode, to: &out)
        out.append(",\"mtime\":")
        appendString(r.mtime, to: &out)
        out.append(",\"mtimeNanos\":\(r.mtimeNanos),\"path\":")
        appendString(r.path, to: &out)
        out.append(",\"sha256\":")
        appendOptional(r.sha256, to: &out)
        out.append(",\"size\":\(r.size),\"source\":")
        appendOptional(r.source, to: &out)
        out.append(",\"transformed\":")
        appendOptional(r.transformed, to: &out)
        out.append("}")
    }
}
