import Foundation
import GRDB

/// The rows of `Z_PRIMARYKEY`, read defensively and resolved into hierarchies in linear time.
///
/// Every value is decoded from its `DatabaseValue`: a `Z_ENT`, `Z_SUPER` or `Z_MAX` that is not an
/// integer, or a `Z_NAME` that is not text, is a `bookkeeping-value` problem (one per column, with
/// the count), never a trap. Each entity's root is found by walking `Z_SUPER` once with memoisation:
/// a chain 50,000 deep costs 50,000 steps, not their square, and a cycle is found and reported.
struct EntityRows {
    /// The entities, by ascending `Z_ENT`, with `rootNumber` set (`table` is left for the schema).
    var entities: [CoreDataSchema.Entity] = []
    /// `bookkeeping-value`, `entity-super-cycle` and `entity-super-unknown` findings.
    var problems: [Problem] = []
    /// Entities whose `Z_MAX` is not an integer (their `max` reads 0 but is unknown).
    var unreadableMax: Set<Int> = []

    /// The longest `Z_NAME` read; an entity name is an identifier, not a document (with
    /// `rowLimit`, this bounds the names held to about 10 MiB however hostile the store).
    static let nameLimit = 128
    /// The most `Z_PRIMARYKEY` rows read. Core Data numbers a model's entities from 1 and its own
    /// (history, CloudKit) from 16000, so a real store has a few hundred rows at most; past this,
    /// rows cannot be a model, and memory stays flat however many a hostile store holds.
    static let rowLimit = 65_536

    /// Reads `Z_PRIMARYKEY` of an open store, one row at a time (memory holds the entities, not
    /// the rows).
    /// - Parameter limit: the most rows read (`rowLimit`); tests lift it to prove the reading linear.
    static func read(_ db: Database, limit: Int = rowLimit) throws -> EntityRows {
        let count = (try DatabaseValue.fetchOne(db, sql: "SELECT COUNT(*) FROM Z_PRIMARYKEY"))?.storedInt ?? 0
        let limit = max(limit, 1)
        var builder = Builder(capacity: min(count, limit))
        do {
            try fetchRows(db, limit: limit, namesOneByOne: false) { builder.add($0) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_TOOBIG {
            // A name too long to load stopped the query: start again, reading each name on its own
            // (only hostile stores get here).
            builder = Builder(capacity: min(count, limit))
            try fetchRows(db, limit: limit, namesOneByOne: true) { builder.add($0) }
        }
        var result = EntityRows()
        result.entities = builder.entities
        builder.entities = []
        result.entities.sort { $0.number < $1.number }
        // Z_ENT is Z_PRIMARYKEY's primary key in every Core Data store; a store that repeats one keeps the first.
        var unique = 0
        for i in result.entities.indices
        where unique == 0 || result.entities[i].number != result.entities[unique - 1].number {
            result.entities.swapAt(unique, i)
            unique += 1
        }
        result.entities.removeLast(result.entities.count - unique)
        result.unreadableMax = builder.unreadableMax
        result.problems = builder.bad.problems()
        if count > limit {
            result.problems.insert(
                Problem(
                    .tooManyEntities,
                    "Z_PRIMARYKEY holds \(count) rows, more than any Core Data model has (a model's entities are numbered below 16000): only the first \(limit) were read; rows of the others are counted as unknown",
                    subject: "Z_PRIMARYKEY", count: count), at: 0)
        }
        result.resolveRoots()
        return result
    }

    /// Turns rows into entities, noting every value of the wrong type.
    private struct Builder {
        var entities: [CoreDataSchema.Entity] = []
        var unreadableMax: Set<Int> = []
        var bad = BadValues()

        init(capacity: Int) { entities.reserveCapacity(capacity) }

        mutating func add(_ row: RawRow) {
            guard let number = row.number.value.storedInt else {
                bad.note("Z_ENT", description: row.number.description, entity: nil, ignored: "those rows are left out")
                return
            }
            let name: String
            switch row.name {
            case let .value(value):
                if case let .string(text) = value.storage {
                    name = text
                } else {
                    if case let .blob(data) = value.storage {
                        name = String(decoding: data, as: UTF8.self)
                    } else {
                        name = ""
                    }
                    bad.note(
                        "Z_NAME",
                        description: value.isNull && row.nameType != "null" ? row.nameType : value.kindDescription,
                        entity: number, ignored: "names read as UTF-8 where they can be, else left empty")
                }
            case let .tooLarge(type, bytes):
                name = ""
                bad.note(
                    "Z_NAME",
                    description: bytes.map { "\(type) of \($0) bytes" } ?? "\(type) over \(EntityRows.nameLimit) bytes",
                    entity: number, ignored: "names read as UTF-8 where they can be, else left empty")
            }
            var superNumber = 0
            if let value = row.superNumber.value.storedInt {
                superNumber = value
            } else if !row.superNumber.isNull {
                bad.note(
                    "Z_SUPER", description: row.superNumber.description, entity: number,
                    ignored: "those entities are read as roots")
            }
            var max: Int64 = 0
            if let value = row.max.value.storedInt64 {
                max = value
            } else if !row.max.isNull {
                bad.note(
                    "Z_MAX", description: row.max.description, entity: number,
                    ignored: "those key counters are unknown and not checked")
                unreadableMax.insert(number)
            }
            entities.append(
                CoreDataSchema.Entity(
                    number: number, name: name, superNumber: superNumber, max: max, table: nil, rootNumber: number))
        }
    }

    // MARK: - Reading

    /// A number column as read: the value when SQLite stores a number, else only its `typeof()`.
    private struct NumberCell {
        let value: DatabaseValue
        let type: String

        var isNull: Bool { type == "null" }

        var description: String {
            switch type {
            case "integer", "real": value.kindDescription
            case "null": "NULL"
            case "blob": "a blob"
            default: type
            }
        }
    }

    private struct RawRow {
        let number: NumberCell
        let name: BoundedRead.Value
        /// `typeof(Z_NAME)`: a number leaves `name` NULL.
        let nameType: String
        let superNumber: NumberCell
        let max: NumberCell
    }

    /// Numbers are selected only when SQLite stores a number (a 200 MB text `Z_SUPER` is never
    /// loaded); names are read under SQLite's length limit. When one name is too long the query
    /// fails as a whole, and the caller asks again with `namesOneByOne` to find which.
    private static func fetchRows(_ db: Database, limit: Int, namesOneByOne: Bool, _ body: (RawRow) -> Void) throws {
        func number(_ column: String) -> String {
            "CASE WHEN typeof(\(column)) IN ('integer', 'real') THEN \(column) END, typeof(\(column))"
        }
        let columns =
            "\(number("Z_ENT")), \(number("Z_SUPER")), \(number("Z_MAX")), typeof(Z_NAME), CASE WHEN typeof(Z_NAME) = 'blob' THEN length(Z_NAME) END"
        let nameValue =
            "CASE WHEN typeof(Z_NAME) = 'text' OR (typeof(Z_NAME) = 'blob' AND length(Z_NAME) <= \(nameLimit)) THEN Z_NAME END"
        func cell(_ row: Row, _ at: Int) -> NumberCell {
            NumberCell(
                value: row[at] as DatabaseValue, type: String.fromDatabaseValue(row[at + 1] as DatabaseValue) ?? "null")
        }
        func decode(_ row: Row, name: BoundedRead.Value?) -> RawRow {
            let type = String.fromDatabaseValue(row[6] as DatabaseValue) ?? "null"
            let bytes = (row[7] as DatabaseValue).storedInt64
            let name =
                name
                ?? (type == "blob" && (bytes ?? 0) > nameLimit
                    ? .tooLarge(type: "blob", bytes: bytes) : .value(row[8] as DatabaseValue))
            return RawRow(
                number: cell(row, 0), name: name, nameType: type, superNumber: cell(row, 2), max: cell(row, 4))
        }
        guard namesOneByOne else {
            try db.withValueLimit(nameLimit) {
                let cursor = try Row.fetchCursor(
                    db, sql: "SELECT \(columns), \(nameValue) FROM Z_PRIMARYKEY LIMIT \(limit)")
                while let row = try cursor.next() { body(decode(row, name: nil)) }
            }
            return
        }
        let cursor = try Row.fetchCursor(db, sql: "SELECT \(columns), rowid FROM Z_PRIMARYKEY LIMIT \(limit)")
        while let row = try cursor.next() {
            let rowid = (row[8] as DatabaseValue).storedInt64 ?? 0
            let name: BoundedRead.Value
            do {
                let value = try db.withValueLimit(nameLimit) {
                    try DatabaseValue.fetchOne(
                        db, sql: "SELECT \(nameValue) FROM Z_PRIMARYKEY WHERE rowid = ?", arguments: [rowid])
                }
                name = .value(value ?? .null)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_TOOBIG {
                name = .tooLarge(type: String.fromDatabaseValue(row[6] as DatabaseValue) ?? "text", bytes: nil)
            }
            body(decode(row, name: name))
        }
    }

    // MARK: - Hierarchies

    /// Sets every entity's root, each `Z_SUPER` link followed once. Entities on a cycle are taken as
    /// roots of their own (and reported), as are entities whose `Z_SUPER` names no entity.
    private mutating func resolveRoots() {
        var root = [Int](repeating: -1, count: entities.count)
        var cycles: [Int] = []
        var orphans: [Int] = []
        var path: [Int] = []
        var onPath: [Int: Int] = [:]  // position → index in path
        for start in entities.indices where root[start] < 0 {
            path.removeAll(keepingCapacity: true)
            onPath.removeAll(keepingCapacity: true)
            var current = start
            var found: Int
            while true {
                if root[current] >= 0 {
                    found = root[current]
                    break
                }
                if let at = onPath[current] {
                    // path[at...] is a cycle: each member becomes its own root.
                    for member in path[at...] { root[member] = member }
                    cycles += path[at...]
                    found = current
                    break
                }
                onPath[current] = path.count
                path.append(current)
                let parent = entities[current].superNumber
                if parent == 0 {
                    found = current
                    break
                }
                guard let next = Self.position(of: parent, in: entities) else {
                    orphans.append(current)
                    found = current
                    break
                }
                current = next
            }
            for member in path where root[member] < 0 { root[member] = found }
        }
        for i in entities.indices { entities[i].rootNumber = entities[root[i]].number }
        if !cycles.isEmpty {
            let names = cycles.sorted().map { "\(entities[$0].name) (\(entities[$0].number))" }
            problems.append(
                Problem(
                    .entitySuperCycle,
                    "Z_SUPER links of \(cycles.count) entities form a cycle (\(Self.sample(names))): no root can be found; each is read as a root entity",
                    subject: "Z_PRIMARYKEY.Z_SUPER", count: cycles.count))
        }
        if !orphans.isEmpty {
            let names = orphans.sorted().map {
                "\(entities[$0].name) (\(entities[$0].number)) → \(entities[$0].superNumber)"
            }
            problems.append(
                Problem(
                    .entitySuperUnknown,
                    "\(orphans.count) entities name a parent that Z_PRIMARYKEY does not list (\(Self.sample(names))); each is read as a root entity",
                    subject: "Z_PRIMARYKEY.Z_SUPER", count: orphans.count))
        }
    }

    /// The position of entity `number` in `entities`, which are sorted by number with no repeats:
    /// a binary search, so no index of 200,000 entries has to be kept beside them.
    static func position(of number: Int, in entities: [CoreDataSchema.Entity]) -> Int? {
        var low = 0
        var high = entities.count
        while low < high {
            let mid = (low + high) / 2
            if entities[mid].number < number { low = mid + 1 } else { high = mid }
        }
        return low < entities.count && entities[low].number == number ? low : nil
    }

    static func sample(_ items: [String]) -> String {
        items.prefix(StoreChecks.sampleSize).joined(separator: ", ")
            + (items.count > StoreChecks.sampleSize ? ", ..." : "")
    }
}

/// Bookkeeping values of the wrong type, gathered per column so that 200,000 bad rows make one problem.
private struct BadValues {
    private var byColumn: [String: (count: Int, samples: [String], consequence: String)] = [:]
    private var order: [String] = []

    mutating func note(_ column: String, description: String, entity: Int?, ignored: String) {
        if byColumn[column] == nil { order.append(column) }
        var entry = byColumn[column] ?? (0, [], ignored)
        entry.count += 1
        if entry.samples.count < StoreChecks.sampleSize {
            entry.samples.append(entity.map { "Z_ENT \($0): \(description)" } ?? description)
        }
        byColumn[column] = entry
    }

    func problems() -> [Problem] {
        order.compactMap { column in
            guard let entry = byColumn[column] else { return nil }
            let what = column == "Z_NAME" ? "text" : "an integer"
            let more = entry.count > entry.samples.count ? ", ..." : ""
            return Problem(
                .bookkeepingValue,
                "Z_PRIMARYKEY.\(column) is not \(what) in \(entry.count) rows (\(entry.samples.joined(separator: "; "))\(more)): \(entry.consequence)",
                subject: "Z_PRIMARYKEY.\(column)", count: entry.count)
        }
    }
}
