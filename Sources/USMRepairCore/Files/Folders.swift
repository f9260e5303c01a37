import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Creating folders with errors that name the folder and say why in plain words (Foundation's
/// errors on Linux can arrive without a path: "cannot read : Error Domain=NSCocoaErrorDomain...").
enum Folders {
    /// Creates `path` and any missing folders above it with `mode`.
    /// - Throws: `writeFailed` naming the first folder that could not be made, with `purpose` and the system's reason.
    static func create(_ path: String, mode: mode_t, purpose: String) throws {
        var missing: [String] = []
        var current = path
        while FileStatus.lookup(current) == nil, current != "/", current != "." {
            missing.append(current)
            current = FileSystemPath.parent(current)
        }
        for folder in missing.reversed() {
            guard FileSystemPath.withCString(folder, { mkdir($0, mode) }) == 0 || errno == EEXIST else {
                throw USMError.writing(folder, purpose: purpose)
            }
        }
    }
}
