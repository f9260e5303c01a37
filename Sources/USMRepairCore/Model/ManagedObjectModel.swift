import Foundation
import GRDB
import Synchronization

/// The parts of a Core Data model that matter offline: entities, their parents and relationships.
/// Decoded from the store's own `Z_MODELCACHE` (an NSKeyedArchiver archive, raw-DEFLATE compressed).
public struct ManagedObjectModel: Sendable, Equatable {
    /// One relationship of an entity.
    public struct Relationship: Sendable, Equatable {
        /// The relationship's name as in the model (`owner`).
        public let name: String
        /// The destination entity's name.
        public let destination: String
        /// True for a to-many relationship.
        public let isToMany: Bool
        /// True for an ordered to-many relationship (NSOrderedSet).
        public let isOrdered: Bool
        /// The inverse relationship's name, if any.
        public let inverse: String?
    }

    /// One entity.
    public struct Entity: Sendable, Equatable {
        /// The entity name.
        public let name: String
        /// The parent entity's name, nil for a root.
        public let parent: String?
        /// Attribute names (inherited ones included), sorted.
        public let attributes: [String]
        /// Relationships (inherited ones included), sorted by name.
        public let relationships: [Relationship]
        /// Attribute types by name (`String`, `Integer 64`, `Date`...), when the model says (an
        /// Xcode model's XML does; a model cache is read for names only).
        public var attributeTypes: [String: String] = [:]
        /// True for an abstract entity.
        public var isAbstract = false
        /// Uniqueness constraints, each a list of property names.
        public var uniquenessConstraints: [[String]] = []
    }

    /// Every entity, sorted by name.
    public let entities: [Entity]

    /// The entity called `name` (entities are sorted by name).
    public func entity(named name: String) -> Entity? {
        var low = 0
        var high = entities.count
        while low < high {
            let mid = (low + high) / 2
            if entities[mid].name < name { low = mid + 1 } else { high = mid }
        }
        return low < entities.count && entities[low].name == name ? entities[low] : nil
    }

    /// The largest model cache decoded, compressed or inflated. The caches of real stores inflate to
    /// well under 100 KB (75 KB for Apple Notes' 24 entities), so 1 MiB holds a model of some 300
    /// entities. The property-list decoder builds objects of about 140 bytes from every few bytes of
    /// archive, so this cap is what keeps its peak within tens of megabytes; past it, relationships
    /// are taken from the schema instead.
    public static let inflatedLimit = 1 << 20

    /// What reading a store's model cache gave.
    enum CacheOutcome: Equatable, Sendable {
        /// The decoded model.
        case model(ManagedObjectModel)
        /// Larger than `inflatedLimit`, compressed (`bytes`) or once inflated (nil): not decoded.
        case tooLarge(bytes: Int64?)
        /// No cache row, or a NULL one.
        case absent
        /// Bytes that do not decode as a model.
        case unreadable
    }

    /// Reads and decodes the first row of `table` (`Z_MODELCACHE`), fetching the blob only when it
    /// is no larger than the limit.
    static func read(_ db: Database, table: String) -> CacheOutcome {
        let value: BoundedRead.Value?
        do {
            value = try BoundedRead.first(db, column: "Z_CONTENT", table: table, limit: inflatedLimit)
        } catch {
            return .unreadable
        }
        switch value {
        case nil: return .absent
        case let .tooLarge(_, bytes)?: return .tooLarge(bytes: bytes)
        case let .value(value)?:
            if value.isNull { return .absent }
            guard let blob = Data.fromDatabaseValue(value) else { return .unreadable }
            return decode(blob)
        }
    }

    /// Inflates (or takes as is, when already a binary plist) and decodes a cache. The inflated
    /// archive is dropped as soon as the property list is parsed, so at most the compressed bytes,
    /// the archive and the parsed objects are alive at once.
    static func decode(_ blob: Data) -> CacheOutcome {
        if let known = DecodedCaches.shared.outcome(for: blob) { return known }
        let outcome = decodeOnce(blob)
        DecodedCaches.shared.remember(outcome, for: blob)
        return outcome
    }

    /// `decode` without the memory of earlier decodings.
    static func decodeOnce(_ blob: Data) -> CacheOutcome {
        let archive: Data
        do {
            archive = try Inflate.inflate(blob, limit: inflatedLimit)
        } catch .tooLarge {
            return .tooLarge(bytes: nil)
        } catch {
            guard blob.starts(with: Array("bplist00".utf8)) else { return .unreadable }
            guard blob.count <= inflatedLimit else { return .tooLarge(bytes: Int64(blob.count)) }
            archive = blob
        }
        guard let plist = try? PropertyListSerialization.propertyList(from: archive, options: [], format: nil),
            let root = plist as? [String: Any],
            let objects = root["$objects"] as? [Any],
            let model = KeyedArchive(objects: objects).model()
        else { return .unreadable }
        return .model(model)
    }
}

/// The model caches this process has decoded, by their exact bytes. A layout's stores (the local
/// store, each cloud copy, the seeding copies) and every store a command reads again carry the same
/// cache, and decoding it (inflate, property list, keyed archive) costs far more than comparing
/// bytes. Bounded: past `byteLimit` of remembered caches it starts again from empty.
private final class DecodedCaches: Sendable {
    static let shared = DecodedCaches()
    static let byteLimit = 8 << 20

    private let state = Mutex<(outcomes: [Data: ManagedObjectModel.CacheOutcome], bytes: Int)>(([:], 0))

    func outcome(for blob: Data) -> ManagedObjectModel.CacheOutcome? {
        state.withLock { $0.outcomes[blob] }
    }

    func remember(_ outcome: ManagedObjectModel.CacheOutcome, for blob: Data) {
        state.withLock { state in
            if state.bytes + blob.count > Self.byteLimit { state = ([:], 0) }
            guard blob.count <= Self.byteLimit, state.outcomes[blob] == nil else { return }
            state.outcomes[blob] = outcome
            state.bytes += blob.count
        }
    }
}

/// A minimal reader of NSKeyedArchiver output: follows `CF$UID` references through `$objects`.
private struct KeyedArchive {
    let objects: [Any]

    func object(_ ref: Any?) -> Any? {
        guard let index = KeyedArchive.uid(ref), index > 0, index < objects.count else { return nil }
        return objects[index]
    }

    func string(_ ref: Any?) -> String? { object(ref) as? String }

    func className(_ dict: [String: Any]) -> String? {
        (object(dict["$class"]) as? [String: Any])?["$classname"] as? String
    }

    /// Dictionary-like objects (NSDictionary, NSKnownKeysDictionary1) as name → object.
    func dictionary(_ ref: Any?) -> [(String, [String: Any])] {
        guard let dict = object(ref) as? [String: Any] else { return [] }
        let keys = (dict["NS.keys"] as? [Any]) ?? []
        let values = (dict["NS.objects"] as? [Any]) ?? []
        var out: [(String, [String: Any])] = []
        for (k, v) in zip(keys, values) {
            if let key = string(k), let value = object(v) as? [String: Any] { out.append((key, value)) }
        }
        return out
    }

    func model() -> ManagedObjectModel? {
        var entities: [String: ManagedObjectModel.Entity] = [:]
        for case let dict as [String: Any] in objects where className(dict) == "NSEntityDescription" {
            guard let name = string(dict["NSEntityName"]) else { continue }
            let parent = (object(dict["NSSuperentity"]) as? [String: Any]).flatMap { string($0["NSEntityName"]) }
            var attributes: [String] = []
            var relationships: [ManagedObjectModel.Relationship] = []
            for (propertyName, property) in dictionary(dict["NSProperties"]) {
                switch className(property) {
                case "NSAttributeDescription":
                    attributes.append(propertyName)
                case "NSRelationshipDescription":
                    let destination =
                        string(property["_NSDestinationEntityName"])
                        ?? (object(property["NSDestinationEntity"]) as? [String: Any]).flatMap {
                            string($0["NSEntityName"])
                        }
                    guard let destination else { continue }
                    let maxCount = (property["NSMaxCount"] as? Int) ?? 0
                    relationships.append(
                        .init(
                            name: propertyName,
                            destination: destination,
                            isToMany: maxCount != 1,
                            isOrdered: (property["NSIsOrdered"] as? Bool) ?? false,
                            inverse: string(property["_NSInverseRelationshipName"])))
                default:
                    continue
                }
            }
            entities[name] = .init(
                name: name, parent: parent, attributes: attributes.sorted(),
                relationships: relationships.sorted { $0.name < $1.name })
        }
        guard !entities.isEmpty else { return nil }
        return ManagedObjectModel(entities: entities.values.sorted { $0.name < $1.name })
    }

    /// Extracts the integer of a `CF$UID` value as PropertyListSerialization presents it on each platform.
    static func uid(_ value: Any?) -> Int? {
        guard let value else { return nil }
        if let dict = value as? [String: Any], let n = dict["CF$UID"] as? Int { return n }
        // Foundation represents UIDs with a private class: on Linux `_NSKeyedArchiverUID` with a
        // `value` property, on Darwin a CFKeyedArchiverUID whose description ends in `{value = N}`.
        guard !(value is String), !(value is [Any]), !(value is [String: Any]), !(value is Data) else { return nil }
        for child in Mirror(reflecting: value).children where child.label == "value" {
            if let n = child.value as? UInt32 { return Int(n) }
            if let n = child.value as? Int { return n }
            if let n = child.value as? UInt64 { return Int(n) }
        }
        let text = String(describing: value)
        if text.contains("KeyedArchiverUID"), let range = text.range(of: "value = ") {
            return Int(text[range.upperBound...].prefix { $0.isNumber })
        }
        return nil
    }
}

extension ManagedObjectModel {
    /// The `Z_ENT` number Core Data gives each entity, with its parent's (0 for a root): depth
    /// first from the root entities in name order, each entity's sub-entities in name order,
    /// from 1; names compare without case (`NetworkAttachment` before `NWActivityFragment`). Read
    /// off every store of the corpus with a model cache; used only where the numbers agree with
    /// the rows found.
    public func entityNumbers() -> [String: (number: Int, superNumber: Int)] {
        var children: [String: [String]] = [:]
        var roots: [String] = []
        let names = Set(entities.map(\.name))
        for entity in entities {
            if let parent = entity.parent, names.contains(parent), parent != entity.name {
                children[parent, default: []].append(entity.name)
            } else {
                roots.append(entity.name)
            }
        }
        var result: [String: (number: Int, superNumber: Int)] = [:]
        var next = 1
        func visit(_ name: String, parent: Int) {
            guard result[name] == nil else { return }
            let number = next
            next += 1
            result[name] = (number, parent)
            for child in (children[name] ?? []).sorted(by: Self.coreDataOrder) { visit(child, parent: number) }
        }
        for root in roots.sorted(by: Self.coreDataOrder) { visit(root, parent: 0) }
        return result
    }

    /// Core Data's order of entity names: without case, then with it.
    static func coreDataOrder(_ a: String, _ b: String) -> Bool {
        let (x, y) = (a.lowercased(), b.lowercased())
        return x != y ? x < y : a < b
    }
}
