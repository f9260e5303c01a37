import Foundation
import Testing
import TestSupport
@testable import USMRepairCore

/// Preferences are read as the app reads them: an XML plist that declares entities or names a DTD
/// other than Apple's is malformed, and `USMCloudEnabledKey` is a boolean or bad input.
@Suite("hostile preferences: entity declarations, a cloud key that is not a boolean", .timed)
struct HostilePreferencesTests {
    typealias Fixture = OperationTests.Fixture

    static let body =
        #"<plist version="1.0"><dict><key>USMCloudEnabledKey</key><true/><key>x</key><string>a</string></dict></plist>"#

    static func write(_ doctype: String, to f: Fixture) throws {
        let text = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n" + doctype + "\n" + body + "\n"
        try Data(text.utf8).write(to: f.paths.prefs)
    }

    static func problemCodes(_ r: CLI.Result) -> [String] {
        (r.json["problems"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
    }

    @Test("a DOCTYPE that declares entities or names another DTD is malformed: status says so, changes refuse (2)")
    func entityDeclarations() throws {
        let doctypes = [
            #"<!DOCTYPE plist [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>"#,
            #"<!DOCTYPE plist [<!ENTITY unused "never used">]>"#,
            #"<!DOCTYPE plist [<!ENTITY % p "x"> ]>"#,
            #"<!DOCTYPE plist SYSTEM "file:///etc/passwd">"#,
            #"<!DOCTYPE plist PUBLIC "-//Evil//DTD X//EN" "http://example.com/x.dtd">"#,
            #"<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd" [<!ENTITY a "b">]>"#,
        ]
        for doctype in doctypes {
            let f = try Fixture()
            try Self.write(doctype, to: f)
            let before = try Data(contentsOf: f.paths.prefs)
            let s = try f.run(["status", "--json"])
            #expect(s.status == 2, "\(doctype): \(s.stdout)")
            #expect(Self.problemCodes(s).contains("preferences-malformed"), "\(doctype): \(Self.problemCodes(s))")
            let r = try f.run(["cloud", "disable", "--yes", "--json"])
            #expect(r.status == 2, "\(doctype): \(r.stdout)\(r.stderr)")
            #expect(try Data(contentsOf: f.paths.prefs) == before, "\(doctype)")
        }
    }

    @Test("a processing instruction without data (which crashes FoundationXML) is malformed; one with data is read")
    func emptyInstruction() throws {
        // The first is the PreferencesRead fuzz target's finding (Fuzz/Corpus/PreferencesRead).
        let refused = [
            "<?xmli?>\n\n\t<keyn", "<?xml?>" + Self.body,
            #"<?xml version="1.0"?>"#
                + Self.body.replacingOccurrences(
                    of: "<dict>", with: "<dict><?x-é?>"),
        ]
        for text in refused {
            let f = try Fixture()
            try Data(text.utf8).write(to: f.paths.prefs)
            let s = try f.run(["status", "--json"])
            #expect(s.status == 2, "\(text): \(s.stdout)")
            #expect(Self.problemCodes(s).contains("preferences-malformed"), "\(text): \(Self.problemCodes(s))")
            #expect(s.stdout.contains("processing instruction without data"), "\(text): \(s.stdout)")
            let r = try f.run(["cloud", "disable", "--yes", "--json"])
            #expect(r.status == 2, "\(text): \(r.stdout)\(r.stderr)")
        }
        let f = try Fixture()
        let read =
            #"<?xml version="1.0"?><?pi data?>"# + Self.body.replacingOccurrences(of: "<dict>", with: "<dict><?x ?>")
        try Data(read.utf8).write(to: f.paths.prefs)
        let s = try f.run(["status", "--json"])
        #expect(!Self.problemCodes(s).contains("preferences-malformed"), "\(Self.problemCodes(s)) \(s.stdout)")
        #expect(s.json["cloudEnabled"] as? Bool == true, "\(s.stdout)")
    }

    @Test("Apple's plist DOCTYPE, without an internal subset, is read")
    func appleDoctype() throws {
        for doctype in [
            #"<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">"#,
            #"<!DOCTYPE plist PUBLIC "-//Apple Computer//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">"#,
            "",
        ] {
            let f = try Fixture()
            try Self.write(doctype, to: f)
            let s = try f.run(["status", "--json"])
            #expect(!Self.problemCodes(s).contains("preferences-malformed"), "\(doctype): \(Self.problemCodes(s))")
            #expect(s.json["cloudEnabled"] as? Bool == true, "\(doctype): \(s.stdout)")
        }
    }

    @Test("USMCloudEnabledKey stored as an integer is bad input (2) naming the key, nothing changed")
    func integerCloudKey() throws {
        for value in ["2", "1", "0"] {
            let f = try Fixture()
            let text =
                #"<?xml version="1.0" encoding="UTF-8"?>"#
                + "\n<plist version=\"1.0\"><dict><key>USMCloudEnabledKey</key><integer>\(value)</integer></dict></plist>\n"
            try Data(text.utf8).write(to: f.paths.prefs)
            let before = try HostileKindTests.trees(f)
            let s = try f.run(["status", "--json"])
            #expect(s.status == 2, "\(value): \(s.stdout)")
            for args in [["cloud", "disable"], ["switch", f.options.oldUUID ?? ""]] {
                let r = try f.run(args + ["--yes", "--json"])
                #expect(r.status == 2, "\(value) \(args): \(r.stdout)\(r.stderr)")
                let message = (r.json["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.contains("USMCloudEnabledKey") && message.contains("integer"), "\(message)")
                #expect(try HostileKindTests.trees(f) == before, "\(value) \(args)")
            }
        }
    }
}
