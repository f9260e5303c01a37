import Foundation
import GRDB

/// Reads one store and reports on it, without writing a byte of the user's folders.
///
/// The file set (main file, `-wal`, `-journal`) is copied into a private temporary folder and the
/// copy is opened: SQLite applies the WAL there, so rows that exist only in an un-checkpointed
/// WAL are seen, while the user's `-wal` and `-shm` stay byte-identical and no file appears beside them.
public struct StoreInspector: Sendable {
    /// How much to verify.
    public enum Depth: Sendable {
        /// What planning an operation needs of a store it does not read: the file set's members,
        /// the header and the sidecars, without copying or opening anything (time independent of
        /// the store's size). Integrity is `not-run`; a header that holds is `ok`.
        case light
        /// What `status` needs: `PRAGMA quick_check`, metadata, counts, cheap invariants.
        case status
        /// Every Core Data invariant: `PRAGMA integrity_check`, keys, join tables, external data.
        case check
    }

    /// How deep to look.
    public let depth: Depth
    /// Pages of SQLite cache per connection (negative: KiB); bounds memory on large stores.
    public let cacheSizeKiB: Int
    /// At `.status` depth, the tables `quick_check` covers (those of them that exist), instead of
    /// the whole store: for a reader that reads nothing else (the `none` strategy reads the schema
    /// and three bookkeeping tables). Nil: the whole store.
    let quickCheckTables: [String]?
    /// At `.status` depth, look for duplicated objects too (stores of up to
    /// `StoreChecks.statusDuplicateLimit` objects): the `status` command's report, not a capture's.
    var findsDuplicates = false
    /// False for a reader that acts on errors only (a migration's verification): duplicated objects
    /// are never an error (`ProblemCode.duplicateObjects` is a warning), and finding them costs a
    /// refinement of every object of the store.
    var checksDuplicates = true
    /// False for a reader that needs `check`'s invariants but not SQLite's page check: the
    /// verifier's look at a migration's inputs for the errors its result inherited, asked only once
    /// the result passed its own `integrity_check` (so `integrity` is never among those errors).
    /// Integrity stays `not-run`.
    var checksIntegrity = true
    /// At `.check` depth, the lines of an `integrity_check` of these very bytes run elsewhere
    /// (dedupe checks its de-duplicated copy beside the snapshot, and on through the open file
    /// once it is renamed into staging): read instead of checking the pages again.
    var integrityLines: (@Sendable () throws -> [String])?
    /// At `.status` depth (whole store), the lines of a `quick_check` of these very bytes made
    /// earlier in the command (`CaptureCache.quickCheck`): read instead of checking the pages again.
    var quickCheckLines: [String]?
    /// At `.check` depth, what the external-data checks wait for: a migration's verification
    /// starts while the result's external data is still being copied into place (issue 33), and
    /// its files are counted and checked only once this returns.
    var externalDataReady: (@Sendable () -> Void)?
    /// At `.check` depth, split `integrity_check` over two connections (`IntegrityCheck.run`);
    /// nil: when it pays on this machine now (`IntegrityCheck.splitPays`).
    var splitsIntegrityCheck: Bool?

    /// Creates an inspector.
    public init(depth: Depth, cacheSizeKiB: Int = 2048) {
        self.init(depth: depth, cacheSizeKiB: cacheSizeKiB, quickCheckTables: nil)
    }

    init(depth: Depth, cacheSizeKiB: Int = 2048, quickCheckTables: [String]?) {
        self.depth = depth
        self.cacheSizeKiB = cacheSizeKiB
        self.quickCheckTables = quickCheckTables
    }

    /// Inspects the store whose file set is `files`, playing `role` in the layout.
    /// Never throws: every failure becomes the report's health, problems and `readFailure`.
    /// - Parameter privateCopy: a copy of the file set already taken into a private folder (by a
    ///   bundle's consistent capture), opened instead of copying again; it must hold no `-journal`.
    public func inspect(
        _ files: StoreFileSet, role: StoreReport.Role, confinement: Confinement,
        privateCopy: URL? = nil
    ) -> StoreReport {
        var report = StoreReport(role: role, path: files.main.path)
        report.files = fileEntries(files)

        // Every member that exists must stay inside the folder the user gave.
        for member in files.existingMembers() {
            do { try confinement.check(member) } catch let error as USMError {
                report.exists = true
                report.health = .unreadable
                report.problems.append(Problem(.symlinkEscapes, error.message, subject: member.path))
                report.readFailure = error
                return report
            } catch {}
        }

        // A folder on the way that may not be searched: unreadable, not missing.
        do { _ = try FileStatus.examine(files.main.path) } catch let error as USMError {
            report.health = .unreadable
            report.problems.append(Problem(.unreadable, error.message, subject: files.main.path))
            report.readFailure = error
            return report
        } catch {}
        guard let mainStatus = FileStatus.resolve(files.main.path) else {
            report.exists = FileStatus.lookup(files.main.path) != nil
            if report.exists {
                report.health = .unreadable
                report.problems.append(
                    Problem(.danglingSymlink, "\(files.main.path) is a symlink to nothing", subject: files.main.path))
                report.readFailure = .unreadable(path: files.main.path, reason: "dangling symlink")
            } else if FileStatus.lookup(files.wal.path) != nil || FileStatus.lookup(files.supportDirectory.path) != nil
            {
                report.problems.append(
                    Problem(
                        .orphanSidecar,
                        "the main file is missing but parts of its file set remain (\(files.existingMembers().map(\.lastPathComponent).joined(separator: ", ")))",
                        subject: files.main.path))
            }
            return report
        }
        report.exists = true
        // A -wal, -shm or -journal that is not a regular file (a FIFO, socket, device or folder
        // planted there), or a support folder that is not a folder: never opened (a FIFO would
        // block for ever), reported, and bad input for every command (no plan may move it).
        if mainStatus.kind == .file, let wrong = Self.wrongKindMember(files) {
            report.problems.append(Problem(.wrongKind, wrong.message, subject: report.path))
            report.readFailure = wrong
            report.health = .unreadable
            return report
        }
        guard mainStatus.kind == .file else {
            report.health = .notCoreData
            let error = USMError.wrongKind(path: files.main.path, expected: "a regular file")
            report.problems.append(Problem(.notAFile, error.message, subject: files.main.path))
            report.readFailure = error
            return report
        }

        let header: SQLiteHeader
        do {
            header = try SQLiteHeader.read(path: files.main.path)
        } catch let error as USMError {
            return failed(report, error)
        } catch {
            return failed(report, .unreadable(path: files.main.path, reason: "\(error)"))
        }
        report.journalMode = header.isWAL ? "wal" : "delete"
        let walStatus = FileStatus.resolve(files.wal.path)
        report.walPresent = walStatus?.kind == .file
        report.problems += SidecarChecks.problems(files: files, header: header, walPresent: report.walPresent)
        if let declared = header.declaredSize, mainStatus.size < declared {
            report.health = .damaged
            report.problems.append(
                Problem(
                    .truncated,
                    "the header declares \(declared) bytes but the file holds \(mainStatus.size): the store was cut short",
                    subject: files.main.path))
        }

        if depth == .light {
            if report.health == .missing { report.health = .ok }
            return report
        }

        // A private copy of the file set: the only thing SQLite ever opens.
        var scratch: TemporaryDirectory?
        let copy: URL
        var journalCopied = false
        // The originals' status while this inspector copies them: a `quick_check` of a copy made
        // while they stayed alike stands for the same bytes later in the command (the capture).
        var copiedMembers: [String: FileStatus]?
        if let privateCopy {
            copy = privateCopy
        } else {
            do {
                let before = depth == .status && quickCheckTables == nil ? CaptureCache.memberStatus(files) : nil
                let dir = try TemporaryDirectory(prefix: "usm-repair-read")
                scratch = dir
                copy = dir.url.appendingPathComponent("store.sqlite")
                // Only what SQLite reads: the main file up to its header's page count (pages past
                // it are never read), the -wal up to its last valid frame; holes stay holes.
                _ = try FileCopy.copy(
                    from: files.main.resolvingSymlinksInPath().path, to: copy.path, hashing: false,
                    limit: header.declaredSize)
                if report.walPresent {
                    let wal = files.wal.resolvingSymlinksInPath().path
                    let frames = (try? WALFile.read(path: wal)).flatMap { file -> Int64? in
                        file.headerValid ? 32 + Int64(file.validFrames) * Int64(24 + file.pageSize) : nil
                    }
                    _ = try FileCopy.copy(from: wal, to: copy.path + "-wal", hashing: false, limit: frames)
                }
                if FileStatus.resolve(files.journal.path)?.kind == .file {
                    try FileCopy.copy(from: files.journal.resolvingSymlinksInPath().path, to: copy.path + "-journal")
                    journalCopied = true
                }
                if let before, CaptureCache.memberStatus(files).map({ CaptureCache.alike($0, before) }) == true {
                    copiedMembers = before
                }
            } catch let error as USMError {
                return failed(report, error)
            } catch {
                return failed(report, .unreadable(path: files.main.path, reason: "\(error)"))
            }
        }
        defer { scratch?.remove() }

        do {
            // Read-only connections never checkpoint the copy's WAL on close (wasted writes);
            // a hot journal needs a writer to roll it back.
            let config = Self.configuration(for: copy, readonly: !journalCopied, cacheKiB: cacheSizeKiB)
            let queue = try DatabaseQueue(path: copy.path, configuration: config)
            defer { try? queue.close() }
            // The schema's text is checked before anything evaluates it (an integrity check
            // computes every index expression): a refused one is reported, nothing else read.
            if let reason = try queue.read({ db in try SchemaDefinition.audit(db) }) {
                return failed(report, .hostileSchema(path: files.main.path, reason: reason))
            }
            // Opening applied the WAL or journal; a second connection can now check the B-trees
            // while the first reads metadata and counts.
            let pragma = depth == .check ? "integrity_check" : "quick_check"
            // The B-tree walk (the longest part) overlaps the metadata, schema and row counts. A
            // full check runs on one connection with the cache two would have, or split over two
            // where two cores are idle for it (`IntegrityCheck`).
            let remembered = quickCheckLines.map { lines in { @Sendable () throws -> [String] in lines } }
            let precomputed =
                depth == .check ? integrityLines : depth == .status && quickCheckTables == nil ? remembered : nil
            let runsCheck = precomputed == nil && (depth != .check || checksIntegrity)
            let splits = depth == .check && runsCheck && (splitsIntegrityCheck ?? IntegrityCheck.splitPays())
            var checkConfig = config
            var checkOnItsOwnThread = false
            if depth == .check {
                let resident = Memory.residentBytes()
                let cache =
                    splits
                    ? IntegrityCheck.cacheKiB
                    : IntegrityCheck.singleCacheKiB(
                        forBytes: UntrustedDatabase.storeBytes(copy.path), resident: resident)
                checkOnItsOwnThread = !splits && IntegrityCheck.roomForItsOwnThread(resident: resident, cacheKiB: cache)
                PhaseTimings.note(
                    "check: integrity_check's cache in MiB (resident as it starts: \((resident ?? 0) >> 20) MiB\(checkOnItsOwnThread ? ", its own thread" : ""))",
                    seconds: Double(cache) / 1024)
                checkConfig.prepareDatabase { db in
                    try db.execute(sql: "PRAGMA cache_size = -\(cache)")
                    try db.execute(sql: "PRAGMA mmap_size = 0")
                }
            }
            let checker = runsCheck ? try DatabaseQueue(path: copy.path, configuration: checkConfig) : nil
            defer { try? checker?.close() }
            let second = splits ? try DatabaseQueue(path: copy.path, configuration: checkConfig) : nil
            defer { try? second?.close() }
            let scope = depth == .status ? quickCheckTables : nil
            let name = files.main.lastPathComponent
            let sink = ProgressNote.current
            let note: ProgressNote.Sink = { sink("\(name): \($0)") }
            let depth = depth
            // A full check, which the rest of a verification waits for, starts at once on a thread
            // of its own where the memory budget leaves room for all that then runs beside it.
            let integrity = Background(ownThread: checkOnItsOwnThread) { () throws -> [String]? in
                if let precomputed { return try precomputed() }
                guard let checker else { return nil }
                if let second {
                    return try PhaseTimings.measure("check: integrity_check (two connections)") {
                        try IntegrityCheck.run(checker, second, note: note)
                    }
                }
                if let scope { return try IntegrityCheck.quickCheck(checker, tables: scope) }
                if depth == .check { note("integrity_check of every page and index") }
                let maxLines = depth == .check ? IntegrityCheck.maxLines : 20
                return try PhaseTimings.measure("check: \(pragma) (one connection)") {
                    try checker.read { db in try String.fetchAll(db, sql: "PRAGMA \(pragma)(\(maxLines))") }
                }
            }
            let readResult = Result { try queue.inDatabase { db in try read(db, into: &report, files: files) } }
            guard let lines = try integrity.value() else {
                try readResult.get()
                if report.health == .missing { report.health = .ok }
                return report
            }
            report.integrityCheck = scope.map { "quick_check(\($0.joined(separator: ", ")))" } ?? pragma
            if let copiedMembers, precomputed == nil, scope == nil, depth == .status {
                CaptureCache.current?.noteQuickCheck(files, members: copiedMembers, lines: lines)
            }
            if lines == ["ok"] {
                report.integrity = "ok"
            } else {
                report.integrity = "failed"
                report.health = .damaged
                report.problems.insert(
                    Problem(
                        .integrity, "SQLite \(pragma) failed: " + lines.prefix(5).joined(separator: "; "),
                        subject: files.main.path, count: lines.count), at: 0)
            }
            try readResult.get()
        } catch let error as USMError {
            return failed(report, error)
        } catch let error as DatabaseError where UntrustedDatabase.isInterrupt(error) {
            // Only the step budget interrupts these connections.
            return failed(
                report,
                .hostileSchema(
                    path: files.main.path,
                    reason:
                        "evaluating it ran past \(UntrustedDatabase.budget(forBytes: UntrustedDatabase.storeBytes(copy.path))) SQLite steps, \(UntrustedDatabase.stepsPerByte) a byte"
                ))
        } catch let error as DatabaseError {
            let usm = USMError.sqlite(
                path: files.main.path, code: error.resultCode.rawValue, message: error.message ?? "\(error)")
            let damaged = [ResultCode.SQLITE_CORRUPT, ResultCode.SQLITE_NOTADB].contains(
                error.resultCode.primaryResultCode)
            return failed(report, usm, health: damaged ? .damaged : .unreadable)
        } catch {
            return failed(report, .unreadable(path: files.main.path, reason: "\(error)"))
        }
        if report.health == .missing { report.health = .ok }
        return report
    }

    /// A connection's configuration for reading the private copy at `copy` (a stranger's store:
    /// `UntrustedDatabase`), its page cache capped at `cacheKiB`, memory mapping off.
    static func configuration(for copy: URL, readonly: Bool, cacheKiB: Int) -> Configuration {
        var config = Configuration()
        config.label = "usm-repair.inspect"
        config.readonly = readonly
        UntrustedDatabase.configure(&config, bytes: UntrustedDatabase.storeBytes(copy.path))
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
            try db.execute(sql: "PRAGMA mmap_size = 0")
        }
        return config
    }

    // MARK: - Reading

    private func read(_ db: Database, into report: inout StoreReport, files: StoreFileSet) throws {
        let tables = Set(
            try BoundedRead.texts(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'").map {
                $0.uppercased()
            })
        let missing = ["Z_PRIMARYKEY", "Z_METADATA"].filter { !tables.contains($0) }
        guard missing.isEmpty else { throw USMError.notCoreData(path: files.main.path, missing: missing) }

        let (metadata, metadataValues) = try StoreMetadata.read(db)
        report.storeUUID = metadata.storeUUID
        report.ubiquityMetadata = metadata.hasUbiquityMetadata
        report.metadata = .init(
            plist: metadata.plistState.rawValue, storeType: metadata.storeType,
            frameworkVersion: metadata.frameworkVersion,
            modelVersionIdentifiers: metadata.modelVersionIdentifiers, keys: metadata.keys,
            ubiquityKeys: metadata.ubiquityKeys)
        report.problems += metadataValues
        report.problems += StoreChecks.metadataProblems(metadata, role: report.role)
        let ubiquityTables = try UbiquityTables.names(db)
        report.problems += StoreChecks.ubiquityTableProblems(ubiquityTables, role: report.role)

        let schema = try CoreDataSchema.read(db)
        report.problems += schema.problems
        report.problems += StoreChecks.shapeProblems(schema: schema)
        let keyColumns = Set(schema.toOneKeys.map { "\($0.table).\($0.column)" })
        var attributes: [String: [String]] = [:]
        for table in schema.entityTables {
            attributes[table] = (schema.tables[table] ?? []).map(\.name).filter { column in
                !["Z_PK", "Z_ENT", "Z_OPT"].contains(column) && !column.hasPrefix("Z_FOK_")
                    && !keyColumns.contains("\(table).\(column)")
            }
        }
        report.tables = .init(
            entity: schema.entityTables, join: schema.joinTables.map(\.name), history: schema.historyTables,
            cloudKit: schema.cloudKitTables, ubiquity: ubiquityTables, ordered: schema.orderedColumns,
            relationshipSource: schema.relationshipSource, toOneKeys: schema.toOneKeys.count,
            toOne: schema.toOneKeys.map {
                .init(
                    table: $0.table, column: $0.column, relationship: $0.relationship,
                    destinationTable: $0.destinationTable, destinationEntities: $0.destinationEntities)
            },
            attributes: attributes,
            joinColumns: Dictionary(
                schema.joinTables.map { join in
                    (
                        join.name,
                        Dictionary(join.columns.map { ($0.column, $0.entity) }, uniquingKeysWith: { a, _ in a })
                    )
                }, uniquingKeysWith: { a, _ in a }))

        let counts = try StoreChecks.entityCounts(db, schema: schema)
        report.problems += counts.problems
        report.problems += try StoreChecks.unlistedTableProblems(db, schema: schema)
        report.entities = schema.entities.map { entity in
            StoreReport.EntityCount(
                name: entity.name, parent: entity.superNumber == 0 ? nil : schema.entity(entity.superNumber)?.name,
                rows: counts.rows[entity.number] ?? 0, number: entity.number, table: entity.table,
                system: entity.isSystem)
        }
        report.objects = report.entities.reduce(0) { $0 + $1.rows } + counts.unknownRows
        report.counted = true
        report.problems += try StoreChecks.primaryKeyProblems(db, schema: schema)

        let external = ExternalData(files: files)
        /// The support folder's files counted; false (the report says why) when it cannot be read.
        func countFiles() throws -> Bool {
            do {
                report.externalDataFiles = try external.fileCount()
                return true
            } catch let error as USMError {
                // A file set member that cannot be read: an error, never an empty folder.
                report.problems.append(Problem(.unreadable, error.message, subject: files.externalDataDirectory.path))
                report.readFailure = error
                report.health = .unreadable
                return false
            }
        }
        let ready = depth == .check ? externalDataReady : nil
        if ready == nil {
            guard try countFiles() else { return }
        }
        if depth == .check {
            ProgressNote.say("\(files.main.lastPathComponent): keys, relationships, duplicates, external data")
            report.problems += try PhaseTimings.measure("check: to-one keys") {
                try StoreChecks.toOneProblems(db, schema: schema)
            }
            report.problems += try PhaseTimings.measure("check: join rows") {
                try StoreChecks.joinProblems(db, schema: schema)
            }
        }
        // Duplicates: always in check; in status up to a size where the grouping stays cheap.
        if (depth == .check && checksDuplicates)
            || (findsDuplicates && report.objects <= StoreChecks.statusDuplicateLimit),
            schema.entityTables.allSatisfy({ StoreChecks.isWellShaped($0, schema) })
        {
            report.problems += try StoreChecks.duplicateProblems(db, schema: schema, path: files.main.path)
        }
        if depth == .check {
            if let ready {
                PhaseTimings.measure("check: waiting for the external data") { ready() }
                guard try countFiles() else { return }
            }
            report.problems += try PhaseTimings.measure("check: external data") {
                try external.problems(db, schema: schema)
            }
        }
    }

    // MARK: - Files

    /// The first member of `files` besides the main file that is not of its kind (the `-wal`,
    /// `-shm` and `-journal` regular files, the support folder a folder), judged on what a link
    /// inside the folder leads to; nil when every member present is of its kind.
    static func wrongKindMember(_ files: StoreFileSet) -> USMError? {
        let expected: [(URL, FileStatus.Kind, String)] = [
            (files.wal, .file, "a regular file (the store's -wal)"),
            (files.shm, .file, "a regular file (the store's -shm)"),
            (files.journal, .file, "a regular file (the store's -journal)"),
            (files.supportDirectory, .directory, "a folder (the store's external data)"),
        ]
        for (url, kind, what) in expected {
            guard FileStatus.lookup(url.path) != nil, let status = FileStatus.resolve(url.path), status.kind != kind
            else { continue }
            return .wrongKind(path: url.path, expected: "\(what): it is a \(status.kind.description)")
        }
        return nil
    }

    private func fileEntries(_ files: StoreFileSet) -> [StoreReport.FileEntry] {
        let names = ["main", "wal", "shm", "journal", "support"]
        return zip(names, files.allMembers).compactMap { member, url in
            guard let status = FileStatus.lookup(url.path) else { return nil }
            return .init(member: member, path: url.path, kind: status.kind.rawValue, size: status.size)
        }
    }

    private func failed(_ report: StoreReport, _ error: USMError, health: StoreReport.Health? = nil) -> StoreReport {
        var report = report
        report.readFailure = error
        switch error {
        case .notSQLite, .notCoreData, .wrongKind:
            report.health = health ?? .notCoreData
        case .sqlite:
            report.health = health ?? .damaged
        default:
            report.health = health ?? .unreadable
        }
        // A truncated header is damage, not "some other format".
        if case let .notSQLite(_, reason) = error, reason.contains("truncated") { report.health = .damaged }
        report.problems.append(Problem(error.problemCode, error.message, subject: report.path))
        return report
    }
}
