import Foundation

/// A private folder under the system temporary directory (`TMPDIR`), removed when released.
/// Read-only inspection copies stores here so that the user's folders are never written. The
/// folder is a scratch item (`Scratch`): a run killed before releasing it leaves it to the next
/// run, which removes it.
public final class TemporaryDirectory: Sendable {
    /// The folder's location.
    public let url: URL
    private let item: ScratchItem
    private let registry: Scratch

    /// Creates a fresh, private (0700) folder whose name starts with `prefix`.
    public init(prefix: String = "usm-repair", registry: Scratch = .current) throws {
        // Never create the base: a TMPDIR that does not exist is the user's to fix.
        let base = registry.temporaryDirectory
        do {
            item = try registry.makeDirectory(in: base, name: "\(prefix)-\(UUID().uuidString)")
        } catch let error as USMError {
            guard case let .writeFailed(path, reason) = error else { throw error }
            throw USMError.writeFailed(
                path: path,
                reason:
                    "cannot create a private temporary folder (set TMPDIR to a writable folder with space): \(reason)")
        }
        url = item.url
        self.registry = registry
    }

    /// Removes the folder now (also done on deinit).
    public func remove() {
        registry.release(item)
    }

    deinit { remove() }
}
