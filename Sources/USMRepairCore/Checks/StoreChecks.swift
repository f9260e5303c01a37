import Foundation
import GRDB

/// The Core Data invariants of one store, each a small query over the private copy.
/// Every check is bulk SQL: memory does not grow with the number of rows.
enum StoreChecks {
    /// How many offending keys a problem message quotes.
    static let sampleSize = 5

    /// Z_METADATA: one row, a UUID, a readable plist; no ubiquity keys in a local store.
    static func metadataProblems(_ metadata: StoreMetadata, role: StoreReport.Role) -> [Problem] {
        var problems: [Problem] = []
        if metadata.rowCount != 1 {
            problems.append(Problem(.metadataRows, "Z_METADATA holds \(metadata.rowCount) rows; Core Data writes exactly one",
                subject: "Z_METADATA", count: metadata.rowCount))
        }
        if metadata.rowCount > 0, (metadata.storeUUID ?? "").isEmpty {
            problems.append(Problem(.metadataUuidMissing, "Z_METADATA.Z_UUID is empty: the store has no identity", subject: "Z_METADATA"))
        }
        switch metadata.plistState {
        case .ok: break
        case .null:
            if metadata.rowCount > 0 {
                problems.append(Problem(.metadataPlistNull, "Z_METADATA.Z_PLIST is NULL: the store's metadata (store type, model hashes) cannot be read",
                    subject: "Z_METADATA"))
            }
        case .malformed:
            problems.append(Problem(.metadataPlistMalformed, "Z_METADATA.Z_PLIST does not decode as a property-list dictionary", subject: "Z_METADATA"))
        }
        if role == .local, metadata.hasUbiquityMetadata {
            problems.append(Problem(.ubiquityMetadataInLocalStore, "the local store carries iCloud metadata (\(metadata.ubiquityKeys.joined(separator: ", "))): Core Data will treat it as tied to an iCloud account",
                subject: "Z_METADATA", count: metadata.ubiquityKeys.count))
        }
        return problems
    }

    /// Rows per `Z_ENT` in each entity table, with rows whose `Z_ENT` is unknown or in the wrong table.
    static func entityCounts(_ db: Database, schema: CoreDataSchema) throws -> (rows: [Int: Int], unknownRows: Int, problems: [Problem]) {
        var rows: [Int: Int] = [:]
        var unknown = 0
        var problems: [Problem] = []
        for table in schema.entityTables {
            guard schema.tables[table]?.contains(where: { $0.name == "Z_ENT" }) == true else {
                problems.append(Problem(.entityTableShape, "\(table) has no Z_ENT column", subject: table))
                continue
            }
            let hierarchy = Set(schema.entities.filter { $0.table == table }.map(\.number))
            for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, COUNT(*) AS n FROM \(table.quotedDatabaseIdentifier) GROUP BY Z_ENT") {
                let n: Int = row["n"]
                guard let ent = row["Z_ENT"] as Int? else {
                    unknown += n
                    problems.append(Problem(.entityNull, "\(n) rows of \(table) have no Z_ENT", subject: table, count: n))
                    continue
                }
                if hierarchy.contains(ent) {
                    rows[ent, default: 0] += n
                } else if let other = schema.entity(ent) {
                    unknown += n
                    problems.append(Problem(.entityWrongTable, "\(n) rows of \(table) say Z_ENT \(ent) (\(other.name)), an entity stored in \(other.table ?? "no table")",
                        subject: table, count: n))
                } else {
                    unknown += n
                    problems.append(Problem(.entityUnknown, "\(n) rows of \(table) have Z_ENT \(ent), which Z_PRIMARYKEY does not list",
                        subject: table, count: n))
                }
            }
        }
        for entity in schema.entities where entity.table == nil && entity.superNumber == 0 && !entity.isSystem {
            problems.append(Problem(.entityTableMissing, "entity \(entity.name) (Z_ENT \(entity.number)) has no table Z\(entity.name.uppercased())",
                subject: entity.name))
        }
        return (rows, unknown, problems)
    }

    /// `Z_MAX` must be at least the largest `Z_PK` of its hierarchy, or Core Data hands out duplicate keys.
    static func primaryKeyProblems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        var problems: [Problem] = []
        for table in schema.entityTables {
            let members = schema.entities.filter { $0.table == table }
            guard let maxPK = try Int64.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM \(table.quotedDatabaseIdentifier)") else { continue }
            let zmax = members.map(\.max).max() ?? 0
            if zmax < maxPK {
                let root = members.first { $0.number == $0.rootNumber }?.name ?? table
                problems.append(Problem(.zmaxBehind, "Z_MAX for \(root) is \(zmax) but \(table) already holds Z_PK \(maxPK): Core Data would hand out duplicate keys",
                    subject: table, count: Int(maxPK - zmax)))
            }
        }
        return problems
    }

    /// Every non-NULL to-one key must name an existing row of the destination entity (or a sub-entity).
    static func toOneProblems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        var problems: [Problem] = []
        for key in schema.toOneKeys {
            let entList = key.destinationEntities.map(String.init).joined(separator: ",")
            let sql = """
                SELECT s.Z_PK FROM \(key.table.quotedDatabaseIdentifier) s
                WHERE s.\(key.column.quotedDatabaseIdentifier) IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM \(key.destinationTable.quotedDatabaseIdentifier) d
                                  WHERE d.Z_PK = s.\(key.column.quotedDatabaseIdentifier) AND d.Z_ENT IN (\(entList)))
                """
            let (count, sample) = try countAndSample(db, sql: sql)
            guard count > 0 else { continue }
            problems.append(Problem(.danglingToOne, "\(count) rows of \(key.table) have \(key.column) pointing at no row of \(key.destinationTable) (Z_PK \(sample))",
                subject: "\(key.table).\(key.column)", count: count))
        }
        return problems
    }

    /// Every join-table row must point at existing rows on both sides.
    static func joinProblems(_ db: Database, schema: CoreDataSchema) throws -> [Problem] {
        var problems: [Problem] = []
        for join in schema.joinTables {
            for (column, ent) in join.columns {
                guard let entity = schema.entity(ent), let table = entity.table else {
                    problems.append(Problem(.joinEntityUnknown, "\(join.name).\(column) refers to entity \(ent), which has no table",
                        subject: "\(join.name).\(column)"))
                    continue
                }
                let entList = schema.subtree(of: ent).map(String.init).joined(separator: ",")
                let sql = """
                    SELECT j.\(column.quotedDatabaseIdentifier) FROM \(join.name.quotedDatabaseIdentifier) j
                    WHERE j.\(column.quotedDatabaseIdentifier) IS NULL
                       OR NOT EXISTS (SELECT 1 FROM \(table.quotedDatabaseIdentifier) d
                                      WHERE d.Z_PK = j.\(column.quotedDatabaseIdentifier) AND d.Z_ENT IN (\(entList)))
                    """
                let (count, sample) = try countAndSample(db, sql: sql)
                guard count > 0 else { continue }
                problems.append(Problem(.danglingJoinRow, "\(count) rows of \(join.name) have \(column) pointing at no \(entity.name) in \(table) (\(sample))",
                    subject: "\(join.name).\(column)", count: count))
            }
        }
        return problems
    }

    /// Counts the rows `sql` returns and quotes the first few values of its first column.
    static func countAndSample(_ db: Database, sql: String) throws -> (Int, String) {
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(sql))") ?? 0
        guard count > 0 else { return (0, "") }
        let sample = try DatabaseValue.fetchAll(db, sql: "\(sql) LIMIT \(sampleSize)").map { $0.isNull ? "NULL" : "\($0)" }
        return (count, sample.joined(separator: ", ") + (count > sampleSize ? ", ..." : ""))
    }
}
