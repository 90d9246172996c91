import Foundation
import Synchronization

/// The simulator's controllable clock: it starts at a given date and moves only when told to, so
/// renewals, grace periods and expiries happen when a test says so.
public final class SimulatorClock: Sendable {
    private let current: Mutex<Date>

    /// Creates a clock showing `start`.
    public init(start: Date) { current = Mutex(start) }

    /// The simulated time now.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock to `date`; it never goes back.
    func move(to date: Date) { current.withLock { $0 = max($0, date) } }
}
