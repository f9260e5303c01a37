import Foundation

/// One finding about a store or a layout. `code` is stable and documented (README, "Problem codes");
/// `message` is for people and may change.
public struct Problem: Sendable, Equatable, Encodable {
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
    @NullEncoded public var subject: String?
    /// How many rows or files are affected, when counted.
    @NullEncoded public var count: Int?

    /// Creates a problem.
    public init(_ code: String, _ severity: Severity, _ message: String, subject: String? = nil, count: Int? = nil) {
        self.code = code
        self.severity = severity
        self.message = message
        self.subject = subject
        self.count = count
    }
}
