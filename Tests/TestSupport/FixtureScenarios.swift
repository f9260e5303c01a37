import Foundation

extension FixtureContainer {
    /// A named situation a support engineer meets, as fixture options: the scenarios the suite runs
    /// whole-layout checks over (advice, predictions, operations).
    public struct Scenario: Sendable, CustomStringConvertible {
        public let name: String
        public let configure: @Sendable (inout Options) -> Void

        public init(_ name: String, _ configure: @escaping @Sendable (inout Options) -> Void) {
            self.name = name
            self.configure = configure
        }

        public var description: String { name }

        /// The options of this scenario.
        public var options: Options {
            var o = Options()
            configure(&o)
            return o
        }
    }

    /// An empty store's options (the model, no objects).
    public static var emptyStore: FixtureStore.Options {
        var o = FixtureStore.Options()
        o.books = 0
        o.magazines = 0
        o.authors = 0
        o.shelves = 0
        o.tags = 0
        o.walOnlyBooks = 0
        o.externalCovers = 0
        return o
    }

    /// Every scenario of the suite's whole-layout checks.
    public static let scenarios: [Scenario] = [
        Scenario("the example: active store, its copy and logs, cache matching") { _ in },
        Scenario("active store marked corrupt") { $0.corruptedUUID = $0.activeUUID },
        Scenario("another store marked corrupt") { $0.corruptedUUID = $0.oldUUID },
        Scenario("stale cached StoreUUID (E5)") { $0.cache = .stale("A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF") },
        Scenario("cache under the version-0 key") { $0.cache = .otherVersion },
        Scenario("marker with a trailing newline (E12)") { $0.markers = ["StoreUUID+": $0.activeUUID + "\n"] },
        Scenario("empty marker (E12)") { $0.markers = ["StoreUUID+": ""] },
        Scenario("no marker, no cache, local -wal unmerged (E2)") {
            $0.markers = [:]
            $0.cache = .none
            $0.local.walOnlyBooks = 2
        },
        Scenario("cache without a marker (4.7c)") { $0.markers = [:] },
        Scenario("two copies of the active store, no account map") {
            $0.accountMap = false
            $0.extraCopies = [(peer: "mobile~0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D", account: "local")]
        },
        Scenario("iCloud off: the app runs on its local store (E1)") { $0.cloudEnabled = false },
        Scenario("no local store") { $0.localStore = false },
        Scenario("no copy of the active store here, logs present (E6)") { $0.activeStoreCopy = false },
        Scenario("no copy and no logs of the active store (E7)") {
            $0.activeStoreCopy = false
            $0.activeLogs = false
        },
        Scenario("a stray file at the nominal URL (E13)") { $0.nominalFile = true },
        Scenario("an iOS 6 store only (E8)") {
            $0.markers = ["StoreUUID": "5E6F7A8B-9C0D-4E1F-8A2B-3C4D5E6F7A8B"]
            $0.ios6UUID = "5E6F7A8B-9C0D-4E1F-8A2B-3C4D5E6F7A8B"
            $0.cache = .none
        },
        Scenario("the download alone, no ubiquity container") { $0.cloudLocation = .none },
        Scenario("the app opens an empty cloud store while the local store holds the data") {
            $0.cloud = FixtureContainer.emptyStore
            $0.cloud.ubiquityMetadata = true
        },
        Scenario("the local store is empty, the cloud store holds the data") { $0.local = FixtureContainer.emptyStore },
        Scenario("the active store is empty, the old store's copy holds the data") {
            $0.old = $0.cloud
            $0.cloud = FixtureContainer.emptyStore
            $0.cloud.ubiquityMetadata = true
            $0.local = FixtureContainer.emptyStore
        },
    ]
}
