import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// The preferences rewrite (`PreferencesEdit.apply`) streams the plist (binary and XML) instead of
/// decoding it: every test decodes input and output with Foundation and checks that the output is
/// the input with exactly the edit applied, in the same format.
@Suite("Preferences rewrite", .timed)
struct PreferencesRewriteTests {
    static let cacheKey =
        "/private/var/mobile/Library/Mobile Documents/ABCDE12345~com~example~notes/CloudLogs/StoreUUID+"
    static let otherCache = "/var/mobile/Library/Mobile Documents/OTHER~x/CloudLogs/StoreUUID++"
    static let store = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"
    static let older = "A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF"

    /// Preferences holding every kind of value a plist has, the keys the edits name, and text that needs escaping in XML.
    static var sample: [String: Any] {
        [
            "USMCloudEnabledKey": true,
            cacheKey: store,
            otherCache: older,
            store: ["PFUbiquitySetupTokenAndIDArray": [[Data("token".utf8), "7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E"]]],
            "LastLaunchVersion": "2.4",
            "NSLanguages": ["en", "de"],
            "Ünïcödé ключ 鍵": "värde — 値 ☃",
            "markup": "a < b && c > d ]]> \"quoted\" 'single'\r\nnext line\ttab",
            "numbers": [0, -1, 255, 65_536, Int64.max, Int64.min, 3.25, -0.5] as [Any],
            "when": Date(timeIntervalSinceReferenceDate: 786_000_000.5),
            "blob": Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }),
            "nested": ["a": ["b": ["c": [true, false, "deep"]]]],
            "empty dict": [String: Any](),
            "empty array": [Any](),
            "empty string": "",
        ]
    }

    func write(
        _ dict: [String: Any], _ format: PropertyListSerialization.PropertyListFormat, in dir: TempDir,
        name: String = "prefs.plist"
    ) throws -> URL {
        let url = dir.path(name)
        try PropertyListSerialization.data(fromPropertyList: dict, format: format, options: 0).write(to: url)
        return url
    }

    func decode(_ url: URL) throws -> (dict: NSDictionary, format: PropertyListSerialization.PropertyListFormat) {
        var format = PropertyListSerialization.PropertyListFormat.binary
        let value = try PropertyListSerialization.propertyList(
            from: try Data(contentsOf: url), options: [], format: &format)
        return (try #require(value as? NSDictionary), format)
    }

    /// Applies `edit` to `input` written in each format and checks the output against what
    /// Foundation reads from the input (XML keeps no `\r` and dates to the second) changed by `change`.
    func check(_ edit: PreferencesEdit, on input: [String: Any], change: (inout [String: Any]) -> Void) throws {
        for format in [PropertyListSerialization.PropertyListFormat.binary, .xml] {
            let dir = try TempDir()
            let source = try write(input, format, in: dir)
            var expected = try #require(try decode(source).dict as? [String: Any])
            change(&expected)
            let destination = dir.path("edited.plist")
            try edit.apply(from: source, to: destination)
            let (dict, written) = try decode(destination)
            #expect(written == format)
            let want = expected as NSDictionary
            let differing = Set(dict.allKeys.map { "\($0)" } + want.allKeys.map { "\($0)" }).filter { key in
                guard let a = dict[key], let b = want[key] else { return true }
                return !(NSArray(object: a)).isEqual(to: [b])
            }
            #expect(
                differing.isEmpty,
                "\(format == .xml ? "XML" : "binary"): keys differ: \(differing.sorted().map { "\($0) = \(dict[$0] ?? "absent") not \(want[$0] ?? "absent")" })"
            )
            // What usm-repair reads back agrees too.
            let preferences = try Preferences.read(destination)
            #expect(preferences.isXML == (format == .xml))
        }
    }

    @Test("every other key, of every type, survives an edit in both formats")
    func keepsEverythingElse() throws {
        try check(
            PreferencesEdit(cloudEnabled: false, removeCachedStoreUUIDs: true, removeAccountMaps: [Self.store]),
            on: Self.sample
        ) {
            $0["USMCloudEnabledKey"] = false
            $0[Self.cacheKey] = nil
            $0[Self.otherCache] = nil
            $0[Self.store] = nil
        }
    }

    @Test("a cloud key that is missing is added; an edit of nothing keeps everything")
    func addsMissingKey() throws {
        var input = Self.sample
        input["USMCloudEnabledKey"] = nil
        try check(PreferencesEdit(cloudEnabled: true), on: input) { $0["USMCloudEnabledKey"] = true }
        try check(PreferencesEdit(), on: input) { _ in }
        try check(PreferencesEdit(cloudEnabled: false), on: [:]) { $0["USMCloudEnabledKey"] = false }
    }

    @Test("removing cached values removes only the keys holding them")
    func removesCachedValues() throws {
        try check(PreferencesEdit(removeCachedValues: [Self.older]), on: Self.sample) { $0[Self.otherCache] = nil }
        try check(PreferencesEdit(removeCachedValues: ["not-a-uuid"]), on: Self.sample) { _ in }
    }

    @Test("references widen when the added key pushes the object count past 256")
    func widensReferences() throws {
        // 1 top dictionary + 127 keys + 127 distinct values = 255 objects: one-byte references.
        var input: [String: Any] = [:]
        for i in 0..<127 { input[String(format: "key%03d", i)] = "value \(i)" }
        var expected = input
        expected["USMCloudEnabledKey"] = true
        let dir = try TempDir()
        let source = try write(input, .binary, in: dir)
        let trailer = try Data(contentsOf: source).suffix(32)
        #expect(trailer[trailer.startIndex + 7] == 1, "the input should use one-byte references")
        let destination = dir.path("edited.plist")
        try PreferencesEdit(cloudEnabled: true).apply(from: source, to: destination)
        #expect(try decode(destination).dict.isEqual(to: expected))
        let out = try Data(contentsOf: destination).suffix(32)
        #expect(out[out.startIndex + 7] == 2)
    }

    @Test("a large value is copied whole")
    func largeValue() throws {
        let big = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
        let input: [String: Any] = [
            "USMCloudEnabledKey": true, "big": big, "big text": String(repeating: "abc<&>", count: 50_000),
        ]
        try check(PreferencesEdit(cloudEnabled: false), on: input) { $0["USMCloudEnabledKey"] = false }
    }

    @Test("a plist the app could not read is refused, nothing written")
    func refusesMalformed() throws {
        let dir = try TempDir()
        // A binary plist whose second object has a marker of no type (0x9_), referenced from the top.
        var bytes = try PropertyListSerialization.data(
            fromPropertyList: ["k": "v", "USMCloudEnabledKey": true], format: .binary, options: 0)
        let marker = try #require(bytes.firstIndex(of: 0x51))  // "k", a one-character ASCII string
        bytes[marker] = 0x91
        let binary = dir.path("binary.plist")
        try bytes.write(to: binary)
        let xml = dir.path("xml.plist")
        try Data("<?xml version=\"1.0\"?><plist><dict><key>a<string/>b</key><true/></dict></plist>".utf8).write(to: xml)
        for source in [binary, xml] {
            let destination = dir.path("out-\(source.lastPathComponent)")
            #expect {
                try PreferencesEdit(cloudEnabled: false).apply(from: source, to: destination)
            } throws: { error in
                guard case .wrongKind = error as? USMError else { return false }
                return true
            }
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }
        // The reader refuses both too: the app could not read them (one object it cannot read, a
        // key holding an element), so they are bad input for every command.
        #expect(throws: USMError.self) { try Preferences.read(binary) }
        #expect(throws: USMError.self) { try Preferences.read(xml) }
    }

    @Test("XML with comments, CDATA and entities reads back the same")
    func xmlSyntax() throws {
        let dir = try TempDir()
        let source = dir.path("prefs.plist")
        try Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <!-- written by hand -->
            <dict>
            \t<!-- the cloud key -->
            \t<key>USMCloudEnabledKey</key>
            \t<true/>
            \t<key>cdata</key><string><![CDATA[<not markup> & more]]></string>
            \t<key>entities</key><string>&lt;&amp;&gt;&#x263A;&#13;</string>
            \t<key>\(Self.cacheKey)</key>
            \t<string>\(Self.store)</string>
            </dict>
            </plist>
            """.utf8
        ).write(to: source)
        let destination = dir.path("edited.plist")
        try PreferencesEdit(cloudEnabled: false, removeCachedStoreUUIDs: true).apply(from: source, to: destination)
        let (dict, format) = try decode(destination)
        #expect(format == .xml)
        #expect(
            dict.isEqual(
                to: ["USMCloudEnabledKey": false, "cdata": "<not markup> & more", "entities": "<&>☺\r"] as [String: Any]
            ))
        let text = try String(contentsOf: destination, encoding: .utf8)
        #expect(text.contains("<!-- the cloud key -->"))
        #expect(!text.contains(Self.store))
    }
}
