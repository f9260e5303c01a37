/// What a long phase is doing, for a person watching (planning's comparison of every object, a
/// build's verification, each piece of `check`'s `integrity_check`): the command binds `sink` to
/// its progress line on stderr (only when stderr is a terminal), the core says where it is with
/// `say`. Nothing is said, and nothing costs, when no sink is bound.
public enum ProgressNote {
    public typealias Sink = @Sendable (String) -> Void

    /// Where notes go while a command runs; nil: nowhere. Boxed, as `ChildProcess.standardErrorSink`
    /// is: an optimised build of Swift 6.3.1 on Linux crashes in `swift_task_localValuePush` when a
    /// task-local holding an optional closure is bound inside another binding (every command of the
    /// release build did, at start-up; `Scripts/smoke-release.sh` catches it).
    @TaskLocal public static var box: Box?

    /// A sink as a class, so the task-local holds a plain reference.
    public final class Box: Sendable {
        /// Receives every note.
        public let sink: Sink

        /// Creates a box that hands each note to `sink`.
        public init(_ sink: @escaping Sink) { self.sink = sink }
    }

    /// Runs `operation` with notes going to `sink` (nowhere when nil).
    public static func withSink<R>(_ sink: Sink?, operation: () throws -> R) rethrows -> R {
        try $box.withValue(sink.map(Box.init), operation: operation)
    }

    /// Says `text` (built only when someone listens).
    public static func say(_ text: @autoclosure () -> String) {
        box?.sink(text())
    }

    /// The sink bound here, for work that runs on other threads (which do not inherit it).
    static var current: Sink {
        guard let box else { return { _ in } }
        return box.sink
    }
}
