import Foundation

/// The clock every timed wait is kept on (deadlines, retry backoffs, intervals): how long since it started, and a
/// sleep on it. The system's monotonic clock
/// (``SystemTimerClock``) in the server; a clock the test moves by hand in tests, so they step time instead of
/// waiting for it.
public protocol TimerClock: Sendable {
    /// The time elapsed since the clock started.
    var elapsed: Duration { get }
    /// Suspends for `duration` on this clock.
    func sleep(for duration: Duration) async throws
}

/// The system's monotonic clock (`ContinuousClock`), counted from when it was made.
public struct SystemTimerClock: TimerClock {
    private let start = ContinuousClock.now

    /// A clock starting now.
    public init() {}

    /// The time elapsed since the clock was made.
    public var elapsed: Duration { ContinuousClock.now - start }

    /// Sleeps on the system's clock.
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
