import Foundation

/// The one JSON style of every report and manifest: pretty-printed, sorted keys, slashes as they are.
public enum JSONOutput {
    /// Encodes `value` as text.
    public static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try data(value), as: UTF8.self)
    }

    /// Encodes `value` as bytes.
    public static func data(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }
}
