import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// What the fuzz targets of `Fuzz/` found, each as the smallest input that showed it, run in
/// process. The inputs themselves stay in `Fuzz/Corpus/<Target>/crash-*`. All four are malformed
/// property lists (reader and editor). (Origin: fuzz findings; the file was FuzzFindingTests.)
@Suite("malformed property lists found by fuzzing: the reader and the editor", .timed)
struct PlistMalformedInputTests {
    /// Every byte of the tree under `url`, to prove a refused command changed nothing.
    func tree(_ url: URL) throws -> TreeSnapshot { try TreeSnapshot(url) }

    /// PreferencesRead, crash-xml-name-not-utf8: an element name that is not UTF-8 stopped the
    /// process inside FoundationXML (it unwraps the name it cannot decode). The file is now checked
    /// as UTF-8 before it reaches the parser: bad input, exit 2, nothing changed.
    @Test("an XML plist whose element name is not UTF-8 is malformed, not a crash")
    func xmlNameNotUTF8() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        var bytes = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\t<k".utf8)
        bytes += [0xB5] + Array("ey>USMCloudEnabledKey</key>\n\t<true/>\n</dict>\n</plist>\n".utf8)
        try Data(bytes).write(to: paths.prefs)
        #expect { try Preferences.read(paths.prefs) } throws: { error in
            guard case let .wrongKind(path, expected) = error as? USMError else { return false }
            return path == paths.prefs.path && expected.contains("not valid UTF-8")
        }
        let status = USM.run(["status", "--container", paths.root.path, "--prefs", paths.prefs.path, "--json"])
        #expect(status.status == 2)
        let before = try tree(paths.root)
        let disable = USM.run([
            "cloud", "disable", "--container", paths.root.path, "--prefs", paths.prefs.path, "--yes",
        ])
        #expect(disable.status == 2, "\(disable.stdout)\(disable.stderr)")
        #expect(try tree(paths.root) == before)
    }

    /// PreferencesEdit, crash-cr-in-cached-value: a cached StoreUUID value holding a CR. The reader
    /// (libxml2) reads a CR or CR LF as one LF, the editor compared the raw text: the value the reader
    /// reported and the edit named for removal was kept. The editor now reads text as the reader does
    /// (and a `&#13;`, a CR the reader keeps, still matches).
    @Test("a cached value with a CR, CR LF or &#13; is removed when the edit names the value the reader reported")
    func carriageReturnInCachedValue() throws {
        let key = "/private/var/mobile/Library/Mobile Documents/ABCDE12345~com~example~notes/CloudLogs/StoreUUID+"
        for (raw, read) in [("A\rB", "A\nB"), ("A\r\nB", "A\nB"), ("A&#13;B", "A\rB"), ("A\r\rB", "A\n\nB")] {
            let tmp = try TempDir()
            let source = tmp.path("com.example.notes.plist")
            let text =
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\t<key>\(key)</key>\n"
                + "\t<string>\(raw)</string>\n\t<key>other</key>\n\t<string>x\ry</string>\n</dict>\n</plist>\n"
            try Data(text.utf8).write(to: source)
            let before = try Preferences.read(source)
            #expect(before.cachedStoreUUIDs.compactMap(\.value) == [read], "\(raw.debugDescription)")
            let edited = tmp.path("edited.plist")
            try PreferencesEdit(removeCachedValues: [read]).apply(from: source, to: edited)
            let after = try Preferences.read(edited)
            #expect(after.cachedStoreUUIDs.isEmpty, "\(raw.debugDescription): \(after.cachedStoreUUIDs)")
            let kept = try String(contentsOf: edited, encoding: .utf8)
            #expect(kept.contains("<string>x\ry</string>"), "the other value's bytes are copied as they were")
        }
    }

    /// PreferencesEdit, crash-broken-last-end-tag: an XML plist whose last end tag is broken after
    /// its name (`</plist/d`). libxml2 had closed the root and the reader accepted it; the editor,
    /// which needs the tag's `>`, refused it as cut short, after a plan had been made on it. The
    /// reader now also runs the editor over what it accepted: malformed (exit 2) before any plan.
    @Test("an XML plist the editor cannot cut is malformed for the reader too, and a change refuses before planning")
    func brokenLastEndTag() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        let body =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\t<key>USMCloudEnabledKey</key>\n\t<true/>\n</dict>\n"
        for end in ["</plist/d", "</plist", "</plist x"] {
            try Data((body + end).utf8).write(to: paths.prefs)
            #expect(throws: USMError.self, "\(end)") { try Preferences.read(paths.prefs) }
            let before = try tree(paths.root)
            let disable = USM.run([
                "cloud", "disable", "--container", paths.root.path, "--prefs", paths.prefs.path, "--yes", "--json",
            ])
            #expect(disable.status == 2, "\(end): \(disable.stdout)\(disable.stderr)")
            #expect(try tree(paths.root) == before)
        }
        try Data((body + "</plist>\n").utf8).write(to: paths.prefs)
        #expect(try Preferences.read(paths.prefs).cloudEnabled == true, "the whole document still reads")
    }

    /// PreferencesEdit, crash-object-into-offset-table: a binary plist whose last string runs into
    /// the offset table. The reader looked only at the top dictionary's keys and accepted it; the
    /// rewrite checked every object and refused it, after the plan was made. The app's parser
    /// (CoreFoundation, Foundation on Linux too) refuses such a plist whole, so the reader now walks
    /// every object the top reaches, as the app does: bad input from the start (exit 2), never a
    /// plan that fails half-way.
    @Test("a binary plist with an object running into its offset table is malformed for the reader too")
    func objectIntoOffsetTable() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("c"))
        let source = paths.prefs
        let bytes = try #require(
            Data(
                base64Encoded:
                    "YnBsaXN0MDDXAQIDBAUGBwgOARAREhNfECQwRjZFMkMxQS04QjNELTRFNUYtOUE3Qi0xQzJEM0U0RjVBNkJbTlNMYW5ndWFnZXNfEF4vcHJpdmF0ZS92YXIvbW9iaWxlL0xpYnJhcnkvTW9iaWxlIERvY3VtZW50cy9BQkNERTEyMzQ1fmNvbX5leGFtcGxlfm5vdGVzL0Nsb3VkTG9ncy9TdG9yZVVVSUQrXxARTGFzdExhdW5jaFZlcnNpb25fEBJVU01DbG91ZEVuYWJsZWRLZXlfEF8vcHJpdmF0ZS92YXIvbW9iaWxlL0xpYnJhcnkvTW9iaWxlIERvY3VtZW50cy9BQkNERTEyMzQ1fmNvbX5scGVteGFlfm5vdGVzL0Nsb3VkTG9ncy9TdG9yZVVVSUQrK2sA3ABuAO8AYwD2AGQA6QAgAGsAZQB50QkKXxAeUEZVYmlxdWl0eVNldHVwVG9rZW5BbmRJREFycmF5oQuiDA1OaWRlbnRpdHktdG9rZW5fECQ3QzFEMkUzRi00QTVCLTRDNkQtOEU3Ri05MDFBMkIzQzRENUWhD1JlblMyLjQQAV8QJEExQjJDM0Q0LUU1RjYtNDcxMS04ODk5LUFBQkJDQ0RERUVGRmcAdgDkAHIAZABlAAgAFwA+AEoAqwC/ANQBNgFNAVABcQFzAXYBhQGsAa4BsQG1AbcB3gAAAAAAAAIBAAAAAAAAABQAAAAAAAAAAAAAAAAAAAHp"
            ))
        try bytes.write(to: source)
        #expect(throws: (any Error).self) {
            try PropertyListSerialization.propertyList(from: bytes, options: [], format: nil)
        }
        #expect { try Preferences.read(source) } throws: { error in
            guard case let .wrongKind(_, expected) = error as? USMError else { return false }
            return expected.contains("runs past its end")
        }
        let destination = tmp.path("edited.plist")
        #expect(throws: USMError.self) { try PreferencesEdit(cloudEnabled: false).apply(from: source, to: destination) }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        let before = try TreeSnapshot(paths.root)
        let disable = USM.run(["cloud", "disable", "--container", paths.root.path, "--yes"])
        #expect(disable.status == 2, "\(disable.stdout)\(disable.stderr)")
        #expect(try TreeSnapshot(paths.root) == before)
    }
}
