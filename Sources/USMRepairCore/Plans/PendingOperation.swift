import Foundation

/// An operation folder found in a layout (`<root>/<private>/operations/<id>/` holding a
/// `plan.json`), judged before anything of it is obeyed. It is trusted only when:
/// 1. its name is a plain id and this machine recorded writing a plan of that id
///    (`OperationRecords`);
/// 2. its `plan.json` has exactly the digest recorded (read once, bounded, hashed, then decoded);
/// 3. the plan works in the folders recorded, which are among the folders the user named, and
///    passes `PlanCheck` (every path inside those folders, staging and trash in its own folder);
/// 4. it lies in its own primary folder.
/// Its journal is then read as a stream: which steps began, and whether it committed (the
/// `committed` event counts only after the commit step began).
struct PendingOperation {
    let folder: URL
    let plan: Plan
    let journal: Journal.State

    /// True when the operation reached its commit step: recovery finishes it.
    var committed: Bool {
        guard journal.committed, let commit = plan.steps.firstIndex(where: { $0.action == .commit }) else {
            return false
        }
        return journal.begun.contains(commit)
    }

    /// Loads and judges the operation in `folder`.
    /// - Throws: `untrustedOperation` (refused, exit 3) naming the folder and why; `unreadable`.
    static func load(_ folder: URL, allowed: [Plan.Root], records: OperationRecords) throws -> PendingOperation {
        func refuse(_ reason: String) -> USMError { .untrustedOperation(path: folder.path, reason: reason) }
        let name = folder.lastPathComponent
        guard PlanCheck.isPlainID(name) else {
            throw refuse("its name is not one usm-repair gives its operation folders")
        }
        guard let record = records.read(name) else {
            throw refuse(
                "this machine has no record of writing it (usm-repair records every operation it starts in \(records.folder.path))"
            )
        }
        let bytes = try Journal.planBytes(in: folder)
        guard OperationRecords.digest(bytes) == record.sha256 else {
            throw refuse("its plan.json is not the plan usm-repair wrote (its digest differs from the one recorded)")
        }
        let plan: Plan
        do { plan = try JSONDecoder().decode(Plan.self, from: bytes) } catch {
            throw refuse("its plan.json is not a plan of usm-repair")
        }
        guard plan.roots.map(\.path) == record.roots else { throw refuse("its folders are not the ones recorded") }
        // A folder it works in that was not given (an emptied ubiquity container is not found
        // beside a download): it is recovered only once the user names it.
        if let missing = plan.roots.first(where: { root in !allowed.contains { $0.path.pathKey == root.path.pathKey } }
        ),
            missing.privateFolder == ".usm-repair.nosync",
            PlanCheck.problem(in: plan, folderName: name, allowed: nil) == nil
        {
            throw USMError.cloudContainerRequired(
                operation: "recovering the interrupted \(plan.operation) in \(folder.path)",
                why:
                    "it also works in \(missing.path), which was not given or found; run it again with --cloud-dir \(missing.path)"
            )
        }
        if let problem = PlanCheck.problem(in: plan, folderName: name, allowed: allowed) { throw refuse(problem) }
        guard let primary = plan.primaryRoot, primary.operationURL(plan.id).path.pathKey == folder.path.pathKey else {
            throw refuse("it lies outside its own operation folder")
        }
        return PendingOperation(
            folder: folder, plan: plan, journal: Journal.state(in: folder, stepCount: plan.steps.count))
    }
}
