import CofferCore
import Foundation
import Synchronization

/// A clock a test moves by hand: what it injects as `now` reads the time the test set, and what sleeps on it
/// (a ``TimerClock``) wakes when the test moves the clock past its wake time, so a test steps time instead of
/// sleeping and never depends on how fast this machine is.
public final class TestClock: TimerClock, Sendable {
    private struct Sleeper {
        var wake: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var date: Date
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelled: Set<UInt64> = []
        var next: UInt64 = 0
    }

    private let start: Date
    private let state: Mutex<State>

    /// A clock at `start` (2026-01-01T00:00:00Z unless given).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        self.start = start
        state = Mutex(State(date: start))
    }

    /// The time now, as the clock reads.
    public func now() -> Date { state.withLock { $0.date } }

    /// The clock as a closure, for what takes `now: @Sendable () -> Date`.
    public var reading: @Sendable () -> Date { { self.now() } }

    /// The time since the clock started (``TimerClock``).
    public var elapsed: Duration { .seconds(now().timeIntervalSince(start)) }

    /// How many tasks sleep on the clock now.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Moves the clock by `seconds` (back when negative, as an NTP correction does), waking every sleeper whose
    /// wake time it passes.
    public func advance(_ seconds: TimeInterval) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.date.addTimeInterval(seconds)
            let now = state.date
            let woken = state.sleepers.filter { $0.value.wake <= now }
            for id in woken.keys { state.sleepers[id] = nil }
            return woken.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Waits (yielding, never sleeping) until at least `count` tasks sleep on the clock: the point where moving it
    /// wakes them.
    public func waitForSleepers(_ count: Int = 1) async {
        while sleepers < count { await Task.yield() }
    }

    /// Sleeps until the test moves the clock `duration` on; a cancelled task wakes at once with
    /// `CancellationError`.
    public func sleep(for duration: Duration) async throws {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    let wake = state.date.addingTimeInterval(seconds)
                    if wake <= state.date { return .success(()) }
                    state.sleepers[id] = Sleeper(wake: wake, continuation: continuation)
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
