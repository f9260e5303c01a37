import Foundation
import FuzzSupport
@testable import ManualStrategy
@testable import USMRepairCore

/// Runs libFuzzer on `fuzz`.
@main enum PluginOutputFuzzer { static func main() { Fuzz.run { fuzz($0, $1) } } }

/// An external plugin's stdout as the `manual` strategy reads it: cut into lines as it arrives
/// (`LineSplitter`, here in chunks of the sizes the input's first byte picks) and each line judged
/// as a protocol message (`PluginOutput`). Oracles: the lines handed over are exactly the input's,
/// none longer than the limit; at most 1,000 notes of bounded size are kept; nothing is accepted
/// after the result line.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    guard let first = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    let chunk = Int(first % 16) + 1
    let maxLine = 256
    var splitter = LineSplitter(maxLine: maxLine)
    var output = PluginOutput(name: "usm-repair-strategy-fuzz")
    var seen: [UInt8] = []
    var refused = false
    let handler: (Data) -> Bool = { line in
        Fuzz.check(line.count <= maxLine, "a line of \(line.count) bytes passed the \(maxLine)-byte limit")
        Fuzz.check(!line.contains(0x0A), "a line holds a line break")
        seen += line + [0x0A]
        let hadResult = output.result != nil
        let ok = output.accept(line, progress: { _, _ in })
        if hadResult, ok { Fuzz.check(line.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }, "a line accepted after the result") }
        return ok
    }
    var offset = 0
    while offset < input.count, !refused {
        let end = min(input.count, offset + chunk)
        refused = !input[offset..<end].withUnsafeBytes { splitter.feed($0, handler) }
        offset = end
    }
    if !refused { refused = !splitter.finish(handler) }
    // Every line handed over is the input's, in order; all of it unless the stream was refused
    // (a last line without its break gets one added here).
    let whole = input.isEmpty || input.last == 0x0A ? input : input + [0x0A]
    Fuzz.check(refused ? whole.starts(with: seen) : seen == whole, "the lines handed over differ from the input")
    Fuzz.check(output.notes.count <= PluginOutput.maxNotes, "\(output.notes.count) notes kept")
    Fuzz.check(output.notes.allSatisfy { $0.utf8.count <= output.name.utf8.count + 2 + PluginOutput.maxNote }, "a note longer than the limit")
    return 0
}

