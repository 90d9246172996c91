import Foundation

/// Slows down password guessing without letting anyone lock support out.
///
/// Failures are counted per account *and address*: after ``freeFailures`` wrong passwords for an account from
/// one address, that address waits 1 s before its next try for it, then 2 s, 4 s, ... up to ``maximumWait``.
/// Failures from one address across all accounts are limited the same way after ``freeAddressFailures``. An
/// attacker elsewhere only slows themselves down: the admin's own address still signs in.
///
/// Every attempt is reserved before its password is checked (so parallel guesses cannot all pass the check
/// before the first failure is recorded); one address checks one password at a time, and at most
/// ``concurrentChecks`` password checks (bcrypt, a quarter of a second each) run at once. Beyond that the
/// answer is "busy" (the panel waits a moment for a slot before saying so). Kept in memory per server.
public actor LoginThrottle {
    /// Wrong passwords per account and address before waits start.
    public let freeFailures: Int
    /// Wrong passwords per address, over all accounts, before waits start.
    public let freeAddressFailures: Int
    /// How long a failure is remembered.
    public let window: TimeInterval
    /// The longest wait.
    public let maximumWait: TimeInterval
    /// Password checks allowed at once on this server.
    public let concurrentChecks: Int
    private var failures: [String: [Date]] = [:]
    private var checking = 0
    private var checkingFrom: Set<String> = []

    /// What to do with a sign-in attempt.
    public enum Decision: Sendable, Equatable {
        /// Check the password, then call ``LoginThrottle/finish(_:succeeded:)``.
        case proceed(Attempt)
        /// Refuse: try again after this many seconds.
        case wait(TimeInterval)
        /// Refuse: as many password checks as allowed are running; try again in a moment.
        case busy
    }

    /// A reserved attempt.
    public struct Attempt: Sendable, Equatable {
        let pair: String
        let address: String
        let at: Date
    }

    /// A throttle.
    ///
    /// - Parameters:
    ///   - freeFailures: Wrong passwords per account and address before waits start.
    ///   - freeAddressFailures: Wrong passwords per address, over all accounts, before waits start.
    ///   - window: Seconds a failure is remembered.
    ///   - maximumWait: The longest wait, in seconds.
    ///   - concurrentChecks: Password checks allowed at once.
    public init(
        freeFailures: Int = 5, freeAddressFailures: Int = 20, window: TimeInterval = 3_600,
        maximumWait: TimeInterval = 900, concurrentChecks: Int = 2
    ) {
        self.freeFailures = freeFailures
        self.freeAddressFailures = freeAddressFailures
        self.window = window
        self.maximumWait = maximumWait
        self.concurrentChecks = concurrentChecks
    }

    /// Decides whether an attempt may check its password now, and if so reserves it (counted as a failure
    /// until ``finish(_:succeeded:)`` says otherwise).
    public func begin(account: String, address: String, now: Date) -> Decision {
        prune(now: now)
        let pair = "pair:" + account.lowercased() + "\u{0}" + address
        let byAddress = "address:" + address
        let wait = max(
            wait(failures[pair], free: freeFailures, now: now),
            wait(failures[byAddress], free: freeAddressFailures, now: now))
        if wait > 0 { return .wait(wait) }
        guard checking < concurrentChecks, !checkingFrom.contains(byAddress) else { return .busy }
        checking += 1
        checkingFrom.insert(byAddress)
        failures[pair, default: []].append(now)
        failures[byAddress, default: []].append(now)
        return .proceed(Attempt(pair: pair, address: byAddress, at: now))
    }

    /// Ends a reserved attempt: a right password forgets the account's failures from that address.
    public func finish(_ attempt: Attempt, succeeded: Bool) {
        checking = max(0, checking - 1)
        checkingFrom.remove(attempt.address)
        guard succeeded else { return }
        failures[attempt.pair] = nil
        if let index = failures[attempt.address]?.lastIndex(of: attempt.at) {
            failures[attempt.address]?.remove(at: index)
        }
    }

    private func wait(_ times: [Date]?, free: Int, now: Date) -> TimeInterval {
        guard let times, times.count >= free, let last = times.last else { return 0 }
        let doublings = min(times.count - free, 20)
        let delay = min(maximumWait, Double(1 << doublings))
        return max(0, last.addingTimeInterval(delay).timeIntervalSince(now))
    }

    private func prune(now: Date) {
        let cutoff = now.addingTimeInterval(-window)
        failures = failures.compactMapValues { times in
            let kept = times.filter { $0 > cutoff }
            return kept.isEmpty ? nil : kept
        }
    }
}
