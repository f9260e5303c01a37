import Foundation
import FuzzSupport
@testable import ManualStrategy
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum RecipeFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// A recipe file as `--recipe FILE` loads it (`LoadedRecipe.load`: size limit, JSON decoding,
/// validation of its steps). A recipe it accepts has steps that each name exactly one action.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let url = Fuzz.write(Fuzz.bytes(data, size), to: "fuzz.json")
    Fuzz.expectDocumented("LoadedRecipe.load") {
        let loaded = try LoadedRecipe.load(url.path, search: [])
        Fuzz.check(!loaded.recipe.steps.isEmpty, "a recipe without steps")
        Fuzz.check(loaded.recipe.steps.allSatisfy { $0.action != nil }, "a step naming no action or several")
        Fuzz.check(loaded.recipe.format == Recipe.formatName, "format \(loaded.recipe.format)")
    }
    return 0
}
