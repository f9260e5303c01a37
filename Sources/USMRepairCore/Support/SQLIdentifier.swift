extension String {
    /// This name as one SQL identifier: wrapped in double quotes with every embedded double quote
    /// doubled, the SQL way. Every table, column, index or trigger name found in a store goes into
    /// SQL through this (GRDB's `quotedDatabaseIdentifier` wraps without doubling, so a name holding
    /// a `"` would end the identifier early).
    public var sqlIdentifier: String {
        "\"" + replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
