import Foundation
import GRDB

/// The Core Data invariants of one store, each a small query over the private copy.
/// Every check is bulk SQL: memory does not grow with the number of rows, and every loop over
/// entities or tables uses the schema's indexes, so time grows linearly with `Z_PRIMARYKEY`.
/// A table missing a column a check needs is reported once (`entity-table-shape`) and left out of
/// the checks that need it; the other tables are still checked.
enum StoreChecks {
    /// How many offending keys a problem message quotes.
    static let sampleSize = 5

    /// Z_METADATA: one row, a UUID, a readable plist of a sensible size; no ubiquity keys in a local store.
    static func metadataProblems(_ metadata: StoreMetadata, role: StoreReport.Role) -> [Problem] {
        var problems: [Problem] = []
        if metadata.rowCount != 1 {
            problems.append(
                Problem(
                    .metadataRows, "Z_METADATA holds \(metadata.rowCount) rows; Core Data writes exactly one",
                    subject: "Z_METADATA", count: metadata.rowCount))
        }
        if metadata.rowCount > 0, (metadata.storeUUID ?? "").isEmpty {
            problems.append(
                Problem(
                    .metadataUuidMissing, "Z_METADATA.Z_UUID is empty: the store has no identity", subject: "Z_METADATA"
                ))
        }
        switch metadata.plistState {
        case .ok: break
        case .null:
            if metadata.rowCount > 0 {
                problems.append(
                    Problem(
                        .metadataPlistNull,
                        "Z_METADATA.Z_PLIST is NULL: the store's metadata (store type, model hashes) cannot be read",
                        subject: "Z_METADATA"))
            }
        case .malformed:
            problems.append(
                Problem(
                    .metadataPlistMalformed, "Z_METADATA.Z_PLIST does not decode as a property-list dictionary",
                    subject: "Z_METADATA"))
        case .tooLarge:
            let size =
                metadata.plistBytes.map { "is \($0) bytes" } ?? "is longer than \(StoreMetadata.plistLimit) bytes"
            problems.append(
                Problem(
                    .metadataPlistTooLarge,
                    "Z_METADATA.Z_PLIST \(size); Core Data's metadata takes a few kilobytes, so it was not decoded (limit \(StoreMetadata.plistLimit >> 20) MiB)",
                    subject: "Z_METADATA", count: metadata.plistBytes.flatMap { Int(exactly: $0) }))
        }
        if role == .local, metadata.hasUbiquityMetadata {
            problems.append(
                Problem(
                    .ubiquityMetadataInLocalStore,
                    "the local store carries iCloud metadata (\(metadata.ubiquityKeys.joined(separator: ", "))): Core Data will treat it as tied to an iCloud account",
                    subject: "Z_METADATA", count: metadata.ubiquityKeys.count))
        }
        return problems
    }

    /// Core Data's iCloud bookkeeping tables (`UbiquityTables`) in the store the app opens when iCloud
    /// is off. They belong in a ubiquity copy, where nothing is said against them.
    static func ubiquityTableProblems(_ tables: [String], role: StoreReport.Role) -> [Problem] {
        guard role == .local, !tables.isEmpty else { return [] }
        return [
            Problem(
                .ubiquityTablesInLocalStore,
                "the local store holds Core Data's iCloud bookkeeping tables (\(tables.joined(separator: ", "))), the sync state of the copy it was made from; a store written by UbiquityStoreManager's own migration has none, and whether Core Data treats a store holding them as still ubiquitous is not known",
                subject: tables.joined(separator: ", "), count: tables.count)
        ]
    }

    /// Entity tables lacking `Z_PK` or `Z_ENT`: reported, and left out of every check that needs them.
    static func shapeProblems(schema: CoreDataSchema) -> [Problem] {
        schema.entityTables.compactMap { table in
            let missing = ["Z_PK", "Z_ENT"].filter { !schema.table(table, hasColumn: $0) }
            guard !missing.isEmpty else { return nil }
            return Problem(
                .entityTableShape,
                "\(table) has no \(missing.joined(separator: " or ")) column: its rows cannot be told apart or counted",
                subject: table)
        }
    }

    /// True when `table` has the columns the row checks need.
    static func isWellShaped(_ table: String, _ schema: CoreDataSchema) -> Bool {
        schema.table(table, hasColumn: "Z_PK") && schema.table(table, hasColumn: "Z_ENT")
    }

    /// Rows per `Z_ENT` in each entity table, with rows whose `Z_ENT` is unknown, in the wrong table,
    /// NULL or not an integer: each kind one problem per table, however many values it covers.
    static func entityCounts(_ db: Database, schema: CoreDataSchema) throws -> (
        rows: [Int: Int], unknownRows: Int, problems: [Problem]
    ) {
        var rows: [Int: Int] = [:]
        var unknown = 0
        var problems: [Problem] = []
        for table in schema.entityTables where schema.table(table, hasColumn: "Z_ENT") {
            let hierarchy = Set(schema.entityNumbers(inTable: table))
            var wrongTable = Tally()
            var unknownEnt = Tally()
            var nullRows = 0
            var badType = Tally()
            // Grouped by the column itself so that SQLite walks Core Data's Z_ENT index instead of
            // sorting the table; only integers come back as values, anything else by its type.
            let sql = """
                SELECT CASE WHEN typeof(Z_ENT) = 'integer' THEN Z_ENT END, typeof(Z_ENT), COUNT(*)
                FROM \(table.sqlIdentifier) GROUP BY Z_ENT
                """
            let cursor = try Row.fetchCursor(db, sql: sql)
            while let row = try cursor.next() {
                let n = (row[2] as DatabaseValue).storedInt ?? 0
                let type = String.fromDatabaseValue(row[1] as DatabaseValue) ?? "null"
                guard let ent = (row[0] as DatabaseValue).storedInt else {
                    unknown += n
                    if type == "null" { nullRows += n } else { badType.add(type, rows: n) }
                    continue
                }
                if hierarchy.contains(ent) {
                    rows[ent, default: 0] += n
                } else if let other = schema.entity(ent) {
                    unknown += n
                    wrongTable.add("\(ent) (\(other.name), in \(other.table ?? "no table"))", rows: n)
                } else {
                    unknown += n
                    unknownEnt.add("\(ent)", rows: n)
                }
            }
            if nullRows > 0 {
                problems.append(
                    Problem(.entityNull, "\(nullRows) rows of \(table) have no Z_ENT", subject: table, count: nullRows))
            }
            if badType.rows > 0 {
                problems.append(
                    Problem(
                        .bookkeepingValue,
                        "\(badType.rows) rows of \(table) have a Z_ENT that is not an integer (\(badType.sample)): not counted as any entity",
                        subject: "\(table).Z_ENT", count: badType.rows))
            }
            if wrongTable.rows > 0 {
                problems.append(
                    Problem(
                        .entityWrongTable,
                        "\(wrongTable.rows) rows of \(table) have the Z_ENT of an entity stored in another table (Z_ENT \(wrongTable.sample))",
                        subject: table, count: wrongTable.rows))
            }
            if unknownEnt.rows > 0 {
                problems.append(
                    Problem(
                        .entityUnknown,
                        "\(unknownEnt.rows) rows of \(table) have a Z_ENT that Z_PRIMARYKEY does not list (Z_ENT \(unknownEnt.sample))",
                        subject: table, count: unknownEnt.rows))
            }
        }
        let missing = schema.entities.filter { $0.table == nil && $0.number == $0.rootNumber && !$0.isSystem }
        if !missing.isEmpty {
            let names = missing.map { "\($0.name) (Z_ENT \($0.number)): no table Z\($0.name.uppercased())" }
            problems.append(
                Problem(
                    .entityTableMissing, "\(missing.count) root entities have no table (\(EntityRows.sample(names)))",
                    subject: missing.count == 1 ? missing[0].name : "Z_PRIMARYKEY", count: missing.count))
        }
        return (rows, unknown, problems)
    }

    /// Tables shaped like entity tables (`Z`/`A` prefix; `Z_PK`, `Z_ENT`, `Z_OPT` columns) that no
    /// `Z_PRIMARYKEY` row accounts for: an emptied `Z_PRIMARYKEY`, or one that lost a hierarchy's
    /// rows, would otherwise hide their rows from every count.
    static func unlistedTableProblems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        let listed = Set(schema.entityTables)
        var problems: [Problem] = []
        for (table, columns) in schema.tables.sorted(by: { $0.key < $1.key }) where !listed.contains(table) {
            guard let first = table.uppercased().first, first == "Z" || first == "A",
                !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(table.uppercased())
            else { continue }
            let names = Set(columns.map(\.name))
            guard names.isSuperset(of: ["Z_PK", "Z_ENT", "Z_OPT"]) else { continue }
            let count =
                (try DatabaseValue.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.sqlIdentifier)"))?.storedInt ?? 0
            problems.append(
                Problem(
                    .entityTableUnlisted,
                    "\(table) is shaped like an entity table (Z_PK, Z_ENT, Z_OPT) but no Z_PRIMARYKEY row accounts for it: its \(count) rows are in no count",
                    subject: table, count: count))
        }
        return problems
    }

    /// `Z_MAX` must be at least the largest `Z_PK` of its hierarchy, or Core Data hands out duplicate keys.
    /// Hierarchies with an unreadable `Z_MAX` are left out (their counter is unknown, and reported).
    static func primaryKeyProblems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        var problems: [Problem] = []
        for table in schema.entityTables where schema.table(table, hasColumn: "Z_PK") {
            let members = schema.entityNumbers(inTable: table)
            guard !members.contains(where: { schema.unreadableMax.contains($0) }) else { continue }
            let value = try DatabaseValue.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM \(table.sqlIdentifier)") ?? .null
            guard let maxPK = value.storedInt64 else {
                if !value.isNull {
                    problems.append(
                        Problem(
                            .bookkeepingValue,
                            "the largest Z_PK of \(table) is \(value.kindDescription), not an integer: keys cannot be checked",
                            subject: "\(table).Z_PK"))
                }
                continue
            }
            var zmax: Int64 = 0
            var root = table
            for number in members {
                guard let entity = schema.entity(number) else { continue }
                zmax = max(zmax, entity.max)
                if entity.number == entity.rootNumber { root = entity.name }
            }
            if zmax < maxPK {
                problems.append(
                    Problem(
                        .zmaxBehind,
                        "Z_MAX for \(root) is \(zmax) but \(table) already holds Z_PK \(maxPK): Core Data would hand out duplicate keys",
                        subject: table, count: Int(clamping: maxPK.subtractingReportingOverflow(zmax).partialValue)))
            }
        }
        return problems
    }

    /// Every non-NULL to-one key must name an existing row of the destination entity (or a sub-entity).
    static func toOneProblems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        var problems: [Problem] = []
        for key in schema.toOneKeys where isWellShaped(key.table, schema) && isWellShaped(key.destinationTable, schema)
        {
            let entList = key.destinationEntities.map(String.init).joined(separator: ",")
            let column = key.column.sqlIdentifier
            let sql = """
                SELECT s.Z_PK AS v FROM \(key.table.sqlIdentifier) s
                WHERE s.\(column) IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM \(key.destinationTable.sqlIdentifier) d
                                  WHERE d.Z_PK = s.\(column) AND d.Z_ENT IN (\(entList)))
                """
            let (count, sample) = try countAndSample(db, sql: sql, order: "s.\(column)")
            guard count > 0 else { continue }
            problems.append(
                Problem(
                    .danglingToOne,
                    "\(count) rows of \(key.table) have \(key.column) pointing at no row of \(key.destinationTable) (Z_PK \(sample))",
                    subject: "\(key.table).\(key.column)", count: count))
        }
        return problems
    }

    /// `status` looks for duplicated objects in stores of at most this many objects (`check` in every store).
    public static let statusDuplicateLimit = 250_000

    /// Objects stored more than once (`ObjectIdentity`), per entity, with the command that removes them.
    static func duplicateProblems(_ db: Database, schema: CoreDataSchema, path: String) throws -> [Problem] {
        let identity = try DuplicateGroups.find(
            db, schema: schema, keys: try ObjectIdentity.constraintKeys(db, schema: schema))
        defer { try? identity.drop(db) }
        return try identity.duplicates(db).sorted { $0.key < $1.key }.map { name, n in
            Problem(
                .duplicateObjects,
                "\(n) \(name) objects are copies of another \(name) (same attributes and to-one targets): usm-repair dedupe --store \(ShellWords.quote(path)) --dry-run shows what it removes",
                subject: name, count: n)
        }
    }

    /// Every join-table row must point at existing rows on both sides.
    static func joinProblems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        var problems: [Problem] = []
        for join in schema.joinTables {
            for (column, ent) in join.columns {
                guard let entity = schema.entity(ent), let table = entity.table else {
                    problems.append(
                        Problem(
                            .joinEntityUnknown, "\(join.name).\(column) refers to entity \(ent), which has no table",
                            subject: "\(join.name).\(column)"))
                    continue
                }
                guard isWellShaped(table, schema) else { continue }
                let entList = schema.subtree(of: ent).map(String.init).joined(separator: ",")
                let quoted = column.sqlIdentifier
                let sql = """
                    SELECT j.\(quoted) AS v FROM \(join.name.sqlIdentifier) j
                    WHERE j.\(quoted) IS NULL
                       OR NOT EXISTS (SELECT 1 FROM \(table.sqlIdentifier) d
                                      WHERE d.Z_PK = j.\(quoted) AND d.Z_ENT IN (\(entList)))
                    """
                let (count, sample) = try countAndSample(db, sql: sql, order: "j.\(quoted)")
                guard count > 0 else { continue }
                problems.append(
                    Problem(
                        .danglingJoinRow,
                        "\(count) rows of \(join.name) have \(column) pointing at no \(entity.name) in \(table) (\(sample))",
                        subject: "\(join.name).\(column)", count: count))
            }
        }
        return problems
    }

    /// Counts the rows `sql` returns and quotes the first few values of its column `v` (each cut to
    /// a few characters: a key column may hold anything).
    /// - Parameter order: an expression the rows are counted in the order of (the key each row
    ///   looks up): with an index on it, the lookups walk the other table in key order instead of
    ///   at random through a small page cache (a join column of a million rows: 1.1 s to 0.3 s).
    ///   The count is the same; the sample is taken without it (the same values as before).
    static func countAndSample(_ db: Database, sql: String, order: String? = nil) throws -> (Int, String) {
        // `LIMIT -1` keeps SQLite from dropping the ORDER BY of a subquery whose order nothing reads.
        let counted = order.map { "\(sql) ORDER BY \($0) LIMIT -1" } ?? sql
        let count = (try DatabaseValue.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(counted))"))?.storedInt ?? 0
        guard count > 0 else { return (0, "") }
        let sample = try DatabaseValue.fetchAll(
            db,
            sql:
                "SELECT CASE WHEN typeof(v) IN ('text', 'blob') THEN substr(v, 1, 40) ELSE v END FROM (\(sql)) LIMIT \(sampleSize)"
        )
        .map { $0.isNull ? "NULL" : "\($0)" }
        return (count, sample.joined(separator: ", ") + (count > sampleSize ? ", ..." : ""))
    }
}

/// Rows counted per offending value, with a sample of the values for the message.
private struct Tally {
    private(set) var rows = 0
    private var values: [String] = []
    private var distinct = 0

    mutating func add(_ value: String, rows n: Int) {
        rows += n
        distinct += 1
        if values.count < StoreChecks.sampleSize { values.append(value) }
    }

    var sample: String { values.joined(separator: ", ") + (distinct > values.count ? ", ..." : "") }
}
