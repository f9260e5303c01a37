import Foundation
#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The app's own model, given with `--model`: an Xcode model (`Foo.xcdatamodeld`, its current
/// version as `.xccurrentversion` names it, or one `Foo.xcdatamodel`, or its `contents` XML) or a
/// compiled one (`Foo.momd`, its current version as `VersionInfo.plist` names it, or one `.mom`:
/// the same NSKeyedArchiver archive as a store's `Z_MODELCACHE`, read by the same decoder). Where a
/// store holds no model cache it says where each relationship points.
public enum ModelFile {
    /// The largest model file read (models are kilobytes; a megabyte is hundreds of entities).
    static let sizeLimit = 16 << 20
    /// The deepest nesting of a `contents` XML read (a model nests five deep: model, entity,
    /// uniquenessConstraints, uniquenessConstraint, constraint) and the most elements: past either
    /// the model is refused (`model-invalid`, exit 2) as soon as the parser reaches it, so memory
    /// does not grow with a hostile file's nesting.
    public static let maxDepth = 64
    public static let maxElements = 1_000_000

    /// Reads the model at `url`.
    /// - Throws: `notFound`; `modelInvalid` (exit 2) for anything that is not a model this reads.
    public static func load(_ url: URL) throws -> ManagedObjectModel {
        guard let status = FileStatus.resolve(url.path) else { throw USMError.notFound(path: url.path, what: "model") }
        let ext = url.pathExtension.lowercased()
        if status.kind == .directory {
            switch ext {
            case "xcdatamodeld":
                let name =
                    try currentVersion(url.appendingPathComponent(".xccurrentversion"), key: "_XCCurrentVersionName")
                    ?? onlyChild(url, ext: "xcdatamodel")
                return try xml(url.appendingPathComponent(name).appendingPathComponent("contents"))
            case "xcdatamodel":
                return try xml(url.appendingPathComponent("contents"))
            case "momd":
                let name =
                    try currentVersion(
                        url.appendingPathComponent("VersionInfo.plist"), key: "NSManagedObjectModel_CurrentVersionName"
                    )
                    .map { $0 + ".mom" } ?? onlyChild(url, ext: "mom")
                return try compiled(url.appendingPathComponent(name))
            default:
                throw USMError.modelInvalid(
                    path: url.path, reason: "a folder that is not an .xcdatamodeld, .xcdatamodel or .momd")
            }
        }
        return ext == "mom" ? try compiled(url) : try xml(url)
    }

    /// The version a versioned model's plist names, nil when there is no such plist.
    private static func currentVersion(_ plist: URL, key: String) throws -> String? {
        guard FileStatus.resolve(plist.path) != nil else { return nil }
        let data = try read(plist)
        guard
            let dict = (try? PropertyListSerialization.propertyList(from: data, options: [], format: nil))
                as? [String: Any],
            let name = dict[key] as? String, !name.isEmpty, !name.contains("/"), name != "..", name != "."
        else { throw USMError.modelInvalid(path: plist.path, reason: "it does not name the current version (\(key))") }
        return name
    }

    /// The one child of `folder` with extension `ext`.
    private static func onlyChild(_ folder: URL, ext: String) throws -> String {
        let names = ((try? DirectoryListing.names(folder.path)) ?? []).filter { $0.lowercased().hasSuffix("." + ext) }
        guard names.count == 1, let name = names.first else {
            throw USMError.modelInvalid(
                path: folder.path,
                reason: names.isEmpty
                    ? "it holds no .\(ext)" : "it holds \(names.count) versions and does not say which is current")
        }
        return name
    }

    private static func read(_ url: URL) throws -> Data {
        guard let status = FileStatus.resolve(url.path) else { throw USMError.notFound(path: url.path, what: "model") }
        guard status.kind == .file else { throw USMError.modelInvalid(path: url.path, reason: "not a file") }
        guard status.size <= Int64(sizeLimit) else {
            throw USMError.modelInvalid(path: url.path, reason: "\(status.size) bytes, more than a model")
        }
        do {
            return try Data(contentsOf: url)
        } catch {
            throw USMError.unreadable(path: url.path, reason: USMError.wrap(error).message)
        }
    }

    private static func compiled(_ url: URL) throws -> ManagedObjectModel {
        let data = try read(url)
        guard case let .model(model) = ManagedObjectModel.decode(data) else {
            throw USMError.modelInvalid(
                path: url.path,
                reason: "not a compiled Core Data model (an NSKeyedArchiver archive of NSManagedObjectModel)")
        }
        return model
    }

    private static func xml(_ url: URL) throws -> ManagedObjectModel {
        let data = try read(url)
        if let start = EmptyInstructionScan.first(in: data) {
            throw USMError.modelInvalid(path: url.path, reason: EmptyInstructionScan.problem(at: start))
        }
        let reader = ModelXMLReader()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        let parsed = parser.parse()
        if let limit = reader.limit { throw USMError.modelInvalid(path: url.path, reason: limit) }
        guard parsed, reader.sawModel else {
            let why = parser.parserError.map { "\($0.localizedDescription)" } ?? "no <model> element"
            throw USMError.modelInvalid(path: url.path, reason: "not an Xcode model's contents XML (\(why))")
        }
        guard let model = reader.model() else {
            throw USMError.modelInvalid(path: url.path, reason: reader.problem ?? "it declares no entity")
        }
        return model
    }
}

/// Collects the entities of a `contents` file as the XML parser reports them.
private final class ModelXMLReader: NSObject, XMLParserDelegate {
    struct Pending {
        var name: String
        var parent: String?
        var abstract = false
        var attributes: [String] = []
        var types: [String: String] = [:]
        var relationships: [ManagedObjectModel.Relationship] = []
        var constraints: [[String]] = []
    }

    var sawModel = false
    var problem: String?
    /// Set when the file passed `maxDepth` or `maxElements` (parsing stopped there).
    var limit: String?
    private var depth = 0
    private var elements = 0
    private var entities: [Pending] = []
    private var current: Pending?
    private var constraint: [String]?

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        depth += 1
        elements += 1
        guard depth <= ModelFile.maxDepth, elements <= ModelFile.maxElements else {
            if limit == nil {
                limit =
                    depth > ModelFile.maxDepth
                    ? "elements nested more than \(ModelFile.maxDepth) deep (a model nests five)"
                    : "more than \(ModelFile.maxElements) elements"
            }
            parser.abortParsing()
            return
        }
        switch name {
        case "model":
            sawModel = true
        case "entity":
            guard let entity = attributes["name"], !entity.isEmpty else {
                problem = "an <entity> without a name"
                return
            }
            current = Pending(
                name: entity, parent: attributes["parentEntity"], abstract: attributes["isAbstract"] == "YES")
        case "attribute":
            guard let property = attributes["name"], attributes["transient"] != "YES" else { return }
            current?.attributes.append(property)
            current?.types[property] = attributes["attributeType"] ?? "Undefined"
        case "relationship":
            guard let property = attributes["name"], let destination = attributes["destinationEntity"],
                attributes["transient"] != "YES"
            else { return }
            current?.relationships.append(
                .init(
                    name: property, destination: destination, isToMany: attributes["toMany"] == "YES",
                    isOrdered: attributes["ordered"] == "YES",
                    inverse: attributes["inverseName"]))
        case "uniquenessConstraint":
            constraint = []
        case "constraint":
            if let value = attributes["value"] { constraint?.append(value) }
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
        switch name {
        case "entity":
            if let current { entities.append(current) }
            current = nil
        case "uniquenessConstraint":
            if let constraint, !constraint.isEmpty { current?.constraints.append(constraint) }
            constraint = nil
        default:
            break
        }
    }

    /// The model, each entity with the properties it inherits.
    func model() -> ManagedObjectModel? {
        guard !entities.isEmpty, problem == nil else { return nil }
        var byName: [String: Pending] = [:]
        for entity in entities where byName[entity.name] == nil { byName[entity.name] = entity }
        let result = byName.values.map { entity -> ManagedObjectModel.Entity in
            var attributes = entity.attributes
            var types = entity.types
            var relationships = entity.relationships
            var ancestor = entity.parent
            var seen: Set<String> = [entity.name]
            while let name = ancestor, seen.insert(name).inserted, let parent = byName[name] {
                attributes += parent.attributes
                relationships += parent.relationships
                types.merge(parent.types) { own, _ in own }
                ancestor = parent.parent
            }
            var model = ManagedObjectModel.Entity(
                name: entity.name, parent: entity.parent, attributes: Array(Set(attributes)).sorted(),
                relationships: relationships.sorted { $0.name < $1.name })
            model.attributeTypes = types
            model.isAbstract = entity.abstract
            model.uniquenessConstraints = entity.constraints
            return model
        }
        return ManagedObjectModel(entities: result.sorted { $0.name < $1.name })
    }
}
