import Foundation

/// SHA-256 of a file, streamed (for a recipe's identity in the report, and a plugin's source copy).
public enum FileDigest {
    /// The hex SHA-256 of the file at `url`.
    public static func sha256(of url: URL) throws -> String {
        try FileCopy.sha256(of: url.path).sha256
    }
}
