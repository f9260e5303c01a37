import Foundation
import FuzzSupport
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum SchemaDefinitionFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// A `sqlite_schema` row's text as every command reads a stranger's store (issue 28): parsed into
/// exactly one accepted `CREATE` statement or refused, never trapping. What is accepted is the
/// statement with nothing after it but one `;` and comments, and parses again to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let sql = String(decoding: Fuzz.bytes(data, size), as: UTF8.self)
    let definition: SchemaDefinition
    do {
        definition = try SchemaDefinition.parse(sql)
    } catch is SchemaDefinition.Refusal {
        return 0
    } catch {
        Fuzz.fail("parse threw something other than a refusal: \(error)")
    }
    let statement = Array(definition.statement.utf8)
    let text = Array(sql.utf8)
    Fuzz.check(statement.count <= text.count && Array(text.prefix(statement.count)) == statement, "the statement is not the text's start")
    let tail = String(decoding: text.dropFirst(statement.count), as: UTF8.self)
    guard let rest = try? SchemaDefinition.tokenize(tail) else { Fuzz.fail("the tail of an accepted text does not tokenize") }
    Fuzz.check(rest.isEmpty || (rest.count == 1 && rest[0].text == ";"), "an accepted text holds more after its statement: \(tail.debugDescription)")
    guard let again = try? SchemaDefinition.parse(definition.statement) else { Fuzz.fail("the accepted statement is refused on its own") }
    Fuzz.check(again == definition, "the accepted statement parses to something else")
    return 0
}
