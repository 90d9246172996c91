import CofferCore
import Foundation
import Synchronization

/// Deadlines for many requests on one clock: an action scheduled with ``schedule(after:_:)`` runs at its deadline
/// (within a tick of a quarter second) unless cancelled first. One ticking task runs while any is scheduled,
/// where a sleep per request would set a timer of the system's for each (a tenth of a delivery's overhead under
/// load).
public final class DeadlineTimer: Sendable {
    /// How late a deadline may be noticed.
    public static let tick = Duration.milliseconds(250)

    private struct State {
        var next: UInt64 = 0
        var scheduled: [UInt64: (deadline: Duration, action: @Sendable () -> Void)] = [:]
        var ticking = false
    }

    private let state = Mutex(State())
    private let clock: any TimerClock

    /// Creates a timer on `clock` (the system's unless a test gives its own); it ticks only while a deadline waits.
    public init(clock: any TimerClock = SystemTimerClock()) {
        self.clock = clock
    }

    /// Runs `action` once `delay` has passed on the timer's clock, unless ``cancel(_:)`` comes first.
    ///
    /// - Returns: The deadline's id, for ``cancel(_:)``.
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let deadline = clock.elapsed + delay
        let (id, start) = state.withLock { state -> (UInt64, Bool) in
            state.next &+= 1
            state.scheduled[state.next] = (deadline, action)
            defer { state.ticking = true }
            return (state.next, !state.ticking)
        }
        if start { Task { await self.run() } }
        return id
    }

    /// Cancels a deadline.
    ///
    /// - Returns: Whether it was still waiting (`false`: its action ran).
    public func cancel(_ id: UInt64) -> Bool {
        state.withLock { $0.scheduled.removeValue(forKey: id) != nil }
    }

    /// Runs the actions whose deadline passed, every tick, until none is scheduled.
    private func run() async {
        while true {
            try? await clock.sleep(for: Self.tick)
            let now = clock.elapsed
            let (due, stop) = state.withLock { state -> ([@Sendable () -> Void], Bool) in
                var due: [@Sendable () -> Void] = []
                for (id, entry) in state.scheduled where entry.deadline <= now {
                    due.append(entry.action)
                    state.scheduled[id] = nil
                }
                if state.scheduled.isEmpty { state.ticking = false }
                return (due, state.scheduled.isEmpty)
            }
            for action in due { action() }
            if stop { return }
        }
    }
}

extension DeadlineTimer {
    /// Runs `work`, answering `failure()` once `timeout` passes without its answer: the caller never waits past
    /// the deadline. The work is then cancelled and left to end on its own; what it commits after the deadline
    /// stays committed (every write is idempotent, so the caller's retry meets it as a duplicate). The caller's
    /// own cancellation answers `CancellationError` at once the same way.
    public func run<T: Sendable>(
        within timeout: Duration, orThrow failure: @escaping @Sendable () -> any Error,
        _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let answer = DeadlineAnswer<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard answer.start(continuation) else { return }
                let id = schedule(after: timeout) {
                    answer.finish(.failure(failure()))
                }
                let task = Task {
                    do {
                        answer.finish(.success(try await work()))
                    } catch {
                        answer.finish(.failure(error))
                    }
                    _ = self.cancel(id)
                }
                answer.adopt(task)
            }
        } onCancel: {
            answer.finish(.failure(CancellationError()))
        }
    }
}

/// The one answer of ``DeadlineTimer/run(within:orThrow:_:)``: whichever of the work, the deadline and the caller's
/// cancellation comes first resumes the caller; a deadline or a cancellation also cancels the work.
private final class DeadlineAnswer<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var work: Task<Void, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    /// Installs the caller's continuation; `false` (and the caller resumed with `CancellationError`) when the
    /// caller was cancelled before.
    @discardableResult
    func start(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let finished = state.withLock { state in
            if !state.finished { state.continuation = continuation }
            return state.finished
        }
        if finished { continuation.resume(throwing: CancellationError()) }
        return !finished
    }

    /// Keeps the work's task, cancelling it at once when the answer came first.
    func adopt(_ work: Task<Void, Never>) {
        let finished = state.withLock { state in
            state.work = work
            return state.finished
        }
        if finished { work.cancel() }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, work) = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?) in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            defer { state.continuation = nil }
            return (state.continuation, state.work)
        }
        guard let continuation else { return }
        continuation.resume(with: result)
        if case .failure = result { work?.cancel() }
    }
}
