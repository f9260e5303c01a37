import Foundation
import GRDB

/// Reads a damaged store's file set with salvage's own reader and writes every intact row into a
/// new store at a private path, in this order (each needs the one before):
/// 1. the header (or the page size found from the pages), the `-wal`'s last valid commit, the freelist;
/// 2. `sqlite_schema` from page 1, and from orphaned pages when its tree is broken;
/// 3. the schema of the result: the damaged store's own, with the tables it lost taken from
///    `--schema-from`, and Core Data's fixed bookkeeping tables when their rows were lost;
/// 4. `Z_PRIMARYKEY` first (its rows say which `Z_ENT` values each table's rows may have), then
///    every other table from its root, in key order;
/// 5. the scan for orphaned table-leaf pages, when some tree was broken (`OrphanScan`);
/// 6. indexes, views and triggers.
/// The damaged files are only ever read (`pread` on read-only descriptors), each page once but
/// for the two cases the README names.
struct Salvager {
    /// What the read gave, for the report and the Core Data pass.
    struct Outcome {
        var report: SalvageReport
        var schemaRows: [SchemaRow]
    }

    let source: StoreFileSet
    let sibling: SiblingSchema?

    /// Salvages `source` into a new store at `destination` (which must not exist).
    /// - Throws: `notSQLite` (no page size fits), `sourceDamaged` (no schema can be read and no
    ///   sibling was given), `changedWhileReading`, `unreadable`, SQLite errors of the new store.
    func run(into destination: URL, dryRun: Bool, progress: (String) -> Void) throws -> Outcome {
        let before = ["main", "wal"].map { source.member($0).flatMap { FileStatus.lookup($0.path) } }
        let store = try DamagedStore(files: source)
        var report = SalvageReport(dryRun: dryRun, source: .init(path: source.main.path), destination: .init(path: ""))
        store.readFreelist()
        if let loss = store.walNote { report.unreadable.append(loss) }
        for problem in store.freelist.problems { report.unreadable.append("freelist: \(problem)") }
        if case let .inferred(size, reason) = store.headerState {
            report.source.header = "inferred: \(reason); page size \(size) found from the pages, UTF-8 assumed"
        }

        // 2. sqlite_schema.
        progress("reading sqlite_schema")
        let collector = SchemaCollector(encoding: store.header.encoding)
        var schemaTables = [SalvageTable.schema]
        var schemaRows = [SalvageReport.TableRows(name: "sqlite_schema")]
        // A schema row is its names and one definition (at most 1 MiB): a longer record is refused
        // unread, so memory does not grow with a hostile schema text (issue 28, finding 6).
        store.maxPayload = SchemaDefinition.maxDefinitionBytes + 64 * 1024
        store.walk(0, tables: &schemaTables, rows: &schemaRows, sink: collector)
        if !schemaTables[0].lost.isEmpty {
            var scan = DamagedStore.ScanResult()
            store.scanOrphans(
                eligible: [0], tables: schemaTables, rows: &schemaRows, sink: collector, final: false, result: &scan)
            if !scan.placements.isEmpty {
                report.notes.append("sqlite_schema rows were found on \(scan.placements.count) orphaned pages")
            }
        }
        store.maxPayload = nil
        if collector.overLimit {
            throw USMError.hostileSchema(
                path: source.main.path,
                reason: "its schema texts are over \(SchemaDefinition.maxSchemaBytes) bytes together")
        }
        if store.oversized > 0 {
            throw USMError.hostileSchema(
                path: source.main.path,
                reason:
                    "\(store.oversized) of its schema rows are over \(SchemaDefinition.maxDefinitionBytes + 64 * 1024) bytes (a definition is at most \(SchemaDefinition.maxDefinitionBytes))"
            )
        }
        if schemaRows[0].lostCells > 0 || schemaRows[0].lostPages > 0 || !schemaTables[0].lost.isEmpty {
            report.unreadable.append(
                "sqlite_schema: part of it could not be read (\(schemaRows[0].lostCells) cells, \(schemaRows[0].lostPages) pages)"
            )
        }

        // 3. The schema of the result.
        let schemaWhole = schemaTables[0].lost.isEmpty && schemaRows[0].lostCells == 0
        let (rows, roots, schemaSource) = try schema(collector.ordered, whole: schemaWhole)
        report.schema = schemaSource
        // Every schema text read (the store's own and the sibling's) is checked before any is run.
        for list in [collector.ordered, rows] {
            if let reason = SchemaDefinition.audit(list.map { ($0.type, $0.name, $0.sql) }) {
                throw USMError.hostileSchema(path: source.main.path, reason: reason)
            }
        }
        if !schemaWhole, sibling == nil {
            // A table whose schema row was lost is not salvaged at all: say so, and how to get it back.
            let known = Set(rows.filter { $0.type == "table" }.map { $0.name.uppercased() })
            let named = Set(
                rows.filter { $0.type != "table" && !known.contains($0.tableName.uppercased()) }.map(\.tableName)
            ).sorted()
            let hint =
                named.isEmpty
                ? ""
                : " (\(named.count) named by the indexes or triggers that were read: \(named.prefix(5).joined(separator: ", "))\(named.count > 5 ? ", ..." : ""))"
            report.unreadable.append(
                "sqlite_schema: the tables whose schema rows were on its lost part are not salvaged\(hint); give --schema-from a healthy store of the same model to salvage them"
            )
        }
        var outcome: Outcome?
        // The new store is built from a stranger's schema and holds no more than the source: the
        // same guard as an input's, with the source's step budget (an index or CHECK expression
        // evaluated for every row written could otherwise run for minutes; issue 28, finding 5).
        var config = Configuration()
        let sourceBytes = UntrustedDatabase.storeBytes(source.main.path)
        UntrustedDatabase.configure(&config, bytes: sourceBytes)
        let queue = try DatabaseQueue(path: destination.path, configuration: config)
        defer { try? queue.close() }
        do {
            try queue.writeWithoutTransaction { db in
                let autoVacuum =
                    store.header.largestRoot == 0
                    ? (store.headerState == .intact ? 0 : 2) : (store.header.incrementalVacuum ? 2 : 1)
                let writer = try SalvageWriter(
                    db: db, pageSize: store.header.pageSize, autoVacuum: autoVacuum, encoding: store.header.encoding)
                report.unreadable += try writer.createTables(rows, roots: roots)
                var tables = writer.tables
                var tableRows = tables.map { SalvageReport.TableRows(name: $0.name) }
                try db.execute(sql: "BEGIN")
                // 4. Z_PRIMARYKEY, then the others from their roots.
                let bookkeeping = tables.indices.filter {
                    ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(tables[$0].name.uppercased())
                }
                progress("reading Z_PRIMARYKEY, Z_METADATA, Z_MODELCACHE")
                for index in bookkeeping { store.walk(index, tables: &tables, rows: &tableRows, sink: writer) }
                var scan = DamagedStore.ScanResult()
                let lostBookkeeping = bookkeeping.filter { !tables[$0].lost.isEmpty }
                if !lostBookkeeping.isEmpty {
                    // Their rows come first: the entity numbers they list admit the orphaned rows of the others.
                    store.scanOrphans(
                        eligible: lostBookkeeping, tables: tables, rows: &tableRows, sink: writer, final: false,
                        result: &scan)
                }
                try assignEntities(db, &tables)
                let others = tables.indices.filter { !bookkeeping.contains($0) }.sorted {
                    (tables[$0].root ?? .max) < (tables[$1].root ?? .max)
                }
                progress("reading \(others.count) tables")
                for index in others { store.walk(index, tables: &tables, rows: &tableRows, sink: writer) }
                // 5. Orphaned pages.
                let eligible = tables.indices.filter { !tables[$0].lost.isEmpty }
                if !eligible.isEmpty {
                    progress("scanning \(store.pageCount) pages for orphaned rows of \(eligible.count) tables")
                    var rest = DamagedStore.ScanResult()
                    store.scanOrphans(eligible: eligible, tables: tables, rows: &tableRows, sink: writer, result: &rest)
                    scan.unplacedPages += rest.unplacedPages
                    scan.unplacedRows += rest.unplacedRows
                }
                if let failure = writer.failure { throw failure }
                try db.execute(sql: "COMMIT")
                // 6. Indexes, views, triggers.
                progress("building indexes")
                var removed: [String: Int] = [:]
                report.unreadable += try writer.finish(rows, removed: &removed)
                for (table, count) in removed {
                    if let i = tableRows.firstIndex(where: { $0.name == table }) {
                        tableRows[i].dropped["a later row breaking a uniqueness constraint", default: 0] += count
                        tableRows[i].salvaged -= count
                    }
                }
                for (i, table) in tables.enumerated() where table.root == nil && tableRows[i].salvaged == 0 {
                    report.unreadable.append(
                        "\(table.name): its root page is unknown (its sqlite_schema row was lost) and no page of it was found"
                    )
                }
                report.tables = tableRows
                report.unplacedPages = scan.unplacedPages
                report.unplacedRows = scan.unplacedRows
                outcome = Outcome(report: report, schemaRows: rows)
            }
        } catch let error as USMError {
            throw error
        } catch let error as DatabaseError where UntrustedDatabase.isInterrupt(error) {
            // Only the step budget interrupts this connection.
            throw USMError.hostileSchema(
                path: source.main.path,
                reason:
                    "evaluating it ran past \(UntrustedDatabase.budget(forBytes: sourceBytes)) SQLite steps, \(UntrustedDatabase.stepsPerByte) a byte"
            )
        } catch {
            throw StagedStore.wrapWrite(error, path: destination)
        }
        guard var result = outcome else { throw USMError.unexpected("the salvage read ended without a result") }
        let after = ["main", "wal"].map { source.member($0).flatMap { FileStatus.lookup($0.path) } }
        for (was, now) in zip(before, after) where !(was == nil && now == nil) {
            guard let was, let now, was.sameContent(as: now) else {
                throw USMError.changedWhileReading(path: source.main.path)
            }
        }
        result.report.damagedPages = store.damaged
        result.report.damagedPageCount = store.damagedCount
        result.report.source.pageSize = store.header.pageSize
        result.report.source.pages = store.pageCount
        result.report.source.pagesRead = store.reads
        result.report.source.walFrames = store.pages.wal?.frames.count ?? 0
        result.report.source.freePages = store.freelist.found
        result.report.source.freelistComplete = store.freelist.complete
        result.report.source.pointerMap = store.pointerMap != nil
        return result
    }

    /// The statements the result is made from, the root of each table in the damaged file, and
    /// where they came from.
    /// `whole`: the damaged store's own schema was read without a loss (then a bookkeeping table
    /// it lacks was never there: older stores have no `Z_MODELCACHE`).
    private func schema(_ own: [SchemaRow], whole: Bool) throws -> ([SchemaRow], [String: UInt32], String) {
        var rows = own.filter { $0.type != "table" || $0.sql != nil }
        var roots: [String: UInt32] = [:]
        for row in own where row.type == "table" && row.rootPage > 0 { roots[row.name] = row.rootPage }
        let known = Set(rows.map { $0.name.uppercased() })
        var origin = "sqlite_schema"
        if let sibling {
            let missing = sibling.rows.filter {
                !known.contains($0.name.uppercased()) && !$0.name.lowercased().hasPrefix("sqlite_")
            }
            if !missing.isEmpty {
                rows += missing
                origin = own.isEmpty ? "schema-from" : "sqlite_schema+schema-from"
            }
        }
        for name in ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
        where !rows.contains(where: { $0.type == "table" && $0.name.uppercased() == name }) {
            if whole {
                guard name == "Z_MODELCACHE" else {
                    throw USMError.notCoreData(path: source.main.path, missing: [name])
                }
                continue
            }
            if let row = SchemaRow.bookkeeping(name) { rows.append(row) }
        }
        let entityTables = rows.filter { row in
            guard row.type == "table", let first = row.name.uppercased().first, first == "Z" || first == "A" else {
                return false
            }
            return !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(row.name.uppercased())
        }
        if entityTables.isEmpty {
            throw USMError.sourceDamaged(
                path: source.main.path,
                detail: own.isEmpty
                    ? "its schema (sqlite_schema) could not be read; give --schema-from a healthy store of the same model"
                    : "its schema names no Core Data entity table")
        }
        return (rows, roots, origin)
    }

    /// Gives each entity table the `Z_ENT` values of its hierarchy, from the `Z_PRIMARYKEY` rows
    /// salvaged so far and, for entities they lack, the sibling's.
    private func assignEntities(_ db: Database, _ tables: inout [SalvageTable]) throws {
        var entities: [Int: (name: String, superNumber: Int)] = [:]
        for entity in sibling?.entities ?? [] { entities[entity.number] = (entity.name, entity.superNumber) }
        if tables.contains(where: { $0.name.uppercased() == "Z_PRIMARYKEY" }) {
            for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY") {
                guard let number = Int.fromDatabaseValue(row[0] as DatabaseValue),
                    let name = String.fromDatabaseValue(row[1] as DatabaseValue)
                else { continue }
                entities[number] = (name, Int.fromDatabaseValue(row[2] as DatabaseValue) ?? 0)
            }
        }
        var byTable: [String: Set<Int>] = [:]
        for (number, entity) in entities {
            var root = (number, entity)
            var steps = 0
            while root.1.superNumber != 0, let parent = entities[root.1.superNumber], steps < entities.count {
                root = (root.1.superNumber, parent)
                steps += 1
            }
            let table = (root.0 >= 16000 ? "A" : "Z") + root.1.name.uppercased()
            byTable[table, default: []].insert(number)
        }
        for i in tables.indices {
            tables[i].entities = byTable[tables[i].name.uppercased()] ?? []
        }
    }
}
