import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every suite carries `.timed`: each test case's own duration, from the start to the end of its body,
/// is appended to the file named by `USM_TEST_TIMES` (nothing when unset), one line per case:
/// `seconds<TAB>test name<TAB>file:line`. Scripts/slowest-tests.sh sums a test's cases and prints the
/// slowest. Swift Testing's own "passed after N seconds" is useless here: in a parallel run the
/// events of ended tests wait behind the tests still holding the cooperative threads, so every
/// test seemed to last the whole run. Here the waits before a body starts are excluded; contention
/// for the cores while it runs is not (a measure of where the time goes, not an exact cost).
public struct TimedTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard let path = ProcessInfo.processInfo.environment["USM_TEST_TIMES"], !path.isEmpty else {
            return try await function()
        }
        let clock = ContinuousClock()
        let start = clock.now
        defer {
            let elapsed = start.duration(to: clock.now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let location = "\(test.sourceLocation.fileID):\(test.sourceLocation.line)"
            let name = (test.displayName ?? test.name).replacingOccurrences(of: "\t", with: " ")
                .replacingOccurrences(of: "\n", with: " ")
            Self.append(String(format: "%.3f", seconds) + "\t\(name)\t\(location)\n", to: path)
        }
        try await function()
    }

    /// One `write` of one short line with O_APPEND: lines of parallel tests do not interleave.
    private static func append(_ line: String, to path: String) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

extension Trait where Self == TimedTrait {
    /// Records each test case's own duration (TimedTrait).
    public static var timed: Self { TimedTrait() }
}
