import Foundation
import GRDB

/// Order-independent content digests: per entity, the row count and the wrapping sum of a 64-bit
/// hash of each row's attribute columns (no keys, so rows copied under new keys still match).
struct ContentDigest: Equatable, Sendable {
    var rows: Int
    var sum: Int64

    static func + (a: ContentDigest, b: ContentDigest) -> ContentDigest {
        ContentDigest(rows: a.rows + b.rows, sum: a.sum &+ b.sum)
    }

    /// Page cache of the connection reading digests, KiB.
    static let scanCacheKiB = 512

    /// Digests per entity name, and the attribute columns each entity's digest covers.
    typealias Read = (digests: [String: ContentDigest], columns: [String: [String]])

    /// Digests per entity name of the store at `url`, and the attribute columns each table's digest covers.
    static func read(_ url: URL, schema: CoreDataSchema) throws -> Read {
        let queue = try StagedStore.open(url, readonly: true)
        defer { try? queue.close() }
        return try queue.read { db in
            // One pass over each table: every page is read once, a cache would only take memory
            // from the `integrity_check` beside it (issue 33: its lookups need it).
            try db.execute(sql: "PRAGMA cache_size = -\(scanCacheKiB)")
            var digests: [String: ContentDigest] = [:]
            var columns: [String: [String]] = [:]
            let indexed = try SchemaFacts.indexedKeyColumns(db, schema: schema)
            for table in schema.entityTables {
                let attributes = SchemaFacts.attributeColumns(table, schema: schema, indexedKeys: indexed[table] ?? [])
                    .sorted()
                let entities = schema.entities.filter { $0.table == table }
                for entity in entities { columns[entity.name] = attributes }
                // SQLite functions take at most 127 arguments: wide tables are hashed in chunks.
                let chunks = stride(from: 0, to: attributes.count, by: 100).map {
                    Array(attributes[$0..<min($0 + 100, attributes.count)])
                }
                let value = { (column: String) in valueExpression(table: table, column: column) }
                let list =
                    chunks.count <= 1
                    ? attributes.map(value).joined(separator: ", ")
                    : chunks.map { "usm_rowhash(" + $0.map(value).joined(separator: ", ") + ")" }.joined(
                        separator: ", ")
                // One scan, every entity of the table at once: `GROUP BY Z_ENT` would look each row
                // up through the Z_ENT index (or sort whole rows).
                guard !entities.isEmpty else { continue }
                let slot =
                    "CASE Z_ENT " + entities.enumerated().map { "WHEN \($1.number) THEN \($0)" }.joined(separator: " ")
                    + " END"
                let blob = try Data.fetchOne(
                    db,
                    sql:
                        "SELECT usm_digest_slots(\(slot), \(entities.count)\(list.isEmpty ? "" : ", " + list)) FROM \(table.sqlIdentifier)"
                )
                guard let blob else { continue }
                let pairs = Self.slots(blob, count: entities.count)
                for (entity, pair) in zip(entities, pairs) where pair.rows > 0 {
                    digests[entity.name] = pair
                }
            }
            return (digests, columns)
        }
    }
}

extension ContentDigest {
    /// The `count` (rows, sum) pairs of a `usm_digest_slots` result (host byte order); fewer when
    /// the BLOB is short (it never is: the function writes `count` pairs).
    static func slots(_ blob: Data, count: Int) -> [ContentDigest] {
        blob.withUnsafeBytes { raw in
            (0..<min(count, raw.count / 16)).map { i in
                ContentDigest(
                    rows: Int(truncatingIfNeeded: raw.loadUnaligned(fromByteOffset: 16 * i, as: UInt64.self)),
                    sum: Int64(bitPattern: raw.loadUnaligned(fromByteOffset: 16 * i + 8, as: UInt64.self)))
            }
        }
    }

    /// BLOBs longer than this are hashed in pieces (`usm_valuehash`), never read whole.
    static let largeBlob = 1 << 20

    /// The expression a column's value is hashed as: the value, or for a BLOB over `largeBlob` the
    /// hash of its bytes read in pieces. `typeof()` and `length()` of a BLOB column do not read the
    /// value, so a row holding a value of hundreds of megabytes costs no more memory than any other.
    static func valueExpression(table: String, column: String) -> String {
        let c = column.sqlIdentifier
        let literal = { (s: String) in "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }
        return
            "CASE WHEN typeof(\(c)) = 'blob' AND length(\(c)) > \(largeBlob) THEN usm_valuehash(\(literal(table)), \(literal(column)), _rowid_) ELSE \(c) END"
    }
}

/// The checks every staged store passes before it is installed, whatever the strategy.
struct MigrationVerifier {
    let source: CapturedStore
    let destination: CapturedStore?
    var destinationBefore: StoreReport? { destination?.report }
    let policy: StrategyDescription.RowPolicy
    let outcome: MigrationOutcome
    let keepUbiquity: Bool

    /// Runs `check` on the staged store and compares rows (and digests, where rows are copied unchanged).
    /// `inputs` are the digests of the source (and of a merge's destination before), read by the
    /// engine while the strategy ran; they are required where digests are compared.
    /// Fills `report` and throws `verificationFailed` on the first broken promise.
    /// `externalDataReady` returns once the result's external data is in place: the check's
    /// external-data invariants wait for it, its B-tree walk and other invariants do not.
    func verify(
        staged: URL, inputs: InputDigests?, externalDataReady: (@Sendable () -> Void)? = nil,
        report: inout MigrationReport
    ) throws {
        let files = StoreFileSet(main: staged)
        // What the build and the plan freed goes back to the system before the check's page cache
        // is filled: its peak is not stacked on theirs (issue 33: 1M objects, 65-69 MiB).
        Memory.releaseFreed()
        // The result's content digests, read on another thread while the check walks its B-trees.
        let digestPolicy = policy == .all || policy == .userEntities
        if digestPolicy, inputs == nil { throw USMError.unexpected("the source's content digests were not read") }
        let digestJob =
            digestPolicy
            ? Background { () throws -> (digests: [String: ContentDigest], columns: [String: [String]]) in
                try ContentDigest.read(staged, schema: CoreDataSchema.load(from: staged))
            } : nil
        defer { _ = try? digestJob?.value() }
        // Every invariant of `check` at error level; not the search for duplicated objects, whose
        // findings are warnings the verdict below never reads (it filters errors).
        // Its reading connection counts through indexes and looks keys up in key order (covering
        // indexes): a small cache leaves the memory to the integrity_check's lookups beside it.
        var inspector = StoreInspector(depth: .check, cacheSizeKiB: ContentDigest.scanCacheKiB)
        inspector.checksDuplicates = false
        inspector.externalDataReady = externalDataReady
        let result = PhaseTimings.measure("verify: check of the result") {
            inspector.inspect(
                files, role: .store, confinement: Confinement(root: files.directory), privateCopy: staged)
        }
        if case let .hostileSchema(_, reason)? = result.readFailure {
            // The staged store has the source's schema: it is the source's, refused as an input's is
            // (exit 2), not a migration that went wrong (issue 28, finding 5).
            throw USMError.hostileSchema(path: source.files.main.path, reason: reason)
        }
        if let failure = result.readFailure {
            throw USMError.verificationFailed(
                path: staged.path, detail: "the staged store cannot be read: \(failure.message)")
        }
        report.verification.integrity = result.integrity
        guard result.integrity == "ok" else {
            throw USMError.verificationFailed(path: staged.path, detail: "integrity_check failed")
        }
        let errors = result.problems.filter { $0.severity == .error }
        // A part of the staged store that could not be read (its external data folder...) is an
        // I/O error of this machine's, not a broken promise of the migration.
        if let unreadable = errors.first(where: { $0.code == .unreadable }) {
            throw USMError.unreadable(path: unreadable.subject ?? staged.path, reason: unreadable.message)
                .diagnosingSpace()
        }
        // The inputs' errors, to tell what the result inherited: asked after the result's own
        // integrity_check passed, so neither input's pages are checked again (`inheritedCheck`).
        let known: Set<ProblemCode> =
            errors.isEmpty
            ? []
            : PhaseTimings.measure("verify: the inputs' errors") {
                Set(
                    ([source.inheritedCheck()] + (destination.map { [$0.inheritedCheck()] } ?? []))
                        .flatMap(\.problems).filter { $0.severity == .error }.map(\.code))
            }
        report.verification.problems = errors.filter { !known.contains($0.code) }
        report.verification.inherited = errors.filter { known.contains($0.code) }
        if let first = report.verification.problems.first {
            throw USMError.verificationFailed(path: staged.path, detail: "\(first.code.rawValue): \(first.message)")
        }
        report.verification.ubiquityKeys = result.metadata?.ubiquityKeys ?? []
        // A merge keeps the destination's own keys (a cloud store stays one); none may come from the source.
        let introduced = Set(report.verification.ubiquityKeys).subtracting(
            destinationBefore?.metadata?.ubiquityKeys ?? [])
        if !keepUbiquity, !introduced.isEmpty, policy != .reported {
            throw USMError.verificationFailed(
                path: staged.path,
                detail: "ubiquity metadata is still present (\(introduced.sorted().joined(separator: ", ")))")
        }
        // A store left without ubiquity metadata is a local store: no iCloud bookkeeping table either.
        if report.verification.ubiquityKeys.isEmpty, policy != .reported, let tables = result.tables?.ubiquity,
            !tables.isEmpty
        {
            throw USMError.verificationFailed(
                path: staged.path,
                detail: "Core Data's iCloud bookkeeping tables are still present (\(tables.joined(separator: ", ")))")
        }

        // Rows per entity.
        let sourceRows = Dictionary(source.report.entities.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        let beforeRows = Dictionary((destinationBefore?.entities ?? []).map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        let afterRows = Dictionary(result.entities.map { ($0.name, $0.rows) }, uniquingKeysWith: +)
        let system = Set((source.report.entities + result.entities).filter(\.system).map(\.name))
        let names = Set(sourceRows.keys).union(beforeRows.keys).union(afterRows.keys).sorted()
        var entities: [MigrationReport.EntityRows] = []
        var mismatches: [String] = []
        for name in names {
            let s = sourceRows[name] ?? 0
            let b = beforeRows[name] ?? 0
            let a = afterRows[name] ?? 0
            let dedup = (outcome.deduplicated[name] ?? 0) + (outcome.matched[name] ?? 0)
            let expected: Int? =
                switch policy {
                case .all: s + b
                case .userEntities: system.contains(name) && !outcome.carried.contains(name) ? b : s + b - dedup
                case .none: b
                case .reported: outcome.rows[name].map { $0 + (destinationBefore == nil ? 0 : b) }
                }
            if let expected, expected != a { mismatches.append("\(name): expected \(expected) rows, found \(a)") }
            entities.append(
                .init(name: name, source: s, destinationBefore: b, expected: expected, after: a, digest: "not-compared")
            )
        }
        if policy == .reported {
            report.verification.rows = mismatches.isEmpty ? "equal" : "reported"
            report.notes += mismatches.map { "rows differ from what the plugin or recipe reported: \($0)" }
        } else if let first = mismatches.first {
            report.entities = entities
            throw USMError.verificationFailed(path: staged.path, detail: "rows per entity differ (\(first))")
        } else {
            report.verification.rows = "equal"
        }

        // Digests where rows are copied unchanged.
        if let digestJob {
            let (resultDigests, resultColumns) = try PhaseTimings.measure("verify: waiting for the result's digests") {
                try digestJob.value()
            }
            let inputs = inputs ?? InputDigests(source: [:], sourceColumns: [:], before: [:], beforeColumns: [:])
            let (sourceDigests, sourceColumns) = (inputs.source, inputs.sourceColumns)
            let (beforeDigests, beforeColumns) = (inputs.before, inputs.beforeColumns)
            for i in entities.indices {
                let name = entities[i].name
                guard !(policy == .userEntities && system.contains(name) && !outcome.carried.contains(name)) else {
                    entities[i].digest = "not-copied"
                    continue
                }
                guard (outcome.deduplicated[name] ?? 0) == 0, (outcome.matched[name] ?? 0) == 0,
                    !outcome.altered.contains(name)
                else {
                    entities[i].digest = "skipped-changed-rows"
                    continue
                }
                guard resultColumns[name] == sourceColumns[name],
                    destination == nil || beforeColumns[name] == resultColumns[name]
                else {
                    entities[i].digest = "skipped-columns-differ"
                    continue
                }
                let zero = ContentDigest(rows: 0, sum: 0)
                let expected = (sourceDigests[name] ?? zero) + (beforeDigests[name] ?? zero)
                if (resultDigests[name] ?? zero) != expected {
                    report.entities = entities
                    throw USMError.verificationFailed(
                        path: staged.path, detail: "the content of \(name) differs from the source's")
                }
                entities[i].digest = "equal"
                report.verification.digestsCompared += 1
            }
        }
        report.entities = entities
    }
}

/// The content digests of a migration's inputs: the source, and a merge's destination as it was
/// (empty otherwise), with the attribute columns each entity's digest covers.
struct InputDigests: Sendable {
    let source: [String: ContentDigest]
    let sourceColumns: [String: [String]]
    let before: [String: ContentDigest]
    let beforeColumns: [String: [String]]
}
