import USMRepairCore

/// The migration strategies built into the executable, and the engine the operations build stores with.
enum BuiltInStrategies {
    /// Builds a staged store for a plan's `build` step. Nil until the migration engine is wired in:
    /// plans that need it then fail before changing anything.
    static let builder: PlanExecutor.Builder? = nil
}
