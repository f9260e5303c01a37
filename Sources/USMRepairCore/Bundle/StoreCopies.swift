import Foundation

/// The stores a bundle holds, copied into a private folder while the bundle is verified, then
/// opened read-only and compared with the manifest's `stores` list: the same `Z_UUID`, the same
/// rows per entity. A store swapped for another, with its file records and sidecar rewritten to
/// match, still fails here unless the `stores` list was rewritten too (a bundle carries no
/// signature; see the README).
final class StoreCopies {
    let folder: URL
    /// Archive path bytes → (store index in the manifest, suffix of the member).
    private var members: [[UInt8]: (Int, String)]?
    /// Store index → the copy of its main file.
    private var mains: [Int: URL] = [:]

    init(folder: URL) { self.folder = folder }

    /// Where to copy the entry at `path` when it is a store's main file, `-wal` or `-journal`; nil otherwise.
    func destination(for path: String, manifest: ManifestHeader) throws -> URL? {
        if members == nil {
            var map: [[UInt8]: (Int, String)] = [:]
            for (i, store) in manifest.stores.enumerated() {
                for suffix in ["", "-wal", "-journal"] { map[(store.path + suffix).pathKey] = (i, suffix) }
            }
            members = map
        }
        guard let (index, suffix) = members?[path.pathKey] else { return nil }
        let dir = folder.appendingPathComponent("\(index)", isDirectory: true)
        try FileManager.default.createDirectory(
            at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let main = dir.appendingPathComponent("store.sqlite")
        if suffix.isEmpty { mains[index] = main }
        let target = URL(fileURLWithPath: main.path + suffix)
        // An entry seen twice is refused by the scanner before this; never write over a copy.
        guard FileStatus.lookup(target.path) == nil else { return nil }
        return target
    }

    /// Opens each copied store and reports every difference from the manifest; returns how many were checked.
    /// - Throws: the I/O error (or want of room) that stopped a copy from being read: that says
    ///   nothing about the archive.
    func compare(with stores: [BundleStore], report: (BundleMismatch) -> Void) throws -> Int {
        var checked = 0
        for (index, store) in stores.enumerated() {
            guard let main = mains[index] else {
                report(
                    BundleMismatch(
                        path: store.path, problem: "the manifest lists this store, but the archive does not hold it"))
                continue
            }
            checked += 1
            let files = StoreFileSet(main: main)
            let journal = FileStatus.lookup(files.journal.path) != nil
            let found = StoreInspector(depth: .status).inspect(
                files, role: .store, confinement: Confinement(root: folder), privateCopy: journal ? nil : main)
            func differs(_ text: String) { report(BundleMismatch(path: store.path, problem: text)) }
            if let failure = found.readFailure, [.ioError, .outOfSpace].contains(failure.exitStatus) {
                throw failure.diagnosingSpace()
            }
            guard found.health == .ok || found.health == .damaged, found.readFailure == nil else {
                differs(
                    "the store in the archive cannot be read as Core Data (\(found.readFailure?.message ?? found.health.rawValue))"
                )
                continue
            }
            if found.storeUUID != store.storeUUID {
                differs(
                    "the store's Z_UUID \(found.storeUUID ?? "none") differs from the manifest's \(store.storeUUID ?? "none")"
                )
            }
            var inStore: [String: Int] = [:]
            for entity in found.entities { inStore[entity.name, default: 0] += entity.rows }
            if store.captured == "metadata-only-copy" {
                // Rows were left out on purpose; the manifest keeps the original counts.
                let rows = inStore.values.reduce(0, +)
                if rows != 0 { differs("a metadata-only store holds \(rows) rows") }
                continue
            }
            for name in Set(inStore.keys).union(store.rows.keys).sorted() {
                let have = inStore[name]
                let want = store.rows[name]
                if have != want {
                    differs(
                        "entity \(name) has \(have.map(String.init) ?? "no") rows in the store, the manifest says \(want.map(String.init) ?? "none")"
                    )
                }
            }
        }
        return checked
    }
}
