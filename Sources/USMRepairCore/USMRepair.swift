/// Facts about the tool itself.
public enum USMRepair {
    /// The release version, printed by `--version` and recorded in bundles.
    public static let version = "0.1.0"
}
