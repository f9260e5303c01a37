import Foundation
import USMRepairCore

/// A recipe: the declarative input of the `manual` strategy, one JSON file (`Recipes/<id>.json`,
/// with `<id>.md` beside it). Decoded with Codable; see Recipes/README.md for the format.
public struct Recipe: Codable, Sendable, Equatable {
    /// The highest `formatVersion` this usm-repair reads.
    public static let highestFormatVersion = 1
    /// The value of `format`.
    public static let formatName = "usm-repair-recipe"

    /// A value a recipe step may set in the metadata.
    public enum Value: Codable, Sendable, Equatable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case array([Value])
        case object([String: Value])

        public init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let b = try? c.decode(Bool.self) {
                self = .bool(b)
            } else if let n = try? c.decode(Double.self) {
                self = .number(n)
            } else if let s = try? c.decode(String.self) {
                self = .string(s)
            } else if let a = try? c.decode([Value].self) {
                self = .array(a)
            } else if let o = try? c.decode([String: Value].self) {
                self = .object(o)
            } else {
                throw DecodingError.dataCorruptedError(
                    in: c, debugDescription: "null and other values cannot go into store metadata")
            }
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case let .string(s): try c.encode(s)
            case let .number(n): try c.encode(n)
            case let .bool(b): try c.encode(b)
            case let .array(a): try c.encode(a)
            case let .object(o): try c.encode(o)
            }
        }
    }

    /// A parameter the recipe takes (`--param NAME=VALUE`).
    public struct Parameter: Codable, Sendable, Equatable {
        /// The name.
        public var name: String
        /// One sentence.
        public var summary: String
        /// Used when `--param` does not give one; without it the parameter is required.
        public var `default`: String?
    }

    /// One step: exactly one action, and the reason it is there.
    public struct Step: Codable, Sendable, Equatable {
        /// Why the step is there (required).
        public var why: String
        /// `store` (a whole-store copy; first step of a new store only) or `entities` (an entity copy).
        public var copy: String?
        /// With `copy: entities`: only these source entities.
        public var only: [String]?
        /// With `copy: entities`: all but these.
        public var except: [String]?
        /// With `copy: entities`: source entity → destination entity.
        public var rename: [String: String]?
        /// SQL run with the source attached as `src` and the destination as `main`; `:name` binds a parameter.
        public var sql: String?
        /// Metadata keys to set.
        public var setMetadata: [String: Value]?
        /// Metadata keys to remove (a trailing `*` matches any suffix).
        public var removeMetadata: [String]?
        /// Set every `Z_MAX` to at least the largest key in use.
        public var fixCounters: Bool?
        /// Empty these tables (a trailing `*` matches any suffix) and set their entities' `Z_MAX` to 0.
        public var clearTables: [String]?

        /// What a step does: the key it names.
        public enum Action: String, Sendable, CaseIterable {
            case copy, sql, setMetadata, removeMetadata, fixCounters, clearTables
        }

        /// The one action the step names, or nil when it names none or several.
        public var action: Action? {
            let set: [Action] = [
                copy != nil ? .copy : nil, sql != nil ? .sql : nil, setMetadata != nil ? .setMetadata : nil,
                removeMetadata != nil ? .removeMetadata : nil, fixCounters == true ? .fixCounters : nil,
                clearTables != nil ? .clearTables : nil,
            ].compactMap { $0 }
            return set.count == 1 ? set[0] : nil
        }
    }

    /// Always `usm-repair-recipe`.
    public var format: String
    /// The format's version (1).
    public var formatVersion: Int
    /// The recipe's id (its file name without `.json`).
    public var id: String
    /// One sentence.
    public var summary: String
    /// The recipe's own version.
    public var version: String
    /// The parameters it takes.
    public var parameters: [Parameter]?
    /// The ordered steps.
    public var steps: [Step]
}

/// A recipe found and read: the decoded value, where it came from and its SHA-256.
public struct LoadedRecipe: Sendable {
    /// The decoded recipe.
    public let recipe: Recipe
    /// Where it was read from.
    public let url: URL
    /// The file's SHA-256.
    public let sha256: String

    /// Finds and reads a recipe. A reference containing `/` or ending in `.json` is a path;
    /// otherwise `<reference>.json` is looked up in `search`, in order.
    /// - Throws: `notFound` when there is no such recipe, `recipeInvalid` when it does not decode
    ///   or has an unsupported format version or malformed steps.
    /// The largest recipe file read.
    public static let maxBytes: Int64 = 1 << 20

    public static func load(_ reference: String, search: [URL]) throws -> LoadedRecipe {
        let url: URL
        if reference.contains("/") || reference.hasSuffix(".json") {
            url = URL(fileURLWithPath: (reference as NSString).expandingTildeInPath)
            guard FileStatus.resolve(url.path)?.kind == .file else {
                throw USMError.notFound(path: url.path, what: "recipe")
            }
        } else {
            guard
                let found = search.map({ $0.appendingPathComponent(reference + ".json") })
                    .first(where: { FileStatus.resolve($0.path)?.kind == .file })
            else {
                let looked = search.map {
                    FileStatus.resolve($0.path)?.kind == .directory ? $0.path : "\($0.path) (absent)"
                }
                // The name first, then where it was looked for: "recipe X not found: looked in ...".
                throw USMError.notFound(
                    path:
                        "looked in \(looked.isEmpty ? "no folder (set USM_REPAIR_RECIPES)" : looked.joined(separator: ", "))",
                    what: "recipe \(reference)")
            }
            url = found
        }
        // A recipe is a short list of steps: a file this large is not one (and is never read whole).
        if let size = FileStatus.resolve(url.path)?.size, size > maxBytes {
            throw USMError.recipeInvalid(
                path: url.path, reason: "it is \(size) bytes; a recipe is at most \(maxBytes) bytes")
        }
        // Read through a handle, at most one byte past the limit: a file that grew since it was
        // measured is still not read whole.
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            data = try handle.read(upToCount: Int(maxBytes) + 1) ?? Data()
        } catch { throw USMError.wrap(error, path: url.path) }
        guard data.count <= maxBytes else {
            throw USMError.recipeInvalid(
                path: url.path, reason: "it is larger than \(maxBytes) bytes; a recipe is at most \(maxBytes) bytes")
        }
        let recipe: Recipe
        do {
            recipe = try JSONDecoder().decode(Recipe.self, from: data)
        } catch let error as DecodingError {
            throw USMError.recipeInvalid(path: url.path, reason: Self.describe(error))
        } catch {
            throw USMError.recipeInvalid(path: url.path, reason: "\(error)")
        }
        try validate(recipe, path: url.path)
        return LoadedRecipe(recipe: recipe, url: url, sha256: try FileDigest.sha256(of: url))
    }

    static func validate(_ recipe: Recipe, path: String) throws {
        guard recipe.format == Recipe.formatName else {
            throw USMError.recipeInvalid(
                path: path, reason: "format is \(recipe.format.debugDescription), not \"\(Recipe.formatName)\"")
        }
        guard recipe.formatVersion >= 1, recipe.formatVersion <= Recipe.highestFormatVersion else {
            throw USMError.recipeInvalid(
                path: path,
                reason:
                    "formatVersion \(recipe.formatVersion) is not one this usm-repair reads (highest: \(Recipe.highestFormatVersion))"
            )
        }
        guard !recipe.steps.isEmpty else { throw USMError.recipeInvalid(path: path, reason: "it has no steps") }
        for (i, step) in recipe.steps.enumerated() {
            guard let action = step.action else {
                throw USMError.recipeInvalid(
                    path: path,
                    reason:
                        "step \(i + 1) must name exactly one of copy, sql, setMetadata, removeMetadata, fixCounters, clearTables"
                )
            }
            guard !step.why.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw USMError.recipeInvalid(path: path, reason: "step \(i + 1) has no why")
            }
            if action == .copy {
                guard step.copy == "store" || step.copy == "entities" else {
                    throw USMError.recipeInvalid(
                        path: path, reason: "step \(i + 1): copy must be \"store\" or \"entities\"")
                }
                if step.copy == "store", i != 0 {
                    throw USMError.recipeInvalid(
                        path: path, reason: "step \(i + 1): copy \"store\" can only be the first step")
                }
            } else if step.only != nil || step.except != nil || step.rename != nil {
                throw USMError.recipeInvalid(
                    path: path, reason: "step \(i + 1): only/except/rename belong to a copy \"entities\" step")
            }
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func at(_ path: [CodingKey]) -> String {
            path.isEmpty
                ? "the top level" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case let .keyNotFound(key, context): return "missing key \(key.stringValue) at \(at(context.codingPath))"
        case let .typeMismatch(_, context):
            return "wrong type at \(at(context.codingPath)): \(context.debugDescription)"
        case let .valueNotFound(_, context): return "missing value at \(at(context.codingPath))"
        case let .dataCorrupted(context):
            return "not valid JSON at \(at(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
