import Foundation

/// One finding about a store or a layout. `code` is stable and documented (README, "Problem codes");
/// `message` is for people and may change.
public struct Problem: Sendable, Equatable, Codable {
    /// How much a problem matters.
    public enum Severity: String, Sendable, Codable, Comparable {
        /// Worth knowing; does not by itself need repair.
        case warning
        /// An invariant is broken or data is at risk.
        case error

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs == .warning && rhs == .error }
    }

    /// Stable identifier, e.g. `zmax-behind`.
    public let code: String
    /// error or warning.
    public let severity: Severity
    /// A sentence for a person.
    public let message: String
    /// The table, file or marker concerned, when there is one.
    public let subject: String?
    /// How many rows or files are affected, when counted.
    public let count: Int?

    /// Creates a problem.
    public init(_ code: String, _ severity: Severity, _ message: String, subject: String? = nil, count: Int? = nil) {
        self.code = code
        self.severity = severity
        self.message = message
        self.subject = subject
        self.count = count
    }

    enum CodingKeys: String, CodingKey { case code, severity, message, subject, count }

    /// Encodes every key, `null` included, so the JSON shape never varies.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(code, forKey: .code)
        try c.encode(severity, forKey: .severity)
        try c.encode(message, forKey: .message)
        try c.encode(subject, forKey: .subject)
        try c.encode(count, forKey: .count)
    }
}
