import Foundation
import Synchronization

/// A clock a test moves by hand: what it injects as `now` reads the time the test set, so a test steps time instead
/// of sleeping and never depends on how fast this machine is.
public final class TestClock: Sendable {
    private let date: Mutex<Date>

    /// A clock at `start` (2026-01-01T00:00:00Z unless given).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        date = Mutex(start)
    }

    /// The time now, as the clock reads.
    public func now() -> Date { date.withLock { $0 } }

    /// Moves the clock by `seconds` (back when negative, as an NTP correction does).
    public func advance(_ seconds: TimeInterval) { date.withLock { $0.addTimeInterval(seconds) } }

    /// The clock as a closure, for what takes `now: @Sendable () -> Date`.
    public var reading: @Sendable () -> Date { { self.now() } }
}
