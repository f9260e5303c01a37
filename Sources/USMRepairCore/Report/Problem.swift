import Foundation

/// One finding about a store or a layout. `code` is stable and documented (README, "Problem codes");
/// `message` is for people and may change.
public struct Problem: Sendable, Equatable, Encodable {
    /// How much a problem matters.
    public enum Severity: String, Sendable, Codable, Comparable {
        /// A fact worth stating that is normal in itself (a clean close leaves no -wal); never fails a check.
        case info
        /// Worth knowing; does not by itself need repair. Fails `check --strict`.
        case warning
        /// An invariant is broken or data is at risk. Fails `check`.
        case error

        private var rank: Int {
            switch self {
            case .info: 0
            case .warning: 1
            case .error: 2
            }
        }

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    /// Stable identifier, e.g. `zmax-behind` (its raw value in JSON).
    public let code: ProblemCode
    /// info, warning or error.
    public let severity: Severity
    /// A sentence for a person.
    public let message: String
    /// The table, file or marker concerned, when there is one.
    @NullEncoded public var subject: String?
    /// How many rows or files are affected, when counted.
    @NullEncoded public var count: Int?
    /// The main file of the store the problem is about (null for a problem of the layout).
    @NullEncoded public var store: String?
    /// True when the user accepted the code (`check --ignore`): still reported, never counted for the exit code.
    public var ignored: Bool

    /// Creates a problem; its severity is the code's.
    public init(_ code: ProblemCode, _ message: String, subject: String? = nil, count: Int? = nil) {
        self.code = code
        severity = code.severity
        self.message = message
        self.subject = subject
        self.count = count
        ignored = false
    }
}
