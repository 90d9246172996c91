import Foundation

/// Slows down password guessing: after too many failed sign-ins for one account or from one address within
/// a window, further attempts are refused until the window has passed. Kept in memory per server.
public actor LoginThrottle {
    /// Failures allowed per account within the window.
    public let perAccount: Int
    /// Failures allowed per address within the window.
    public let perAddress: Int
    /// The window.
    public let window: TimeInterval
    private var failures: [String: [Date]] = [:]

    /// A throttle allowing `perAccount` and `perAddress` failures per `window` seconds.
    public init(perAccount: Int = 5, perAddress: Int = 20, window: TimeInterval = 900) {
        self.perAccount = perAccount
        self.perAddress = perAddress
        self.window = window
    }

    /// Seconds to wait before trying again, or `nil` when an attempt is allowed now.
    public func wait(account: String, address: String, now: Date) -> TimeInterval? {
        prune(now: now)
        let keys = [("account:" + account.lowercased(), perAccount), ("address:" + address, perAddress)]
        var wait: TimeInterval?
        for (key, limit) in keys {
            guard let times = failures[key], times.count >= limit, let oldest = times.first else { continue }
            wait = max(wait ?? 0, oldest.addingTimeInterval(window).timeIntervalSince(now))
        }
        return wait
    }

    /// Records a failed attempt.
    public func fail(account: String, address: String, now: Date) {
        failures["account:" + account.lowercased(), default: []].append(now)
        failures["address:" + address, default: []].append(now)
    }

    /// Forgets an account's failures after it signs in.
    public func succeed(account: String) {
        failures["account:" + account.lowercased()] = nil
    }

    private func prune(now: Date) {
        let cutoff = now.addingTimeInterval(-window)
        failures = failures.compactMapValues { times in
            let kept = times.filter { $0 > cutoff }
            return kept.isEmpty ? nil : kept
        }
    }
}
