import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum SalvageReadFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// A damaged store's file set as `salvage` reads it, without SQLite: the input is the main file,
/// and, after the separator `USMWAL!!`, its `-wal`. The reader opens it (header or page-size
/// probe, WAL index), walks the freelist, `sqlite_schema` and every table its rows name, and scans
/// every page for orphaned leaves. Errors must be usm-repair's; each page is read a bounded number
/// of times; nothing is written but the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    let separator = Array("USMWAL!!".utf8)
    var main = bytes[...], wal: ArraySlice<UInt8>?
    // A plain scan: an array per position (as `first(where:)` with `Array(...)` made) cost most of
    // each run under ASan.
    var found: Int?
    var at = 0
    while found == nil, at + separator.count <= bytes.count {
        if bytes[at] == separator[0], bytes[at..<(at + separator.count)].elementsEqual(separator) { found = at }
        at += 1
    }
    if let cut = found {
        main = bytes[..<cut]
        wal = bytes[(cut + separator.count)...]
    }
    let url = Fuzz.write(Array(main), to: "store.sqlite")
    let walURL = URL(fileURLWithPath: url.path + "-wal")
    if let wal { Fuzz.write(Array(wal), to: "store.sqlite-wal") } else { try? FileManager.default.removeItem(at: walURL) }
    Fuzz.expectDocumented("DamagedStore") {
        let store = try DamagedStore(files: StoreFileSet(main: url))
        store.readFreelist()
        let collector = SchemaCollector(encoding: store.header.encoding)
        var tables = [SalvageTable.schema]
        var rows = [SalvageReport.TableRows(name: "sqlite_schema")]
        store.walk(0, tables: &tables, rows: &rows, sink: collector)
        var scan = DamagedStore.ScanResult()
        store.scanOrphans(eligible: [0], tables: tables, rows: &rows, sink: collector, final: false, result: &scan)
        // Every table the schema names, as 64 columns that take anything.
        let any = (0..<64).map { SalvageTable.Column(name: "c\($0)", affinity: .blob) }
        for row in collector.ordered.prefix(32) where row.type == "table" {
            tables.append(SalvageTable(name: row.name, columns: any, rowidColumn: nil, root: row.rootPage == 0 ? nil : row.rootPage))
            rows.append(.init(name: row.name))
        }
        let counter = Counter()
        for index in tables.indices.dropFirst() { store.walk(index, tables: &tables, rows: &rows, sink: counter) }
        store.scanOrphans(eligible: Array(tables.indices.dropFirst()), tables: tables, rows: &rows, sink: counter, result: &scan)
        Fuzz.check(store.visited.count <= store.pageCount, "more pages taken than the database has")
        // Each page at most: the schema scan, the tree walk or final scan, its overflow re-read, a map page.
        Fuzz.check(store.reads <= 4 * store.pageCount + 8, "\(store.reads) reads of \(store.pageCount) pages")
        Fuzz.check(rows.allSatisfy { $0.salvaged >= 0 && $0.fromOrphanPages <= $0.salvaged }, "row counts that do not add up")
    }
    return 0
}

/// Takes every row and counts it.
final class Counter: RowSink {
    var rows = 0
    func store(table: Int, rowid: Int64, fields: [FieldValue], record: ByteView, orphan: UInt32?) -> SinkOutcome {
        for case let .text(r) in fields { Fuzz.check(r.upperBound <= record.count, "a text value past its record") }
        for case let .blob(r) in fields { Fuzz.check(r.upperBound <= record.count, "a blob value past its record") }
        rows += 1
        return .stored
    }

    func remove(table: Int, range: ClosedRange<Int64>) -> Int { 0 }
}
