/// Long lines of text for a person broken at spaces to fit a width, each continuation indented
/// under the text it continues: after a bullet (`  - `), under the value of a labelled line
/// (`Container:    …`, `  error   code: …`, `  local     ok  path`, `Next: …`), else two spaces in. A word
/// longer than the room left (a path) is broken after a `/` where it has one, else left whole.
/// `visible` removes text that takes no column (colour escapes), so painted text measures right.
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
        for word in line.dropFirst(lead.count).split(separator: " ", omittingEmptySubsequences: false) {
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
