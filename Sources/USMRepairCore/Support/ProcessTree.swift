import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Everything one plugin run started, followed through `/proc` (Linux): the plugin's process, its
/// descendants seen while it runs (remembered with their start time, so that a child reparented
/// after its parent exited is still known, and a reused pid is not), and any live process whose
/// environment carries the run's token (a child started with `setsid`, or reparented before it
/// was seen, keeps it). A process group alone is not enough: `setsid` leaves it.
/// On other systems only the process group is stopped (`ChildProcess`).
struct ProcessTree {
    /// The environment variable that marks every process of one run.
    static let tokenVariable = "USM_REPAIR_PLUGIN_RUN"

    /// The plugin's process.
    let root: Int32
    /// The value of `tokenVariable` in this run's environment.
    let token: String
    /// Every process seen in the tree, with its start time (clock ticks after boot).
    private(set) var known: [Int32: UInt64] = [:]

    init(root: Int32, token: String) {
        self.root = root
        self.token = token
        #if os(Linux)
            if let entry = Self.stat(root) { known[root] = entry.start }
        #endif
    }

    /// When the tree was last read: reading `/proc` costs, so at most every `interval`.
    private var lastRefresh = Date.distantPast
    static let interval: TimeInterval = 0.05

    /// Records the live descendants of the tree as it is now (if not read in the last `interval`).
    mutating func refresh() {
        #if os(Linux)
            let now = Date()
            guard now.timeIntervalSince(lastRefresh) >= Self.interval else { return }
            lastRefresh = now
            for (pid, start) in members(table: Self.table(), byEnvironment: false) { known[pid] = start }
        #endif
    }

    /// Kills every live process of the run but the root (which the caller reaps), again until none
    /// is left (a process may fork while the others are killed); reaps those that became our
    /// children. Returns how many were killed.
    @discardableResult
    mutating func killAll() -> Int {
        #if os(Linux)
            var killed = Set<Int32>()
            for _ in 0..<50 {
                let live = members(table: Self.table(), byEnvironment: true).filter { $0.key != root }
                if live.isEmpty { break }
                for (pid, start) in live {
                    known[pid] = start
                    kill(pid, SIGKILL)
                    killed.insert(pid)
                }
                usleep(2000)
            }
            // Those reparented to this process (a subreaper) are reaped here; others by init.
            var status: Int32 = 0
            for pid in killed { _ = waitpid(pid, &status, WNOHANG) }
            return killed.count
        #else
            return 0
        #endif
    }

    #if os(Linux)
        /// One process as `/proc/<pid>/stat` shows it.
        struct Entry {
            let parent: Int32
            let start: UInt64
        }

        /// Every live (not zombie) process: parent and start time.
        static func table() -> [Int32: Entry] {
            var table: [Int32: Entry] = [:]
            guard let dir = opendir("/proc") else { return table }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                guard let pid = Int32(name), let found = stat(pid) else { continue }
                table[pid] = found
            }
            return table
        }

        /// Parent and start time of `pid`, nil when it is gone or a zombie.
        static func stat(_ pid: Int32) -> Entry? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = text.lastIndex(of: ")")
            else { return nil }
            // After the command name: state (field 3), parent (4), ..., start time (22).
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 19, fields[0] != "Z", fields[0] != "X", let parent = Int32(fields[1]),
                let start = UInt64(fields[19])
            else { return nil }
            return Entry(parent: parent, start: start)
        }

        /// True when `pid`'s environment holds this run's token.
        func carriesToken(_ pid: Int32) -> Bool {
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            let needle = Data("\(Self.tokenVariable)=\(token)".utf8)
            return data.split(separator: 0).contains { $0.elementsEqual(needle) }
        }

        /// The live processes of the run: the root, those known still alive (same start time),
        /// those carrying the token (when asked), and every descendant of them.
        func members(table: [Int32: Entry], byEnvironment: Bool) -> [Int32: UInt64] {
            var found: [Int32: UInt64] = [:]
            var queue: [Int32] = []
            func add(_ pid: Int32) {
                guard pid != getpid(), found[pid] == nil, let entry = table[pid] else { return }
                found[pid] = entry.start
                queue.append(pid)
            }
            for (pid, start) in known where table[pid]?.start == start { add(pid) }
            if byEnvironment {
                for pid in table.keys where carriesToken(pid) { add(pid) }
            }
            var children: [Int32: [Int32]] = [:]
            for (pid, entry) in table { children[entry.parent, default: []].append(pid) }
            while let pid = queue.popLast() {
                for child in children[pid] ?? [] { add(child) }
            }
            return found
        }
    #endif
}
