import ArgumentParser

/// A size with an optional K/M/G (powers of 1024) suffix.
struct ByteSize: ExpressibleByArgument {
    let bytes: Int64

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased()
        let units: [(String, Int64)] = [
            ("GIB", 1 << 30), ("MIB", 1 << 20), ("KIB", 1 << 10), ("GB", 1 << 30), ("MB", 1 << 20),
            ("KB", 1 << 10), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1),
        ]
        var multiplier: Int64 = 1
        var number = text
        for (suffix, value) in units where text.hasSuffix(suffix) {
            multiplier = value
            number = String(text.dropLast(suffix.count))
            break
        }
        guard let n = Double(number.trimmingCharacters(in: .whitespaces)), n > 0 else { return nil }
        bytes = Int64(n * Double(multiplier))
    }
}
