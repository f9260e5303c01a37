/// A range of row keys, `(after, through]`: where rows of a table are known to be missing because
/// the page that held them, or the interior page that led to them, could not be read.
struct KeyRange: Sendable, Equatable {
    /// Keys greater than this (nil: no lower bound).
    var after: Int64?
    /// Keys up to and including this (nil: no upper bound).
    var through: Int64?

    /// The whole key space (a table whose root is unknown).
    static let all = KeyRange(after: nil, through: nil)

    /// True when every key from `first` to `last` lies in the range.
    func contains(_ first: Int64, _ last: Int64) -> Bool {
        (after.map { first > $0 } ?? true) && (through.map { last <= $0 } ?? true)
    }
}

/// A table salvage fills: its columns as the result's schema declares them, where its B-tree
/// starts in the damaged file (when its schema row was read), and what a row of it must look like.
struct SalvageTable: Sendable {
    /// SQLite's column affinities (rules of "Datatypes In SQLite", section 3.1).
    enum Affinity: Sendable, Equatable {
        case integer, text, blob, real, numeric

        /// The affinity of a declared type.
        init(declared: String) {
            let type = declared.uppercased()
            if type.contains("INT") {
                self = .integer
            } else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") {
                self = .text
            } else if type.contains("BLOB") || type.isEmpty {
                self = .blob
            } else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") {
                self = .real
            } else {
                self = .numeric
            }
        }

        /// True when SQLite can store `value` in a column of this affinity as it is found in a record.
        func admits(_ value: FieldValue) -> Bool {
            switch (self, value) {
            case (_, .null), (.blob, _), (.numeric, _): true
            case (.integer, .integer), (.integer, .real), (.real, .real), (.real, .integer): true
            case (.text, .text), (.text, .blob): true
            default: false
            }
        }
    }

    /// One column.
    struct Column: Sendable, Equatable {
        let name: String
        let affinity: Affinity
    }

    let name: String
    let columns: [Column]
    /// The `INTEGER PRIMARY KEY` column (`Z_PK`), stored as NULL in records: the key is the rowid.
    let rowidColumn: Int?
    /// The `Z_ENT` column of an entity table.
    let entityColumn: Int?
    /// The entity numbers a row may carry (a hierarchy's), when known.
    var entities: Set<Int> = []
    /// The root page in the damaged file, when its schema row was read.
    var root: UInt32?
    /// Keys whose pages were lost.
    var lost: [KeyRange] = []

    init(name: String, columns: [Column], rowidColumn: Int?, root: UInt32?) {
        self.name = name
        self.columns = columns
        self.rowidColumn = rowidColumn
        self.root = root
        // Z_PRIMARYKEY's Z_ENT is its key (stored NULL), not an entity column.
        let upper = name.uppercased()
        let bookkeeping = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(upper)
        let entity =
            (upper.hasPrefix("Z") || upper.hasPrefix("A")) && !bookkeeping
            ? columns.firstIndex { $0.name.uppercased() == "Z_ENT" } : nil
        entityColumn = entity == rowidColumn ? nil : entity
        if root == nil { lost = [.all] }
    }

    /// `sqlite_schema` itself: five columns, root page 1.
    static let schema = SalvageTable(
        name: "sqlite_schema",
        columns: [
            ("type", Affinity.text), ("name", .text), ("tbl_name", .text), ("rootpage", .integer), ("sql", .text),
        ]
        .map { Column(name: $0.0, affinity: $0.1) },
        rowidColumn: nil, root: 1)

    /// True when a record with `fields` can be one of this table's rows. `strict` (pages found
    /// outside the tree) also asks every value to fit its column's affinity, `Z_ENT` to name one
    /// of the table's entities, and every column to be there: only an entity table's rows may
    /// lack trailing columns (rows written before a migration added them), never `Z_OPT`.
    func admits(_ fields: [FieldValue], strict: Bool) -> Bool {
        guard !fields.isEmpty, fields.count <= columns.count else { return false }
        if let key = rowidColumn, key < fields.count, fields[key] != .null { return false }
        guard strict else { return true }
        if let column = entityColumn {
            guard fields.count >= column + 2 else { return false }
        } else if fields.count != columns.count {
            return false
        }
        for (i, value) in fields.enumerated() where !columns[i].affinity.admits(value) { return false }
        if let column = entityColumn {
            guard column < fields.count, case let .integer(ent) = fields[column] else { return false }
            if !entities.isEmpty, !entities.contains(Int(truncatingIfNeeded: ent)) { return false }
        }
        return true
    }

    /// True when keys `first` through `last` all lie in one lost range.
    func lostRangeHolds(_ first: Int64, _ last: Int64) -> Bool {
        lost.contains { $0.contains(first, last) }
    }
}
