import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

/// Templates built once per test process and copied by every test that asks for the same thing
/// (periphery builds its fixture once per class; here once per run): a fixture store of given
/// options is written by SQLite the first time only. The templates live in a private folder of
/// this process under `TMPDIR`, removed when the process exits.
public enum FixtureCache {
    private static let state = Mutex<[String: URL]>([:])
    /// Serialises building: two tests asking for one template wait for the one build.
    private static let building = Mutex(())

    /// The folder holding every template of this process.
    static let folder: URL = {
        let url = TestTemporary.base.appendingPathComponent(
            "usm-fixture-cache-\(getpid())", isDirectory: true)
        try? FileManager.default.removeItem(at: url)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FixtureCache.folder) }
        return url
    }()

    /// The template folder of `kind` built for `key`: `build` fills an empty folder the first time.
    public static func template<Key: Hashable>(_ kind: String, _ key: Key, build: (URL) throws -> Void) throws -> URL {
        let name = "\(kind) \(String(reflecting: key))"
        if let found = state.withLock({ $0[name] }) { return found }
        return try building.withLock { _ in
            if let found = state.withLock({ $0[name] }) { return found }
            let url = folder.appendingPathComponent("\(kind)-\(state.withLock { $0.count })", isDirectory: true)
            try? FileManager.default.removeItem(at: url)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try build(url)
            state.withLock { $0[name] = url }
            return url
        }
    }
}
