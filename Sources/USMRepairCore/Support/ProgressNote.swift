/// What a long phase is doing, for a person watching (planning's comparison of every object, a
/// build's verification, each piece of `check`'s `integrity_check`): the command binds `sink` to
/// its progress line on stderr (only when stderr is a terminal), the core says where it is with
/// `say`. Nothing is said, and nothing costs, when no sink is bound.
public enum ProgressNote {
    public typealias Sink = @Sendable (String) -> Void

    /// Where notes go while a command runs; nil: nowhere.
    @TaskLocal public static var sink: Sink?

    /// Says `text` (built only when someone listens).
    public static func say(_ text: @autoclosure () -> String) {
        sink?(text())
    }

    /// The sink bound here, for work that runs on other threads (which do not inherit it).
    static var current: Sink { sink ?? { _ in } }
}
