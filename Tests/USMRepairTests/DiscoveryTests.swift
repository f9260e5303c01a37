import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// Where stores, markers and preferences really are (usm-behaviour.md §1, §4; coredata-format.md §3–4):
/// Core Data's copies under CoreDataUbiquitySupport, iOS 6 files, UIManagedDocument packages,
/// Apple's own ubiquity folders, and how the markers and preferences are read.
@Suite("discovery", .timed)
struct DiscoveryTests {
    @Test("markers are read as the app reads them: exactly 36 upper-case characters")
    func markers() throws {
        let tmp = try TempDir()
        let uuid = "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B"
        let cases: [(String, Marker.Defect?)] = [
            (uuid, nil), (uuid + "\n", .trailingNewline), (" " + uuid, .trailingNewline),
            (uuid.lowercased(), .lowercase),
            ("", .empty), ("not a uuid", .notAUUID), ("\u{FEFF}" + uuid, .notAUUID),
        ]
        for (index, (content, defect)) in cases.enumerated() {
            let url = tmp.path("StoreUUID+\(index)")
            try Data(content.utf8).write(to: url)
            let marker = try #require(try Marker.read(url, kind: .storeUUID, version: 1))
            #expect(marker.defect == defect, "\(content.debugDescription)")
            #expect(marker.valid == (defect == nil))
            #expect(marker.value == (defect == nil ? uuid : nil))
        }
        #expect(Marker.parse(fileName: "StoreUUID++")! == (.storeUUID, 2))
        #expect(Marker.parse(fileName: "CorruptedUUID")! == (.corruptedUUID, 0))
        #expect(Marker.parse(fileName: "StoreUUIDx") == nil)
        #expect(Marker.parse(fileName: "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B") == nil)
    }

    @Test("preferences: cached StoreUUIDs per key and version, account maps, binary and XML", arguments: [false, true])
    func preferences(xml: Bool) throws {
        let tmp = try TempDir()
        let dict: [String: Any] = [
            "USMCloudEnabledKey": true,
            "/private/var/mobile/Library/Mobile Documents/T~com~x/CloudLogs/StoreUUID+":
                "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B",
            "/Users/me/Library/Mobile Documents/T~com~x/CloudLogs/StoreUUID": "a1b2",
            "/elsewhere/CloudLogs/StoreUUIDs": "not a cache key",
            "0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B": [
                "PFUbiquitySetupTokenAndIDArray": [[Data([1, 2]), "7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E"]]
            ],
            "UbiquityStore": [
                "PFUbiquitySetupTokenAndIDArray": [["token": Data([3]), "id": "6A5B4C3D-2E1F-4A0B-9C8D-7E6F5A4B3C2D"]]
            ],
        ]
        let url = tmp.path("p.plist")
        try PropertyListSerialization.data(fromPropertyList: dict, format: xml ? .xml : .binary, options: 0).write(
            to: url)
        let prefs = try Preferences.read(url)
        #expect(prefs.isXML == xml)
        #expect(prefs.cloudEnabled == true)
        #expect(prefs.cachedStoreUUIDs.map(\.cloudVersion).sorted() == [0, 1])
        let v1 = try #require(prefs.cachedStoreUUIDs.first { $0.cloudVersion == 1 })
        #expect(v1.valid && v1.containerPath == "/private/var/mobile/Library/Mobile Documents/T~com~x")
        #expect(prefs.cachedStoreUUIDs.first { $0.cloudVersion == 0 }?.valid == false)
        #expect(prefs.accountMaps.map(\.contentName) == ["0F6E2C1A-8B3D-4E5F-9A7B-1C2D3E4F5A6B", "UbiquityStore"])
        #expect(prefs.accountMaps.first?.containerIDs == ["7C1D2E3F-4A5B-4C6D-8E7F-901A2B3C4D5E"])
        #expect(prefs.accountMaps.last?.containerIDs == ["6A5B4C3D-2E1F-4A0B-9C8D-7E6F5A4B3C2D"])
    }

    @Test("an iOS 6 store in CloudStore.nosync and its iOS 7 copy under the store name")
    func ios6() throws {
        let tmp = try TempDir()
        let v0 = "5D4C3B2A-1908-4756-A5B4-C3D2E1F00F1E"
        var o = FixtureContainer.Options()
        o.ios6UUID = v0
        o.ios6CopyUUID = v0
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"), o)
        let report = try Inspection(options: LayoutOptions(container: paths.root), depth: .check).run()
        let copies = report.stores.filter { $0.uuid == v0 }
        #expect(Set(copies.map(\.location)) == [.nosync, .coreDataCopy])
        #expect(copies.allSatisfy { $0.cloudVersion == 0 && $0.health == .ok })
        #expect(report.layout.cloudStores.first { $0.uuid == v0 }?.cloudVersion == 0)
    }

    @Test("UIManagedDocument packages: given with --document, found in a download and in the ubiquity container")
    func documents() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"))
        let local = try FixtureContainer.writeDocument(
            at: paths.root.appendingPathComponent("AppData/Documents/Trip.notesdoc"))
        let nosync = try FixtureContainer.writeDocument(
            at: paths.cloudDir.appendingPathComponent("Documents/Old.notesdoc"), nosync: true)
        let ios7 = try FixtureContainer.writeDocument(
            at: paths.cloudDir.appendingPathComponent("Documents/New.notesdoc"), ubiquityCopy: true)
        let before = try paths.folders.map(TreeSnapshot.init)

        let report = try Inspection(options: LayoutOptions(container: paths.root), depth: .check).run()
        #expect(report.layout.documents.count == 3)
        #expect(Set(report.layout.documents.map(\.storeContent)) == ["StoreContent", "StoreContent.nosync"])
        #expect(report.layout.documents.first { $0.path.hasSuffix("New.notesdoc") }?.contentName == "NotesDoc")
        for store in [local, nosync, ios7] {
            let found = try #require(report.stores.first { $0.path == store.path }, "\(store.path)")
            #expect(found.role == .document && found.health == .ok)
            #expect(found.objects == 18)
        }
        #expect(report.stores.first { $0.path == ios7.path }?.copy?.contentName == "NotesDoc")

        let one = USM.run([
            "check", "--document", local.deletingLastPathComponent().deletingLastPathComponent().path, "--json",
        ])
        #expect(one.status == 0, "\(one.stdout)")
        #expect((one.json["stores"] as? [[String: Any]])?.first?["role"] as? String == "document")
        #expect((one.json["layout"] as? [String: Any])?["mode"] as? String == "document")
        #expect(one.json["nextLaunch"] is NSNull)

        // A bundle holds the whole package and restores it byte for byte.
        let archive = tmp.path("d.tar.zst")
        let a = USM.run([
            "archive", "--document", local.deletingLastPathComponent().deletingLastPathComponent().path, "-o",
            archive.path,
        ])
        #expect(a.status == 0, "\(a.stderr)")
        #expect(USM.run(["restore", archive.path, "--to", tmp.path("back").path]).status == 0)
        let restored = try TreeSnapshot(tmp.path("back/document"))
        #expect(try restored == TreeSnapshot(paths.root.appendingPathComponent("AppData/Documents/Trip.notesdoc")))
        #expect(try paths.folders.map(TreeSnapshot.init) == before)
        #expect(USM.run(["status", "--document", tmp.path("nowhere").path]).status == 66)
        #expect(USM.run(["status", "--document", paths.appDir.path]).status == 2, "not a document package")
    }

    @Test("Apple's own iOS 7 ubiquity folders of an app without UbiquityStoreManager")
    func appleLayout() throws {
        let tmp = try TempDir()
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"))
        let stores = try FixtureContainer.writeAppleUbiquity(in: paths.root.appendingPathComponent("AppData/Documents"))
        let report = try Inspection(options: LayoutOptions(container: paths.root), depth: .check).run()
        let found = report.stores.filter { $0.role == .ubiquity }
        #expect(Set(found.map(\.path)) == Set(stores.map(\.path)))
        #expect(Set(found.compactMap { $0.copy?.account }) == ["80693193-0A2B-4C3D-8E4F-5A6B7C8D9E0F", "local"])
        #expect(
            found.allSatisfy { $0.copy?.contentName == "persistentStore_ICLOUD" && $0.copy?.containerFolder != nil })
        #expect(found.allSatisfy { $0.health == .ok && $0.problems.isEmpty }, "\(found.map(\.problems))")

        let archive = tmp.path("a.tar.zst")
        #expect(USM.run(["archive", "--container", paths.root.path, "-o", archive.path]).status == 0)
        #expect(USM.run(["restore", archive.path, "--to", tmp.path("back").path]).status == 0)
        let rel =
            "AppData/Documents/CoreDataUbiquitySupport/mobile~8F7E6D5C-4B3A-4291-8070-6F5E4D3C2B1A/persistentStore_ICLOUD/local"
        let back = try TreeSnapshot(tmp.path("back/container/\(rel)"))
        #expect(
            try back == TreeSnapshot(paths.root.appendingPathComponent(rel)), "store/ and container/ come back whole")
    }

    @Test(
        "the ubiquity container: inside the download, beside it, or named",
        arguments: [
            FixtureContainer.CloudLocation.inside, .beside,
        ])
    func cloudLocation(_ location: FixtureContainer.CloudLocation) throws {
        let tmp = try TempDir()
        var o = FixtureContainer.Options()
        o.cloudLocation = location
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"), o)
        let found = try Layout.discover(LayoutOptions(container: paths.root))
        #expect(found.cloudDirectory?.path == paths.cloudDir.path)
        let named = try Layout.discover(
            LayoutOptions(appDirectory: paths.appDir, cloudDirectory: paths.cloudDir, preferences: paths.prefs))
        #expect(named.activeMarker?.value == o.activeUUID)
        #expect(named.copies(of: o.activeUUID).count == 1)
    }

    @Test(
        "every corpus store as the local store and as Core Data's copy of the active cloud store",
        arguments: Corpus.stores())
    func corpusInLayouts(store: URL) throws {
        let tmp = try TempDir()
        var o = FixtureContainer.Options()
        o.localStore = false
        o.activeStoreCopy = false
        o.oldUUID = nil
        let paths = try FixtureContainer.write(to: tmp.path("Notes.xcappdata"), o)
        let copyDir = paths.cloudStore(o.activeUUID).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: copyDir, withIntermediateDirectories: true)
        let localCopy = try Corpus.copy(store, into: paths.appDir)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: localCopy.path + suffix) {
            try FileManager.default.moveItem(atPath: localCopy.path + suffix, toPath: paths.localStore.path + suffix)
        }
        let cloudCopy = try Corpus.copy(store, into: copyDir)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: cloudCopy.path + suffix) {
            try FileManager.default.moveItem(
                atPath: cloudCopy.path + suffix, toPath: paths.cloudStore(o.activeUUID).path + suffix)
        }
        let before = try paths.folders.map(TreeSnapshot.init)
        let alone = try Inspection(options: LayoutOptions(store: store), depth: .status).run().stores[0]
        let report = try Inspection(options: LayoutOptions(container: paths.root), depth: .status).run()
        let local = try #require(report.stores.first { $0.role == .local })
        let cloud = try #require(report.stores.first { $0.role == .cloud })
        #expect(local.objects == alone.objects && cloud.objects == alone.objects)
        #expect(cloud.location == .coreDataCopy && cloud.active == true && cloud.opens == true)
        #expect(report.nextLaunch?.state == "E4")
        #expect(try paths.folders.map(TreeSnapshot.init) == before)
    }
}
