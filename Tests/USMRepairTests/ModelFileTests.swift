import Foundation
import GRDB
import Testing
import TestSupport
@testable import USMRepairCore

/// `--model`: the app's model read from Xcode's XML (or a compiled model), and what it makes
/// possible on a store without a model cache: a merge that moves to-one keys whose destination the
/// column name does not say, and a salvage that names the entities a lost `Z_PRIMARYKEY` held.
@Suite("model files (--model)", .timed)
struct ModelFileTests {
    /// A Car/Person model, versioned as Xcode writes it. Car → SportCar → ExpensiveSportCar; the
    /// to-one `owner` points at Person, which its column name (ZOWNER) does not say.
    static let contents = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="1">
            <entity name="Car" representedClassName="Car" syncable="YES">
                <attribute name="maker" optional="YES" attributeType="String"/>
                <attribute name="numberPlate" attributeType="String"/>
                <attribute name="speed" optional="YES" transient="YES" attributeType="Integer 64"/>
                <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="cars" inverseEntity="Person"/>
                <uniquenessConstraints><uniquenessConstraint><constraint value="numberPlate"/></uniquenessConstraint></uniquenessConstraints>
            </entity>
            <entity name="ExpensiveSportCar" representedClassName="ExpensiveSportCar" parentEntity="SportCar" syncable="YES">
                <attribute name="isLimitedEdition" optional="YES" attributeType="Boolean" usesScalarValueType="YES"/>
            </entity>
            <entity name="Person" representedClassName="Person" syncable="YES">
                <attribute name="firstName" optional="YES" attributeType="String"/>
                <relationship name="cars" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Car" inverseName="owner" inverseEntity="Car"/>
            </entity>
            <entity name="SportCar" representedClassName="SportCar" parentEntity="Car" syncable="YES"/>
        </model>
        """

    /// Writes `Garage.xcdatamodeld` (two versions, the current one named) under `folder`.
    static func writeModel(in folder: URL) throws -> URL {
        let model = folder.appendingPathComponent("Garage.xcdatamodeld")
        for version in ["Garage.xcdatamodel", "Garage 2.xcdatamodel"] {
            try FileManager.default.createDirectory(
                at: model.appendingPathComponent(version), withIntermediateDirectories: true)
            try (version == "Garage 2.xcdatamodel" ? contents : "<model/>").write(
                to: model.appendingPathComponent(version).appendingPathComponent("contents"), atomically: true,
                encoding: .utf8)
        }
        try """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>Garage 2.xcdatamodel</string></dict></plist>
        """.write(to: model.appendingPathComponent(".xccurrentversion"), atomically: true, encoding: .utf8)
        return model
    }

    /// A store of that model as Core Data lays it out (entities numbered depth first by name), with
    /// no model cache: `persons` people, `cars` cars owned in turn, names prefixed by `prefix`.
    static func writeStore(_ url: URL, persons: Int, cars: Int, prefix: String) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE ZCAR ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, ZISLIMITEDEDITION INTEGER,
                        ZMAKER VARCHAR, ZNUMBERPLATE VARCHAR );
                    CREATE INDEX ZCAR_ZOWNER_INDEX ON ZCAR (ZOWNER);
                    CREATE INDEX ZCAR_Z_ENT_INDEX ON ZCAR (Z_ENT);
                    CREATE UNIQUE INDEX Z_Car_UNIQUE_numberPlate ON ZCAR (ZNUMBERPLATE COLLATE BINARY ASC);
                    CREATE TABLE ZPERSON ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFIRSTNAME VARCHAR );
                    CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                    CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
                    """)
            for p in 0..<persons {
                try db.execute(
                    sql: "INSERT INTO ZPERSON VALUES (?, 4, 1, ?)", arguments: [p + 1, "\(prefix) person \(p + 1)"])
            }
            for c in 0..<cars {
                try db.execute(
                    sql: "INSERT INTO ZCAR VALUES (?, ?, 1, ?, ?, ?, ?)",
                    arguments: [
                        c + 1, 1 + c % 3, persons > 0 ? c % persons + 1 : nil, c % 3 == 2 ? 1 : nil, "maker \(c)",
                        "\(prefix)-\(c)",
                    ])
            }
            try db.execute(
                sql:
                    "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Car', 0, ?), (2, 'SportCar', 1, 0), (3, 'ExpensiveSportCar', 2, 0), (4, 'Person', 0, ?)",
                arguments: [cars, persons])
            let plist = try PropertyListSerialization.data(
                fromPropertyList: ["NSStoreType": "SQLite", "NSStoreModelVersionHashesVersion": 3],
                format: .binary, options: 0)
            try db.execute(sql: "INSERT INTO Z_METADATA VALUES (1, ?, ?)", arguments: [UUID().uuidString, plist])
        }
        try queue.close()
    }

    @Test(
        "an .xcdatamodeld is read at its current version: entities, inherited properties, relationships, constraints, Core Data's numbers"
    )
    func reads() throws {
        let tmp = try TempDir()
        let model = try ModelFile.load(Self.writeModel(in: tmp.url))
        #expect(model.entities.map(\.name) == ["Car", "ExpensiveSportCar", "Person", "SportCar"])
        let expensive = try #require(model.entity(named: "ExpensiveSportCar"))
        #expect(expensive.parent == "SportCar")
        #expect(
            expensive.attributes == ["isLimitedEdition", "maker", "numberPlate"], "transient attributes are not stored")
        let owner = try #require(expensive.relationships.first { $0.name == "owner" })
        #expect(owner.destination == "Person" && !owner.isToMany && owner.inverse == "cars")
        #expect(model.entity(named: "Person")?.relationships.first?.isToMany == true)
        #expect(model.entity(named: "Car")?.uniquenessConstraints == [["numberPlate"]])
        #expect(model.entity(named: "Car")?.attributeTypes["numberPlate"] == "String")
        let numbers = model.entityNumbers()
        #expect(
            numbers["Car"]?.number == 1 && numbers["SportCar"]?.number == 2 && numbers["ExpensiveSportCar"]?.number == 3
        )
        #expect(numbers["ExpensiveSportCar"]?.superNumber == 2 && numbers["Person"]?.number == 4)
        // The version folder and its contents file are read the same way.
        #expect(try ModelFile.load(tmp.path("Garage.xcdatamodeld/Garage 2.xcdatamodel")) == model)
        #expect(try ModelFile.load(tmp.path("Garage.xcdatamodeld/Garage 2.xcdatamodel/contents")) == model)
    }

    @Test("what is not a model is model-invalid (exit 2), a missing one not-found (66)")
    func invalid() throws {
        let tmp = try TempDir()
        try Data("not xml at all".utf8).write(to: tmp.path("contents"))
        try FileManager.default.createDirectory(
            at: tmp.path("Two.xcdatamodeld/A.xcdatamodel"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: tmp.path("Two.xcdatamodeld/B.xcdatamodel"), withIntermediateDirectories: true)
        #expect(throws: USMError.self) { try ModelFile.load(tmp.path("contents")) }
        #expect(throws: USMError.self) { try ModelFile.load(tmp.path("Two.xcdatamodeld")) }
        try Self.writeStore(tmp.path("s/S.sqlite"), persons: 1, cars: 1, prefix: "s")
        let r = USM.run([
            "migrate-store", tmp.path("s/S.sqlite").path, tmp.path("s/D.sqlite").path, "--model",
            tmp.path("contents").path, "--json",
        ])
        #expect(r.status == 2)
        #expect((r.json["error"] as? [String: Any])?["code"] as? String == "model-invalid")
        #expect(
            USM.run([
                "migrate-store", tmp.path("s/S.sqlite").path, tmp.path("s/E.sqlite").path, "--model",
                tmp.path("none").path,
            ]).status == 66)
        // A model's XML with a processing instruction without data: FoundationXML would crash on it.
        let model = try Self.writeModel(in: tmp.url.appendingPathComponent("pi"))
        let contents = model.appendingPathComponent("Garage 2.xcdatamodel/contents")
        let xml = try String(contentsOf: contents, encoding: .utf8)
        try Data(xml.replacingOccurrences(of: "<model ", with: "<?m?><model ").utf8).write(to: contents)
        #expect {
            try ModelFile.load(model)
        } throws: { error in
            "\(error)".contains("processing instruction without data")
        }
    }

    @Test(
        "a merge that refuses because the source's to-one key has no known destination works with --model, keys moved with the rows"
    )
    func mergeWithModel() throws {
        let tmp = try TempDir()
        let model = try Self.writeModel(in: tmp.url)
        try Self.writeStore(tmp.path("src/S.sqlite"), persons: 2, cars: 3, prefix: "src")
        try Self.writeStore(tmp.path("dst/D.sqlite"), persons: 5, cars: 4, prefix: "dst")
        let refused = USM.run(["migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--into"])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("does not say where it points"), "\(refused.stderr)")
        let r = USM.run([
            "migrate-store", tmp.path("src/S.sqlite").path, tmp.path("dst/D.sqlite").path, "--into", "--model",
            model.path,
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let queue = try DatabaseQueue(path: tmp.path("dst/D.sqlite").path)
        defer { try? queue.close() }
        let owners = try queue.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT c.ZNUMBERPLATE, p.ZFIRSTNAME FROM ZCAR c LEFT JOIN ZPERSON p ON p.Z_PK = c.ZOWNER WHERE c.ZNUMBERPLATE LIKE 'src-%' ORDER BY 1"
            )
            .map { "\($0[0] as String): \(($0[1] as String?) ?? "none")" }
        }
        #expect(owners == ["src-0: src person 1", "src-1: src person 2", "src-2: src person 1"])
    }

    @Test("--model goes through the path resolver: relative to the command's folder, ~ its HOME")
    func modelPathResolved() throws {
        // Origin: issue 30's review, `StrategyFlags.loadedModel` read a relative path from the
        // process's folder and `~` from the process's home.
        let tmp = try TempDir()
        let model = try Self.writeModel(in: tmp.path("home/models"))
        #expect(model.path.hasPrefix(tmp.path("home").path))
        try Self.writeStore(tmp.path("src/S.sqlite"), persons: 2, cars: 3, prefix: "src")
        let relative = "home/models/" + model.lastPathComponent
        for (name, path, home) in [
            ("D", relative, nil), ("E", "~/models/" + model.lastPathComponent, tmp.path("home").path),
        ] {
            try Self.writeStore(tmp.path("dst/\(name).sqlite"), persons: 5, cars: 4, prefix: "dst")
            let r = USM.run(
                ["migrate-store", "src/S.sqlite", "dst/\(name).sqlite", "--into", "--model", path],
                environment: home.map { ["HOME": $0] } ?? [:], in: tmp.url)
            #expect(r.status == 0, "\(path): \(r.stderr)")
        }
    }

    @Test("salvage --model: a lost Z_PRIMARYKEY is named from the model, a to-one key to a lost row is cut")
    func salvageWithModel() throws {
        let tmp = try TempDir()
        let model = try Self.writeModel(in: tmp.url)
        try Self.writeStore(tmp.path("src/S.sqlite"), persons: 40, cars: 300, prefix: "s")
        let map = try PageMap.read(tmp.path("src/S.sqlite"))
        let lost = (map.leaves["Z_PRIMARYKEY"] ?? []).map(\.page) + [try #require(map.leaves["ZPERSON"]?.first?.page)]
        try StoreDamage.overwrite(tmp.path("src/S.sqlite"), pages: lost, pageSize: map.pageSize)
        try FileManager.default.createDirectory(at: tmp.path("out"), withIntermediateDirectories: true)
        let refused = USM.run(["salvage", tmp.path("src/S.sqlite").path, tmp.path("out/A.sqlite").path])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--model"))
        let r = USM.run([
            "salvage", tmp.path("src/S.sqlite").path, tmp.path("out/B.sqlite").path, "--model", model.path, "--json",
        ])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(
            Set(r.details["entitiesRestored"] as? [String] ?? []) == ["Car", "SportCar", "ExpensiveSportCar", "Person"])
        #expect(r.details["relationships"] as? String == "model")
        let cuts = r.details["referencesCut"] as? [[String: Any]] ?? []
        #expect(
            cuts.contains {
                $0["table"] as? String == "ZCAR" && $0["column"] as? String == "ZOWNER" && ($0["rows"] as? Int ?? 0) > 0
            }, "\(cuts)")
        #expect(USM.run(["check", "--store", tmp.path("out/B.sqlite").path]).status == 0)
        let rows = try StoreRows.read(tmp.path("out/B.sqlite"))
        #expect(rows["ZCAR"]?.count == 300)
        #expect(
            Set(rows["Z_PRIMARYKEY"]?.values.map { "\($0[0]):\($0[1])" } ?? []) == [
                "1:\"Car\"", "2:\"SportCar\"", "3:\"ExpensiveSportCar\"", "4:\"Person\"",
            ])
    }
}

/// The corpus's own models and caches: Core Data's entity numbering holds on real stores.
@Suite(
    "model files on the real corpus", .timed,
    .enabled(if: Corpus.directory != nil, "../shared/corpus/real is not beside this checkout"))
struct ModelCorpusTests {
    @Test(
        "every decodable model cache numbers its entities as the store's Z_PRIMARYKEY does", arguments: Corpus.stores())
    func numbering(store: URL) throws {
        let tmp = try TempDir()
        let copy = try Corpus.copy(store, into: tmp.url)
        let schema = try CoreDataSchema.load(from: copy)
        guard let model = schema.model else { return }
        let numbers = model.entityNumbers()
        for entity in schema.userEntities {
            #expect(numbers[entity.name]?.number == entity.number, "\(store.lastPathComponent): \(entity.name)")
        }
    }

    @Test("the SampleModel XML in the corpus reads, and numbers its entities as the store made with it")
    func sampleModel() throws {
        let root = try #require(Corpus.directory).appendingPathComponent("cdplus-SampleModel_V1")
        let model = try ModelFile.load(root.appendingPathComponent("model/SampleModel.xcdatamodeld"))
        let tmp = try TempDir()
        let schema = try CoreDataSchema.load(
            from: try Corpus.copy(root.appendingPathComponent("SampleModel_V1.sqlite"), into: tmp.url))
        let numbers = model.entityNumbers()
        for entity in schema.userEntities { #expect(numbers[entity.name]?.number == entity.number, "\(entity.name)") }
        #expect(model.entity(named: "Car")?.relationships.first { $0.name == "owner" }?.destination == "Person")
    }

    @Test("every corpus store salvages to an exact copy, exit 0, its files unchanged", arguments: Corpus.stores())
    func salvageExact(store: URL) throws {
        let tmp = try TempDir()
        let before = try TreeSnapshot(store.deletingLastPathComponent())
        let output = tmp.path(store.lastPathComponent)
        let r = USM.run(["salvage", store.path, output.path])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try TreeSnapshot(store.deletingLastPathComponent()).differences(from: before).isEmpty)
        let original = try StoreRows.read(store)
        let salvaged = try StoreRows.read(output)
        for (table, rows) in original where table != "Z_METADATA" { #expect(salvaged[table] == rows, "\(table)") }
    }
}
