import CofferCore
import CofferStore
import Synchronization

/// Database faults a test arms on a ``CountingStore``: the database goes away for one operation, either before
/// it runs (nothing happened) or right after a write committed (the commit happened, its answer was lost). The
/// plan remembers which writes committed while it was armed, so a test knows what a failed request changed.
final class FaultPlan: Sendable {
    /// One fault.
    enum Fault: Sendable, Equatable {
        /// The `call`-th operation from now (0 is the next) fails before it runs.
        case refuse(call: Int)
        /// The next write runs and commits, then fails as if the connection dropped during COMMIT.
        case loseCommit
    }

    private struct State {
        var armed: Fault?
        var calls = 0
        var fired = false
        var committed: [String] = []
    }

    private let state = Mutex(State())

    /// The error a faulted operation throws: the database went away.
    static let error = StoreError.unavailable("the database went away (an injected fault)")

    /// Arms `fault` and forgets what happened before.
    func arm(_ fault: Fault?) {
        state.withLock { $0 = State(armed: fault) }
    }

    /// Disarms the plan. Returns whether the fault fired and the writes that committed while it was armed.
    @discardableResult
    func disarm() -> (fired: Bool, committed: [String]) {
        state.withLock { state in
            defer { state = State() }
            return (state.fired, state.committed)
        }
    }

    func before(_ name: String) throws(StoreError) {
        let fail = state.withLock { state -> Bool in
            defer { state.calls += 1 }
            guard case .refuse(let call) = state.armed, call == state.calls else { return false }
            state.armed = nil
            state.fired = true
            return true
        }
        if fail { throw Self.error }
    }

    func after(_ name: String, write: Bool) throws(StoreError) {
        guard write else { return }
        let fail = state.withLock { state -> Bool in
            state.committed.append(name)
            guard state.armed == .loseCommit else { return false }
            state.armed = nil
            state.fired = true
            return true
        }
        if fail { throw Self.error }
    }
}
