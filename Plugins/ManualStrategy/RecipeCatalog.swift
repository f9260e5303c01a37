import Foundation
import USMRepairCore

/// Where recipes named without a path are found, and what is there.
public enum RecipeCatalog {
    /// One recipe found.
    public struct Entry: Sendable, Encodable, Equatable {
        /// The recipe's id.
        public let id: String
        /// One sentence.
        public let summary: String
        /// Its version.
        public let version: String
        /// Its file.
        public let path: String
    }

    /// The folders searched, in order: `$USM_REPAIR_RECIPES` (a `:`-separated list), then
    /// `<prefix>/share/usm-repair/recipes` beside the executable's `bin` (an installed binary),
    /// then the `Recipes/` folder of the source checkout the executable was built in (a
    /// development build). Folders that do not exist are included: a recipe that is not found
    /// names every folder looked in.
    public static func searchPath(environment: [String: String], executable: URL) -> [URL] {
        var folders = (environment["USM_REPAIR_RECIPES"] ?? "").split(separator: ":").map {
            URL(fileURLWithPath: String($0), isDirectory: true)
        }
        let bin = executable.resolvingSymlinksInPath().deletingLastPathComponent()
        folders.append(
            bin.deletingLastPathComponent().appendingPathComponent("share/usm-repair/recipes", isDirectory: true))
        var dir = bin
        for _ in 0..<5 {
            if FileStatus.lookup(dir.appendingPathComponent("Package.swift").path) != nil {
                folders.append(dir.appendingPathComponent("Recipes", isDirectory: true))
                break
            }
            dir = dir.deletingLastPathComponent()
        }
        return folders
    }

    /// The folders of `search` that exist.
    public static func existing(_ search: [URL]) -> [URL] {
        search.filter { FileStatus.resolve($0.path)?.kind == .directory }
    }

    /// Every readable recipe in `search` (the first of each id wins); unreadable ones are skipped.
    public static func list(search: [URL]) -> [Entry] {
        var seen: Set<String> = []
        var entries: [Entry] = []
        for folder in existing(search) {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
                $0.hasSuffix(".json")
            }.sorted()
            for name in names {
                guard let loaded = try? LoadedRecipe.load(folder.appendingPathComponent(name).path, search: []),
                    seen.insert(loaded.recipe.id).inserted
                else { continue }
                entries.append(
                    Entry(
                        id: loaded.recipe.id, summary: loaded.recipe.summary, version: loaded.recipe.version,
                        path: loaded.url.path))
            }
        }
        return entries
    }
}
