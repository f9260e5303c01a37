/// Every problem code usm-repair reports, with its severity and a one-line meaning: the registry
/// the README's "Problem codes" table and `check --ignore` validation are built from.
public enum ProblemCode {
    /// One documented code.
    public struct Entry: Sendable {
        public let code: String
        public let severity: Problem.Severity
        public let summary: String
    }

    /// The registry, grouped: store files, SQLite, metadata, entities, relationships, external data, layout.
    public static let entries: [Entry] = [
        .init(code: "wal-missing", severity: .error, summary: "WAL-mode store whose -shm is present but -wal is gone: newest rows probably lost"),
        .init(code: "wal-header-without-wal", severity: .warning, summary: "WAL-mode store with no -wal beside it (clean close, or copied without its -wal)"),
        .init(code: "stray-wal", severity: .warning, summary: "a -wal beside a rollback-journal store"),
        .init(code: "hot-journal", severity: .warning, summary: "a -journal is present: an interrupted write SQLite will roll back"),
        .init(code: "orphan-sidecar", severity: .warning, summary: "-wal or _SUPPORT folder present without the main file"),
        .init(code: "dangling-symlink", severity: .error, summary: "the store's main file is a symlink to nothing"),
        .init(code: "symlink-escapes", severity: .error, summary: "a symlink leads outside the folder given; refused"),
        .init(code: "not-a-file", severity: .error, summary: "the store path is not a regular file"),
        .init(code: "not-found", severity: .error, summary: "a named path does not exist"),
        .init(code: "wrong-kind", severity: .error, summary: "a path is not the kind of file expected"),
        .init(code: "unreadable", severity: .error, summary: "a file could not be read (permissions, I/O)"),
        .init(code: "write-failed", severity: .error, summary: "the private temporary copy could not be written (TMPDIR full or read-only)"),
        .init(code: "not-sqlite", severity: .error, summary: "empty file, random bytes or another format"),
        .init(code: "not-core-data", severity: .error, summary: "SQLite without Z_PRIMARYKEY / Z_METADATA"),
        .init(code: "sqlite-error", severity: .error, summary: "SQLite refused to read the store (corrupt or not a database)"),
        .init(code: "truncated", severity: .error, summary: "the file is shorter than its header declares"),
        .init(code: "integrity", severity: .error, summary: "PRAGMA quick_check / integrity_check failed"),
        .init(code: "metadata-rows", severity: .error, summary: "Z_METADATA does not hold exactly one row"),
        .init(code: "metadata-uuid-missing", severity: .error, summary: "Z_METADATA.Z_UUID is empty"),
        .init(code: "metadata-plist-null", severity: .warning, summary: "Z_METADATA.Z_PLIST is NULL"),
        .init(code: "metadata-plist-malformed", severity: .error, summary: "Z_METADATA.Z_PLIST is not a plist dictionary"),
        .init(code: "ubiquity-metadata-in-local-store", severity: .error, summary: "the local store still carries com.apple.coredata.ubiquity.* keys"),
        .init(code: "entity-table-shape", severity: .error, summary: "an entity table lacks Z_ENT"),
        .init(code: "entity-table-missing", severity: .warning, summary: "a root entity has no table"),
        .init(code: "entity-null", severity: .error, summary: "rows with a NULL Z_ENT"),
        .init(code: "entity-unknown", severity: .error, summary: "rows whose Z_ENT is not in Z_PRIMARYKEY"),
        .init(code: "entity-wrong-table", severity: .error, summary: "rows whose Z_ENT belongs to another hierarchy's table"),
        .init(code: "zmax-behind", severity: .error, summary: "Z_MAX below the largest Z_PK of its hierarchy"),
        .init(code: "dangling-to-one", severity: .error, summary: "a to-one key pointing at no row of its destination"),
        .init(code: "dangling-join-row", severity: .error, summary: "a many-to-many join row pointing at no row"),
        .init(code: "join-entity-unknown", severity: .error, summary: "a join-table column names an entity without a table"),
        .init(code: "external-data-missing", severity: .error, summary: "a 0x02 external-data reference whose file is missing"),
        .init(code: "external-data-orphan", severity: .warning, summary: "files in _EXTERNAL_DATA that no row references"),
        .init(code: "layout-not-found", severity: .warning, summary: "--container holds no UbiquityStoreManager data"),
        .init(code: "marker-malformed", severity: .error, summary: "a StoreUUID/CorruptedUUID marker does not hold a UUID"),
        .init(code: "stale-marker", severity: .warning, summary: "StoreUUID markers of two cloud versions at once"),
        .init(code: "preferences-malformed", severity: .error, summary: "the preferences file is not a plist, or USMCloudEnabledKey is not a boolean"),
        .init(code: "leftover-temp-store", severity: .warning, summary: "MigrationSource.sqlite / CopyMigrationStore.sqlite left by an interrupted migration"),
    ]

    /// Every code.
    public static let all: Set<String> = Set(entries.map(\.code))
}
