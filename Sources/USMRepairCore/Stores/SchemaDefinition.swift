import Foundation
import GRDB

/// One `sqlite_schema` definition read from a store, checked before SQLite ever sees it again.
///
/// SQLite loads a schema row by preparing its first statement only, so a row can hold more
/// (`CREATE TABLE t(a); ATTACH 'x' AS v; DELETE FROM v.t`) and still open. A store's text is data:
/// this parses it into tokens and accepts exactly one `CREATE TABLE`, `CREATE [UNIQUE] INDEX`,
/// `CREATE VIEW`, `CREATE TRIGGER` or `CREATE VIRTUAL TABLE … USING fts3|fts4|fts5|rtree`
/// statement, with nothing after it but whitespace, comments and one `;`. It refuses `TEMP`,
/// `CREATE TABLE … AS SELECT`, a name in another schema (`v.t`), definitions over 1 MiB, and in
/// table and index definitions the functions whose cost grows without bound with their arguments
/// (`printf`, `format`, `zeroblob`, `randomblob`, `replace`, `group_concat`, `string_agg`): SQLite
/// evaluates those expressions for every row when it checks, copies or indexes a store.
/// Executing a definition runs `statement` (the text up to its end, tail cut off) as one
/// prepared statement.
public struct SchemaDefinition: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case table, index, view, trigger
        case virtualTable = "virtual table"
    }

    /// Why a definition (or a whole schema) is refused.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    public let kind: Kind
    /// The one statement, without anything after it (its `;` and trailing comments cut off).
    public let statement: String

    /// Largest definition accepted, bytes of UTF-8.
    public static let maxDefinitionBytes = 1 << 20
    /// Largest schema accepted (all definitions together), bytes of UTF-8.
    public static let maxSchemaBytes = 16 << 20
    /// Functions refused in table and index definitions.
    public static let costlyFunctions: Set<String> = [
        "printf", "format", "zeroblob", "randomblob", "replace", "group_concat", "string_agg",
    ]
    /// Virtual table modules accepted (those Core Data uses).
    public static let modules: Set<String> = ["fts3", "fts4", "fts5", "rtree"]

    // MARK: - Tokens

    enum TokenKind: Equatable { case word, string, quoted, punct }
    struct Token: Equatable {
        let kind: TokenKind
        /// For a word: upper-cased; for punctuation: the character; otherwise the raw text.
        let text: String
        /// UTF-8 offset just past the token.
        let end: Int
    }

    /// Splits `sql` into tokens, comments and whitespace dropped.
    /// - Throws: `Refusal` for an unterminated string, quoted identifier or comment.
    static func tokenize(_ sql: String) throws -> [Token] {
        let bytes = Array(sql.utf8)
        var tokens: [Token] = []
        var i = 0
        let n = bytes.count
        func isWord(_ b: UInt8) -> Bool {
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x24
                || b >= 0x80
        }
        while i < n {
            let b = bytes[i]
            switch b {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0C, 0x0B:
                i += 1
            case 0x2D where i + 1 < n && bytes[i + 1] == 0x2D:  // -- comment
                while i < n && bytes[i] != 0x0A { i += 1 }
            case 0x2F where i + 1 < n && bytes[i + 1] == 0x2A:  // /* comment */
                i += 2
                while i + 1 < n && !(bytes[i] == 0x2A && bytes[i + 1] == 0x2F) { i += 1 }
                guard i + 1 < n else { throw Refusal(reason: "an unterminated comment") }
                i += 2
            case 0x27, 0x22, 0x60, 0x5B:  // ' " ` [
                let close: UInt8 = b == 0x5B ? 0x5D : b
                let start = i
                i += 1
                while true {
                    guard i < n else { throw Refusal(reason: "an unterminated string or quoted name") }
                    if bytes[i] == close {
                        // A doubled quote is an escaped quote ([...] has no escape).
                        if close != 0x5D && i + 1 < n && bytes[i + 1] == close {
                            i += 2
                            continue
                        }
                        i += 1
                        break
                    }
                    i += 1
                }
                let text = String(decoding: bytes[start..<i], as: UTF8.self)
                tokens.append(Token(kind: b == 0x27 ? .string : .quoted, text: text, end: i))
            default:
                if isWord(b) {
                    let start = i
                    while i < n && isWord(bytes[i]) { i += 1 }
                    let text = String(decoding: bytes[start..<i], as: UTF8.self).uppercased()
                    tokens.append(Token(kind: .word, text: text, end: i))
                } else {
                    i += 1
                    tokens.append(Token(kind: .punct, text: String(UnicodeScalar(b)), end: i))
                }
            }
        }
        return tokens
    }

    // MARK: - Parsing

    /// Parses `sql`, the text of a `sqlite_schema` row of type `type` (`table`, `index`, `view`,
    /// `trigger`; nil to accept any).
    /// - Throws: `Refusal` saying why it is not exactly one accepted `CREATE` statement.
    public static func parse(_ sql: String, type: String? = nil) throws -> SchemaDefinition {
        guard sql.utf8.count <= maxDefinitionBytes else {
            throw Refusal(reason: "its text is \(sql.utf8.count) bytes, over the \(maxDefinitionBytes) accepted")
        }
        let tokens = try tokenize(sql)
        var p = 0
        func word(_ at: Int) -> String? {
            at < tokens.count && tokens[at].kind == .word ? tokens[at].text : nil
        }
        guard word(p) == "CREATE" else { throw Refusal(reason: "it does not start with CREATE") }
        p += 1
        if word(p) == "TEMP" || word(p) == "TEMPORARY" {
            throw Refusal(reason: "it creates a TEMP object (a store's schema holds none)")
        }
        let kind: Kind
        switch word(p) {
        case "TABLE": kind = .table
        case "INDEX": kind = .index
        case "UNIQUE" where word(p + 1) == "INDEX":
            kind = .index
            p += 1
        case "VIEW": kind = .view
        case "TRIGGER": kind = .trigger
        case "VIRTUAL" where word(p + 1) == "TABLE":
            kind = .virtualTable
            p += 1
        default: throw Refusal(reason: "it is not CREATE TABLE, INDEX, VIEW, TRIGGER or VIRTUAL TABLE")
        }
        p += 1
        if let type {
            let expected = kind == .virtualTable ? "table" : kind.rawValue
            guard type == expected else {
                throw Refusal(reason: "its schema row says \(type) but its text creates a \(kind.rawValue)")
            }
        }
        if word(p) == "IF" {
            guard word(p + 1) == "NOT", word(p + 2) == "EXISTS" else {
                throw Refusal(reason: "a malformed IF NOT EXISTS")
            }
            p += 3
        }
        // The object's name: one word or quoted name, never qualified by a schema.
        guard p < tokens.count, [.word, .quoted, .string].contains(tokens[p].kind) else {
            throw Refusal(reason: "it names no object")
        }
        p += 1
        if p < tokens.count, tokens[p].kind == .punct, tokens[p].text == "." {
            throw Refusal(reason: "it names an object in another schema")
        }
        if kind == .table, word(p) == "AS" { throw Refusal(reason: "it is CREATE TABLE … AS SELECT") }
        if kind == .virtualTable {
            guard word(p) == "USING", let module = word(p + 1) else {
                throw Refusal(reason: "a virtual table without USING")
            }
            guard modules.contains(module.lowercased()) else {
                throw Refusal(reason: "a virtual table of module \(module.lowercased()) (only fts3, fts4, fts5, rtree)")
            }
        }
        // Where the statement ends: the first `;` outside parentheses, or for a trigger the `;`
        // after the END that closes its BEGIN body (a body's statements end with `;`).
        var end = tokens.count
        var depth = 0
        var i = p
        if kind == .trigger {
            while i < tokens.count, word(i) != "BEGIN" {
                if tokens[i].kind == .punct, tokens[i].text == ";" {
                    throw Refusal(reason: "a trigger without a BEGIN … END body")
                }
                i += 1
            }
            guard i < tokens.count else { throw Refusal(reason: "a trigger without a BEGIN … END body") }
            i += 1
            var closed = false
            body: while i < tokens.count {
                if word(i) == "END" {
                    closed = true
                    i += 1
                    break body
                }
                guard let first = word(i),
                    ["INSERT", "UPDATE", "DELETE", "SELECT", "REPLACE", "WITH", "VALUES"].contains(first)
                else { throw Refusal(reason: "a trigger body statement that is not INSERT, UPDATE, DELETE or SELECT") }
                depth = 0
                while i < tokens.count {
                    let t = tokens[i]
                    i += 1
                    if t.kind == .punct {
                        if t.text == "(" { depth += 1 }
                        if t.text == ")" { depth -= 1 }
                        if t.text == ";" && depth == 0 { continue body }
                    }
                }
                break
            }
            guard closed else { throw Refusal(reason: "a trigger body without its END") }
            end = i
        } else {
            while i < tokens.count {
                let t = tokens[i]
                if t.kind == .punct {
                    if t.text == "(" { depth += 1 }
                    if t.text == ")" { depth -= 1 }
                    if t.text == ";" && depth <= 0 { break }
                }
                i += 1
            }
            end = i
        }
        // After the statement: at most one `;`, then nothing but whitespace and comments.
        var tail = end
        if tail < tokens.count, tokens[tail].kind == .punct, tokens[tail].text == ";" { tail += 1 }
        guard tail == tokens.count else {
            throw Refusal(reason: "its text holds another statement after the first (\(tokens[tail].text) …)")
        }
        guard end > p else { throw Refusal(reason: "an empty definition") }
        if kind == .table || kind == .index {
            for k in p..<end - 1 where tokens[k].kind == .word && tokens[k + 1].text == "(" {
                let name = tokens[k].text.lowercased()
                if costlyFunctions.contains(name) {
                    throw Refusal(
                        reason:
                            "its expressions call \(name)(), whose cost has no bound; SQLite runs them for every row")
                }
            }
        }
        let cut = tokens[end - 1].end
        let statement = String(decoding: Array(sql.utf8)[0..<cut], as: UTF8.self)
        return SchemaDefinition(kind: kind, statement: statement)
    }

    /// Checks every definition of a schema and its total size; nil when all are accepted,
    /// otherwise why the first refused one is (naming it).
    public static func audit(_ rows: [(type: String, name: String, sql: String?)]) -> String? {
        var total = 0
        for row in rows {
            guard let sql = row.sql else { continue }
            total += sql.utf8.count
            guard total <= maxSchemaBytes else {
                return "its schema texts are over \(maxSchemaBytes) bytes together"
            }
            do {
                _ = try parse(sql, type: row.type)
            } catch let refusal as Refusal {
                return "\(row.type) \(row.name.debugDescription): \(refusal.reason)"
            } catch {
                return "\(row.type) \(row.name.debugDescription): \(error)"
            }
        }
        return nil
    }

    /// Reads and audits the schema of the database open on `db` (`schema`: `main` or an attached
    /// name); nil when every definition is accepted.
    public static func audit(_ db: Database, schema: String = "main") throws -> String? {
        let master = "\(schema.sqlIdentifier).sqlite_master"
        if let sizes = try Row.fetchOne(
            db,
            sql:
                "SELECT IFNULL(SUM(length(CAST(sql AS BLOB))), 0), IFNULL(MAX(length(CAST(sql AS BLOB))), 0) FROM \(master)"
        ),
            let sum = sizes[0] as Int?, let largest = sizes[1] as Int?
        {
            if largest > maxDefinitionBytes {
                return "a schema text of \(largest) bytes, over the \(maxDefinitionBytes) accepted"
            }
            if sum > maxSchemaBytes { return "its schema texts are over \(maxSchemaBytes) bytes together" }
        }
        var rows: [(type: String, name: String, sql: String?)] = []
        let cursor = try Row.fetchCursor(db, sql: "SELECT type, name, sql FROM \(master)")
        while let row = try cursor.next() {
            let type = String.fromDatabaseValue(row[0] as DatabaseValue) ?? ""
            let name = String.fromDatabaseValue(row[1] as DatabaseValue) ?? ""
            let sql = (row[2] as DatabaseValue).isNull ? nil : String.fromDatabaseValue(row[2] as DatabaseValue) ?? ""
            rows.append((type, name, sql))
        }
        return audit(rows)
    }

    /// Parses `sql` and runs it on `db` as one prepared statement (the tail cut off).
    /// - Throws: `Refusal` when it is not accepted, or SQLite's error.
    public static func execute(_ db: Database, _ sql: String, type: String? = nil) throws {
        let definition = try parse(sql, type: type)
        try db.makeStatement(sql: definition.statement).execute()
    }
}
