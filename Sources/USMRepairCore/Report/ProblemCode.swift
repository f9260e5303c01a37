/// Every problem code usm-repair reports, with its severity and a one-line meaning: the registry
/// the README's "Problem codes" table, `check --ignore` validation and every `Problem` are built
/// from. The raw value is the stable code printed in text and JSON.
public enum ProblemCode: String, Sendable, CaseIterable, Codable {
    case walMissing = "wal-missing"
    case walHeaderWithoutWal = "wal-header-without-wal"
    case strayWal = "stray-wal"
    case hotJournal = "hot-journal"
    case orphanSidecar = "orphan-sidecar"
    case danglingSymlink = "dangling-symlink"
    case symlinkEscapes = "symlink-escapes"
    case notAFile = "not-a-file"
    case notFound = "not-found"
    case wrongKind = "wrong-kind"
    case unreadable = "unreadable"
    case writeFailed = "write-failed"
    case notSqlite = "not-sqlite"
    case notCoreData = "not-core-data"
    case sqliteError = "sqlite-error"
    case truncated = "truncated"
    case integrity = "integrity"
    case metadataRows = "metadata-rows"
    case metadataUuidMissing = "metadata-uuid-missing"
    case metadataPlistNull = "metadata-plist-null"
    case metadataPlistMalformed = "metadata-plist-malformed"
    case ubiquityMetadataInLocalStore = "ubiquity-metadata-in-local-store"
    case ubiquityTablesInLocalStore = "ubiquity-tables-in-local-store"
    case entityTableShape = "entity-table-shape"
    case entityTableMissing = "entity-table-missing"
    case entityNull = "entity-null"
    case entityUnknown = "entity-unknown"
    case entityWrongTable = "entity-wrong-table"
    case zmaxBehind = "zmax-behind"
    case danglingToOne = "dangling-to-one"
    case danglingJoinRow = "dangling-join-row"
    case joinEntityUnknown = "join-entity-unknown"
    case externalDataMissing = "external-data-missing"
    case externalDataOrphan = "external-data-orphan"
    case layoutNotFound = "layout-not-found"
    case markerMalformed = "marker-malformed"
    case staleMarker = "stale-marker"
    case preferencesMalformed = "preferences-malformed"
    case leftoverTempStore = "leftover-temp-store"
    case markerEmpty = "marker-empty"
    case markerTrailingNewline = "marker-trailing-newline"
    case markerVersionIgnored = "marker-version-ignored"
    case activeStoreMarkedCorrupt = "active-store-marked-corrupt"
    case corruptionMarkerIgnored = "corruption-marker-ignored"
    case cachedUUIDStale = "cached-uuid-stale"
    case cachedUUIDOtherVersion = "cached-uuid-other-version"
    case cachedUUIDMalformed = "cached-uuid-malformed"
    case cachedUUIDAmbiguous = "cached-uuid-ambiguous"
    case cachedUUIDSeveralKeys = "cached-uuid-several-keys"
    case cachedUUIDWithoutMarker = "cached-uuid-without-marker"
    case dataElsewhere = "data-elsewhere"
    case nominalStoreFile = "nominal-store-file"
    case severalCopies = "several-copies"
    case seedLosesWALFrames = "seed-loses-wal-frames"
    case seedCopySidecar = "seed-copy-sidecar"
    case externalDataSize = "external-data-size"
    case cloudContainerMissing = "cloud-container-missing"
    case cloudContainerUnconfirmed = "cloud-container-unconfirmed"
    case interruptedOperation = "interrupted-operation"
    case untrustedOperation = "untrusted-operation"
    case walInvalid = "wal-invalid"
    case walCutTransaction = "wal-cut-transaction"
    case walMismatch = "wal-mismatch"
    case bookkeepingValue = "bookkeeping-value"
    case entitySuperCycle = "entity-super-cycle"
    case entitySuperUnknown = "entity-super-unknown"
    case entityTableUnlisted = "entity-table-unlisted"
    case metadataPlistTooLarge = "metadata-plist-too-large"
    case modelCacheTooLarge = "model-cache-too-large"
    case tooManyEntities = "too-many-entities"
    case undecodableName = "undecodable-name"
    case duplicateObjects = "duplicate-objects"
    case hostileSchema = "hostile-schema"
    case storeInUse = "store-in-use"

    /// How much a problem of this kind matters.
    public var severity: Problem.Severity {
        switch self {
        case .walMissing, .danglingSymlink, .symlinkEscapes, .notAFile, .notFound, .wrongKind, .unreadable,
            .writeFailed, .notSqlite, .notCoreData, .sqliteError, .truncated, .integrity, .metadataRows,
            .metadataUuidMissing, .metadataPlistMalformed, .ubiquityMetadataInLocalStore, .entityTableShape,
            .entityNull, .entityUnknown, .entityWrongTable, .zmaxBehind, .danglingToOne, .danglingJoinRow,
            .joinEntityUnknown, .externalDataMissing, .externalDataSize, .markerMalformed, .preferencesMalformed,
            .markerEmpty, .markerTrailingNewline, .activeStoreMarkedCorrupt, .cachedUUIDStale, .cachedUUIDMalformed,
            .nominalStoreFile, .seedLosesWALFrames,
            .interruptedOperation, .untrustedOperation:
            .error
        case .walInvalid, .walCutTransaction, .walMismatch, .bookkeepingValue, .entitySuperCycle, .entitySuperUnknown,
            .entityTableUnlisted, .metadataPlistTooLarge, .tooManyEntities, .undecodableName, .hostileSchema:
            .error
        case .strayWal, .hotJournal, .orphanSidecar, .metadataPlistNull,
            .entityTableMissing, .externalDataOrphan, .layoutNotFound, .staleMarker, .leftoverTempStore,
            .modelCacheTooLarge,
            .markerVersionIgnored, .corruptionMarkerIgnored, .cachedUUIDOtherVersion, .cachedUUIDAmbiguous,
            .severalCopies,
            .cloudContainerUnconfirmed, .cachedUUIDWithoutMarker, .dataElsewhere, .seedCopySidecar,
            .ubiquityTablesInLocalStore, .duplicateObjects, .storeInUse:
            .warning
        case .walHeaderWithoutWal, .cloudContainerMissing, .cachedUUIDSeveralKeys:
            .info
        }
    }

    /// The exit code a reported problem of this kind calls for when it is counted: a marker or
    /// preferences file holding garbage is bad input (2); any other error is "problems found" (1).
    public var exitStatus: ExitStatus {
        switch self {
        case .markerMalformed, .markerEmpty, .markerTrailingNewline, .preferencesMalformed, .undecodableName,
            .hostileSchema:
            .badInput
        default: severity == .error ? .problemsFound : .ok
        }
    }

    /// One line for the README's table and `--help`.
    public var summary: String {
        switch self {
        case .walMissing: "WAL-mode store whose -shm is present but -wal is gone: newest rows probably lost"
        case .walHeaderWithoutWal:
            "WAL-mode store with no -wal beside it: what every clean close leaves (or a copy that left its -wal behind)"
        case .strayWal: "a -wal beside a rollback-journal store"
        case .hotJournal: "a -journal is present: an interrupted write SQLite will roll back"
        case .orphanSidecar: "-wal or _SUPPORT folder present without the main file"
        case .danglingSymlink: "the store's main file is a symlink to nothing"
        case .symlinkEscapes: "a symlink leads outside the folder given; refused"
        case .notAFile: "the store path is not a regular file"
        case .notFound: "a named path does not exist"
        case .wrongKind: "a path is not the kind of file expected"
        case .unreadable: "a file could not be read (permissions, I/O)"
        case .writeFailed: "the private temporary copy could not be written (TMPDIR full or read-only)"
        case .notSqlite: "empty file, random bytes or another format"
        case .notCoreData: "SQLite without Z_PRIMARYKEY / Z_METADATA"
        case .sqliteError: "SQLite refused to read the store (corrupt or not a database)"
        case .truncated: "the file is shorter than its header declares"
        case .integrity: "PRAGMA quick_check / integrity_check failed"
        case .metadataRows: "Z_METADATA does not hold exactly one row"
        case .metadataUuidMissing: "Z_METADATA.Z_UUID is empty"
        case .metadataPlistNull: "Z_METADATA.Z_PLIST is NULL"
        case .metadataPlistMalformed: "Z_METADATA.Z_PLIST is not a plist dictionary"
        case .ubiquityMetadataInLocalStore: "the local store still carries com.apple.coredata.ubiquity.* keys"
        case .ubiquityTablesInLocalStore:
            "the local store holds Core Data's iCloud bookkeeping tables (Y_UBMETA, Y_UBRANGE, Y_UBKVS)"
        case .entityTableShape:
            "an entity table lacks Z_PK or Z_ENT (left out of the checks that need them; the others go on)"
        case .entityTableMissing: "a root entity has no table"
        case .entityNull: "rows with a NULL Z_ENT"
        case .entityUnknown: "rows whose Z_ENT is not in Z_PRIMARYKEY"
        case .entityWrongTable: "rows whose Z_ENT belongs to another hierarchy's table"
        case .zmaxBehind: "Z_MAX below the largest Z_PK of its hierarchy"
        case .danglingToOne: "a to-one key pointing at no row of its destination"
        case .danglingJoinRow: "a many-to-many join row pointing at no row"
        case .joinEntityUnknown: "a join-table column names an entity without a table"
        case .externalDataMissing:
            "a reference to a file beside the store whose file is missing: 0x02 (external storage, in _EXTERNAL_DATA) or 0x03 (a file-backed future, in _FBF)"
        case .externalDataSize: "a 0x03 file-backed future whose file in _FBF is not the size the reference records"
        case .externalDataOrphan: "files in _EXTERNAL_DATA or _FBF that no row references"
        case .layoutNotFound: "--container holds no UbiquityStoreManager data"
        case .markerMalformed:
            "a marker does not hold 36 upper-case characters of a UUID (lower case, garbage, not a file)"
        case .staleMarker:
            "a StoreUUID marker of a lower version beside the active one: the app falls back to it when the active one goes (E8)"
        case .preferencesMalformed:
            "the preferences file is not a plist, USMCloudEnabledKey is not a boolean, or a cached StoreUUID key's path is not plain"
        case .markerEmpty: "a StoreUUID/CorruptedUUID marker is empty: the app reads the store name \"\" (E12)"
        case .markerTrailingNewline:
            "a marker holds a UUID followed by a newline or spaces: the app names a different, empty store (E12)"
        case .markerVersionIgnored: "a marker of a cloud version above 1: no device reads it, nothing removes it"
        case .activeStoreMarkedCorrupt:
            "the corruption marker names the active store: healthy devices rebuild it 30 s after launch (E9)"
        case .corruptionMarkerIgnored:
            "a corruption marker naming another store or of an older version: ignored and never removed (E10)"
        case .cachedUUIDStale:
            "the preferences' cached StoreUUID differs from the marker: the app loads the cached store first (E5)"
        case .cachedUUIDOtherVersion:
            "a cached StoreUUID under another marker version's key: read again, stale, when the markers change"
        case .cachedUUIDMalformed: "the cached StoreUUID is not 36 upper-case characters of a UUID"
        case .cachedUUIDAmbiguous:
            "cached StoreUUIDs of several container paths disagree, and the files do not say which device they came from"
        case .cachedUUIDSeveralKeys:
            "cached StoreUUIDs of several container paths disagree; the download says which device it came from, and that device reads its own key"
        case .cachedUUIDWithoutMarker:
            "the preferences cache a StoreUUID but no StoreUUID marker exists: the app loads the cached store, then drops the cache and seeds a new cloud store from the local store (4.7c)"
        case .storeInUse:
            "another process has the store open or locked (the app runs): what status reads may change under it, and changing commands refuse it (exit 5) until the app is quit"
        case .duplicateObjects:
            "objects stored more than once (same entity, attributes and to-one targets; `check`, and `status` in stores of up to 250,000 objects): usm-repair dedupe removes them"
        case .dataElsewhere:
            "the app will show an empty or nearly empty store at its next launch while another store here holds the data (the local store, another account's copy, another store's copy)"
        case .nominalStoreFile:
            "a plain file at CloudStore/<UUID>.sqlite: ignored by Core Data on iOS 7+, and it turns a later rebuild into a no-op (E13)"
        case .severalCopies:
            "several copies of the active store (peers or accounts): which one the device opens cannot be known"
        case .seedLosesWALFrames:
            "the next launch seeds from the local store, whose -wal holds frames the seeding (main file only) would lose"
        case .seedCopySidecar:
            "the next launch seeds from the local store through CopyMigrationStore.sqlite, beside which a -wal, -shm or -journal of an earlier seeding remains: SQLite would apply it to the new copy"
        case .interruptedOperation:
            "a usm-repair operation was interrupted (killed): run usm-repair recover to finish or undo it"
        case .untrustedOperation:
            "an operation folder of usm-repair's that this machine has no record of writing, or whose plan was altered: left alone, never obeyed"
        case .cloudContainerUnconfirmed:
            "the ubiquity container found beside a download (or given) shares no peer folder or store UUID with it: maybe another customer's; changing commands refuse one found beside until --cloud-dir names it"
        case .cloudContainerMissing: "the ubiquity container was not given or found: markers and logs cannot be read"
        case .leftoverTempStore: "MigrationSource.sqlite / CopyMigrationStore.sqlite left by an interrupted migration"
        case .walInvalid:
            "a non-empty -wal SQLite cannot read (wrong magic, version, page size or header checksum): all of it is ignored"
        case .walCutTransaction:
            "frames of the -wal after its last valid commit, or one cut short: a transaction SQLite drops"
        case .walMismatch:
            "a -wal whose page size differs from the main file's, or whose salts or frames differ from what the -shm records"
        case .bookkeepingValue:
            "a Z_ENT, Z_PK, Z_NAME, Z_SUPER, Z_MAX, Z_UUID or Z_VERSION value of a type or size Core Data never writes"
        case .entitySuperCycle: "Z_SUPER links that form a cycle: those entities have no root"
        case .entitySuperUnknown: "a Z_SUPER naming an entity Z_PRIMARYKEY does not list"
        case .entityTableUnlisted:
            "a table shaped like an entity table (Z_PK, Z_ENT, Z_OPT) that no Z_PRIMARYKEY row accounts for: its rows are in no count"
        case .metadataPlistTooLarge: "Z_METADATA.Z_PLIST over 1 MiB: not metadata, not decoded"
        case .modelCacheTooLarge: "Z_MODELCACHE over 1 MiB, compressed or inflated: not decoded"
        case .tooManyEntities: "Z_PRIMARYKEY over 65,536 rows: not a model; only the first 65,536 are read"
        case .undecodableName:
            "a name in the layout is not valid UTF-8 (or holds U+F700...U+F7FF): APFS and HFS+ never store one, so the copy was damaged; nothing below it is read, and every changing command refuses"
        case .hostileSchema:
            "a schema text that is not one accepted CREATE statement (a second statement, TEMP, another schema, a costly function in a table or index), or expressions past the step budget: never run, nothing written (exit 2)"
        }
    }

    /// Every code as printed.
    public static let all: Set<String> = Set(allCases.map(\.rawValue))
}
