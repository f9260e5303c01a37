import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFuzzDriver
@testable import USMRepairCore

/// What every fuzz target shares: a private folder for the inputs a parser only reads from a path,
/// and the oracle for errors (bad input is a `USMError` with a documented exit code, never anything else).
public enum Fuzz {
    /// This process's private folder (under `TMPDIR`), made once and removed when the process exits.
    public static let folder: URL = {
        let base = FileManager.default.temporaryDirectory
        let url = base.appendingPathComponent("usm-repair-fuzz-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        do { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) } catch {
            fail("cannot create the fuzz folder \(url.path): \(error)")
        }
        atexit { try? FileManager.default.removeItem(at: Fuzz.folder) }
        return url
    }()

    /// Runs libFuzzer with `test` as the target (each target's `main`: SwiftPM gives every
    /// executable a `main` of its own, so libFuzzer's is not used).
    public static func run(_ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, test))
    }

    /// The input as bytes.
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Writes `bytes` to `folder/name` (replacing what the previous run left there) and returns its URL.
    @discardableResult
    public static func write(_ bytes: [UInt8], to name: String, in folder: URL = Fuzz.folder) -> URL {
        let url = folder.appendingPathComponent(name)
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fail("cannot write \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            guard n > 0 else { fail("cannot write \(url.path): \(String(cString: strerror(errno)))") }
            done += n
        }
        return url
    }

    /// A fresh empty folder `folder/name` (whatever the previous run left there removed).
    public static func freshFolder(_ name: String) -> URL {
        let url = folder.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.removeItem(at: url)
        do { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) } catch {
            fail("cannot create \(url.path): \(error)")
        }
        return url
    }

    /// Runs `body`; an error it throws must be a `USMError` other than `unexpected` (every error a
    /// user can cause maps to a documented exit code). Anything else is a finding: it stops the run.
    public static func expectDocumented(_ what: String, _ body: () throws -> Void) {
        do { try body() } catch let error as USMError {
            if case let .unexpected(message) = error { fail("\(what): an unexpected error: \(message)") }
        } catch {
            fail("\(what): an error usm-repair does not document: \(type(of: error)): \(error)")
        }
    }

    /// Stops the process as a finding (libFuzzer saves the input as `crash-*`).
    public static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("FUZZ FINDING: \(message)\n".utf8))
        abort()
    }

    /// Checks an invariant the code under test promises.
    public static func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { fail(message()) }
    }
}
