import Crypto
import Foundation

/// Where a store's data came from, recorded by usm-repair in the store's own metadata
/// (`Z_METADATA.Z_PLIST`, under `USMRepairProvenance`, a key Core Data keeps as it keeps every
/// metadata key it does not know): one entry per migration or merge that wrote the store, with the
/// source store's UUID and the digest of its content. A second run of the same migration reads it
/// and has nothing to do; a merge of data already merged is recognised without comparing rows.
public struct Provenance: Sendable, Equatable {
    /// The metadata key.
    public static let metadataKey = "USMRepairProvenance"
    /// Entries kept (the newest).
    static let kept = 20

    /// One migration or merge into the store.
    public struct Entry: Sendable, Equatable, Codable {
        /// The command (`migrate cloud-to-local`, `migrate-store`...).
        public let operation: String
        /// `create`, `overwrite` (a new store replacing one) or `merge`.
        public let mode: String
        /// The source's `Z_METADATA.Z_UUID`.
        public let sourceStoreUUID: String?
        /// `sha256:` and the hex of the source's content digest (`Provenance.digest`).
        public let sourceDigest: String
        public let strategy: String
        /// ISO 8601, UTC.
        public let date: String
        /// `usm-repair <version>`.
        public let tool: String
    }

    /// The entries a metadata dictionary holds, oldest first (none when the key is absent or not ours).
    public static func entries(in metadata: [String: Any]) -> [Entry] {
        guard let list = metadata[metadataKey] as? [Any] else { return [] }
        return list.compactMap { item in
            guard let dict = item as? [String: Any], let operation = dict["operation"] as? String,
                let mode = dict["mode"] as? String,
                let digest = dict["sourceDigest"] as? String, let strategy = dict["strategy"] as? String,
                let date = dict["date"] as? String, let tool = dict["tool"] as? String
            else { return nil }
            return Entry(
                operation: operation, mode: mode, sourceStoreUUID: dict["sourceStoreUUID"] as? String,
                sourceDigest: digest,
                strategy: strategy, date: date, tool: tool)
        }
    }

    /// The entries of a `Z_PLIST`.
    public static func entries(inPlist data: Data?) -> [Entry] {
        guard let data,
            let dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: nil))
                as? [String: Any]
        else {
            return []
        }
        return entries(in: dict)
    }

    /// The metadata value of `entries` (strings only, so JSON and property lists hold it alike).
    static func value(_ entries: [Entry]) -> [[String: String]] {
        entries.suffix(kept).map { entry in
            var dict = [
                "operation": entry.operation, "mode": entry.mode, "sourceDigest": entry.sourceDigest,
                "strategy": entry.strategy,
                "date": entry.date, "tool": entry.tool,
            ]
            if let uuid = entry.sourceStoreUUID { dict["sourceStoreUUID"] = uuid }
            return dict
        }
    }

    /// The digest of a store's content: every user entity's row count and order-free content sum
    /// (`ContentDigest`, over its attribute columns, keys left out), hashed in entity-name order.
    static func digest(_ digests: [String: ContentDigest], userEntities: Set<String>) -> String {
        var text = ""
        for name in digests.keys.sorted() where userEntities.contains(name) {
            guard let digest = digests[name] else { continue }
            text += "\(name)\t\(digest.rows)\t\(digest.sum)\n"
        }
        return "sha256:" + SHA256.hash(data: Data(text.utf8)).hex
    }

    /// The content digest of the store whose consistent private copy is `copy`.
    static func digest(ofCopy copy: URL, schema: CoreDataSchema) throws -> String {
        digest(try ContentDigest.read(copy, schema: schema).digests, userEntities: Set(schema.userEntities.map(\.name)))
    }
}
