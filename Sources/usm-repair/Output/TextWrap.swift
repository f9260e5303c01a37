/// Long lines of text for a person broken at spaces to fit a width, each continuation indented
/// under the text it continues: after a bullet (`  - `), under the value of a labelled line
/// (`Container:    …`, `  error   code: …`, `  local     ok  path`, `Next: …`), else two spaces in. A word
/// longer than the room left (a path) is broken after a `/` where it has one, else left whole.
/// `visible` removes text that takes no column (colour escapes), so painted text measures right.
///
/// A command line inside the text (`usm-repair …`, to its end: see `commandSpans`) is never broken
/// like prose, so that it still pastes: it moves to the next line whole when it fits there, and a
/// command longer than a line is broken between its arguments only, each break ending with the
/// shell's ` \` continuation (a quoted argument, a path, stays whole).
enum TextWrap {
    static func wrap(_ line: String, width: Int, visible: @escaping (Substring) -> String = { String($0) }) -> [String]
    {
        let length = { (s: Substring) in visible(s).count }
        guard length(line[...]) > width else { return [line] }
        let indent = String(repeating: " ", count: continuationIndent(visible(line[...]), width: width))
        let lead = line.prefix { $0 == " " }
        var lines: [String] = []
        var current = String(lead)
        var currentLength = lead.count
        var atStart = true
        for unit in units(line.dropFirst(lead.count).split(separator: " ", omittingEmptySubsequences: false)) {
            guard case let .word(word) = unit else {
                guard case let .command(arguments) = unit else { continue }
                let whole = arguments.map(length).reduce(0, +) + arguments.count - 1
                if !atStart, currentLength + 1 + whole > width {
                    // Prose ends here; the command starts the next line.
                    lines.append(current)
                    current = indent
                    currentLength = indent.count
                    atStart = true
                }
                for (i, argument) in arguments.enumerated() {
                    let room = i == arguments.count - 1 ? 0 : 2  // " \\" after it when it is not the last
                    let needed = (atStart ? 0 : 1) + length(argument)
                    if !atStart, currentLength + needed + room > width, i > 0 {
                        lines.append(current + " \\")
                        current = indent + "    "
                        currentLength = current.count
                        atStart = true
                    }
                    current += (atStart ? "" : " ") + argument
                    currentLength += (atStart ? 0 : 1) + length(argument)
                    atStart = false
                }
                continue
            }
            let wordLength = length(word)
            // A word too wide for a line of its own starts here when its head fits after a slash.
            let startsHere =
                wordLength > width - indent.count
                && slashCut(word, room: width - currentLength - 1, length: length) != nil
            if !atStart, currentLength + 1 + wordLength > width, !startsHere {
                lines.append(current)
                current = indent
                currentLength = indent.count
                atStart = true
            }
            var piece = word
            // A word wider than the room on a fresh line: break it after slashes.
            while currentLength + (atStart ? 0 : 1) + length(piece) > width,
                let cut = slashCut(piece, room: width - currentLength - (atStart ? 0 : 1), length: length)
            {
                current += (atStart ? "" : " ") + piece[..<cut]
                lines.append(current)
                current = indent
                currentLength = indent.count
                atStart = true
                piece = piece[cut...]
            }
            current += (atStart ? "" : " ") + piece
            currentLength += (atStart ? 0 : 1) + length(piece)
            atStart = false
        }
        lines.append(current)
        return lines
    }

    /// A word of prose, or a command line's arguments (each whole).
    enum Unit: Equatable {
        case word(Substring)
        case command([Substring])
    }

    /// The words of a line, with each command line found in it (`commandSpans`) as one unit.
    static func units(_ words: [Substring]) -> [Unit] {
        var result: [Unit] = []
        var i = 0
        for span in commandSpans(words) {
            while i < span.lowerBound {
                result.append(.word(words[i]))
                i += 1
            }
            result.append(.command(arguments(Array(words[span]))))
            i = span.upperBound
        }
        while i < words.count {
            result.append(.word(words[i]))
            i += 1
        }
        return result
    }

    /// Words that end a command line inside prose ("… usm-repair check --store X to see …").
    static let proseWords: Set<String> = [
        "a", "after", "and", "as", "before", "but", "first", "for", "if", "instead", "it", "or", "so", "the",
        "then", "to", "when", "which", "with",
    ]

    /// The ranges of `words` that are command lines: from a word that is (or ends with)
    /// `usm-repair` to the word that ends it: one ending with `,` `;` `)` or `.` (sentence
    /// punctuation, kept), a quoted argument's words held together, or the word before a prose
    /// word or the end of the line.
    static func commandSpans(_ words: [Substring]) -> [Range<Int>] {
        var spans: [Range<Int>] = []
        var i = 0
        while i < words.count {
            guard words[i].hasSuffix("usm-repair"), i + 1 < words.count,
                words[i + 1].hasPrefix("-") || words[i + 1].first?.isLetter == true
            else {
                i += 1
                continue
            }
            let start = i
            var j = i + 1
            var quoted = false
            while j < words.count {
                let word = words[j]
                if !quoted, proseWords.contains(String(word)) { break }
                if word.hasPrefix("'") && !(word.count > 1 && word.hasSuffix("'")) {
                    quoted = !quoted
                } else if quoted, word.hasSuffix("'") {
                    quoted = false
                }
                j += 1
                if !quoted, let last = word.last, [",", ";", ")", "."].contains(last) { break }
            }
            spans.append(start..<j)
            i = j
        }
        return spans
    }

    /// A command line's words as its arguments: the words of a quoted argument (`'a b'`) joined.
    static func arguments(_ words: [Substring]) -> [Substring] {
        var result: [Substring] = []
        var open: String?
        for word in words {
            if var current = open {
                current += " " + word
                if word.hasSuffix("'") {
                    result.append(Substring(current))
                    open = nil
                } else {
                    open = current
                }
            } else if word.hasPrefix("'"), !(word.count > 1 && word.hasSuffix("'")) {
                open = String(word)
            } else {
                result.append(word)
            }
        }
        if let open { result.append(Substring(open)) }
        return result
    }

    /// Where to break a word so its head fits `room` columns: after the last `/` that fits (not the
    /// word's first character), nil when none does.
    private static func slashCut(_ word: Substring, room: Int, length: (Substring) -> Int) -> Substring.Index? {
        guard room > 0 else { return nil }
        var best: Substring.Index?
        var index = word.startIndex
        while index < word.endIndex {
            let next = word.index(after: index)
            if word[index] == "/", index > word.startIndex, next < word.endIndex {
                if length(word[..<next]) <= room { best = next } else { break }
            }
            index = next
        }
        return best
    }

    /// The column continuation lines start at.
    static func continuationIndent(_ line: String, width: Int) -> Int {
        let chars = Array(line)
        let lead = chars.prefix { $0 == " " }.count
        var column = lead + 2
        if chars.count > lead + 1, chars[lead] == "-", chars[lead + 1] == " " {
            column = lead + 2
        } else if let gap = lastGap(chars, from: lead, before: 30) {
            column = gap
        } else if lead == 0, let colon = chars.prefix(16).firstIndex(of: ":"), colon + 1 < chars.count,
            chars[colon + 1] == " "
        {
            column = colon + 2  // `Next: If …`, `Cloud folder: /…`
        } else if lead > 0 {
            column = lead
        }
        return min(column, width / 2)
    }

    /// The column after the last run of two or more spaces that follows text and ends before
    /// `limit` (a label's padding, a table's columns).
    private static func lastGap(_ chars: [Character], from start: Int, before limit: Int) -> Int? {
        var found: Int?
        var i = start
        while i + 1 < min(chars.count, limit) {
            if chars[i] == " ", chars[i + 1] == " " {
                var j = i
                while j < chars.count, chars[j] == " " { j += 1 }
                if j < chars.count, j < limit { found = j }
                i = j
            } else {
                i += 1
            }
        }
        return found
    }
}
