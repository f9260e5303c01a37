import Foundation

/// A private folder under the system temporary directory (`TMPDIR`), removed when released.
/// Read-only inspection copies stores here so that the user's folders are never written.
public final class TemporaryDirectory {
    /// The folder's location.
    public let url: URL

    /// Creates a fresh, private (0700) folder whose name starts with `prefix`.
    public init(prefix: String = "usm-repair") throws {
        let base = FileManager.default.temporaryDirectory
        let candidate = base.appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        do {
            // Never create the base: a TMPDIR that does not exist is the user's to fix.
            try FileManager.default.createDirectory(
                at: candidate, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw USMError.writeFailed(
                path: candidate.path,
                reason: "cannot create a private temporary folder (set TMPDIR to a writable folder with space): \(error.localizedDescription)")
        }
        url = candidate
    }

    /// Removes the folder now (also done on deinit).
    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    deinit { remove() }
}
