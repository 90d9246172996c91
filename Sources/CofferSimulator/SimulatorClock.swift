import Foundation
import Synchronization

/// The simulator's controllable clock: it starts at a given date and moves only when told to, so
/// renewals, grace periods and expiries happen when a test says so.
public final class SimulatorClock: Sendable {
    private let current: Mutex<Date>

    /// Creates a clock showing `start`, to the whole millisecond (Apple's dates have no finer grain).
    public init(start: Date) {
        current = Mutex(Date(timeIntervalSince1970: (start.timeIntervalSince1970 * 1_000).rounded(.down) / 1_000))
    }

    /// The simulated time now.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock to `date`; it never goes back.
    func move(to date: Date) { current.withLock { $0 = max($0, date) } }
}
