import Foundation

/// The one JSON object an external plugin reads on stdin when run as `PROGRAM migrate`
/// (Plugins/ManualStrategy/README.md documents every key).
public struct PluginRequest: Codable, Sendable, Equatable {
    /// The source: a private, read-only, self-contained copy (WAL folded in).
    public struct Source: Codable, Sendable, Equatable {
        /// The file's path.
        public var path: String
        /// `Z_METADATA.Z_UUID` (null when not read).
        public var storeUUID: String?
        /// The source's external-data folder (read-only; the host copies referenced files itself).
        public var externalData: String
        /// Every entity of `Z_PRIMARYKEY`, system ones included.
        public var entities: [Entity]
    }

    /// One entity of the source.
    public struct Entity: Codable, Sendable, Equatable {
        /// The name.
        public var name: String
        /// `Z_ENT`.
        public var number: Int
        /// The parent entity's name, null for a root.
        public var parent: String?
        /// The table holding its rows.
        public var table: String?
        /// True for Core Data's own entities (history, CloudKit).
        public var system: Bool
    }

    /// Where to write.
    public struct Destination: Codable, Sendable, Equatable {
        /// The staged main file: create it (a new store) or change it (a merge).
        public var path: String
        /// True for a merge: the file already holds the destination's rows.
        public var exists: Bool
    }

    /// The protocol version (1).
    public var `protocol`: Int
    /// What to read.
    public var source: Source
    /// What to write.
    public var destination: Destination
    /// A private folder the plugin may use (also its working directory and `TMPDIR`).
    public var scratch: String
    /// `--param KEY=VALUE` values.
    public var parameters: [String: String]
}

/// One line of a plugin's stdout (JSON Lines): exactly one of the keys.
public struct PluginMessage: Codable, Sendable, Equatable {
    /// Progress: work done of total.
    public struct Progress: Codable, Sendable, Equatable {
        /// Work done.
        public var done: Int64
        /// Work in all.
        public var total: Int64
    }

    /// The last line: what the plugin did.
    public struct Result: Codable, Sendable, Equatable {
        /// Rows per entity the plugin says the destination holds (compared and reported).
        public var rows: [String: Int]?
    }

    /// A progress report.
    public var progress: Progress?
    /// A sentence for the report's notes.
    public var note: String?
    /// The last message: what was done.
    public var result: Result?
}

/// What a plugin's stdout said, read one line at a time (Plugins/ManualStrategy/README.md): blank
/// lines skipped, every other line exactly one protocol message, nothing after the result line.
/// Holds at most 1,000 notes of 4,096 bytes, whatever the plugin prints.
struct PluginOutput {
    /// The program's name, for the notes.
    let name: String
    /// Notes kept for the report.
    private(set) var notes: [String] = []
    /// The result line, once read.
    private(set) var result: PluginMessage.Result?
    /// Why the output was refused, once it was.
    private(set) var protocolError: String?
    private var lineNumber = 0

    static let maxNotes = 1000
    static let maxNote = 4096

    init(name: String) { self.name = name }

    /// The note cut to `maxNote` bytes (characters could be any size: one may carry a thousand
    /// combining marks), at a scalar boundary.
    static func clip(_ note: String) -> String {
        guard note.utf8.count > maxNote else { return note }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in note.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > maxNote { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    /// Takes one line (without its `\n`); false when it breaks the protocol (the run is then stopped).
    mutating func accept(_ line: Data, progress: (Int64, Int64) -> Void) -> Bool {
        lineNumber += 1
        guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { return true }
        guard result == nil else {
            protocolError = "stdout has more after its result line (line \(lineNumber))"
            return false
        }
        guard let message = try? JSONDecoder().decode(PluginMessage.self, from: line),
            [message.progress != nil, message.note != nil, message.result != nil].filter({ $0 }).count == 1
        else {
            protocolError =
                "stdout line \(lineNumber) is not a protocol message: \(String(decoding: line.prefix(80), as: UTF8.self).debugDescription)"
            return false
        }
        if let note = message.note, notes.count < Self.maxNotes { notes.append("\(name): \(Self.clip(note))") }
        if let value = message.progress { progress(value.done, value.total) }
        if let value = message.result { result = value }
        return true
    }
}
