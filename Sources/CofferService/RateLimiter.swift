import Foundation
import Synchronization

/// A token-bucket rate: a burst, then a steady refill.
public struct RateLimit: Sendable, Hashable {
    /// Requests allowed at once.
    public var burst: Int
    /// Requests added back per second.
    public var perSecond: Double

    /// A limit of `burst` at once, then `perSecond`.
    public init(burst: Int, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }
}

/// Token buckets per client address, in memory. IPv6 clients are counted by their /64 (what one customer's
/// router hands out), so one attacker cannot take a fresh bucket per address. The table is bounded: when it
/// is full, buckets that have refilled (and so mean nothing) are dropped, and if none has, the oldest goes.
public final class RateLimiter: Sendable {
    /// The limit each address gets.
    public let limit: RateLimit
    /// The most addresses tracked at once.
    public let capacity: Int
    private let now: @Sendable () -> Date
    private let buckets = Mutex<[String: Bucket]>([:])

    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    /// Creates a limiter.
    public init(limit: RateLimit, capacity: Int = 100_000, now: @escaping @Sendable () -> Date = Date.init) {
        self.limit = limit
        self.capacity = capacity
        self.now = now
    }

    /// Takes one token for `address`: `nil` when the request may go ahead, otherwise the seconds to wait.
    /// A request with no address at all (only in-process tests have none) is not limited.
    public func take(_ address: String?) -> Int? {
        guard let address else { return nil }
        let key = Self.key(address)
        let current = now()
        let limit = limit
        let capacity = capacity
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: Double(limit.burst), updated: current)
            let elapsed = max(0, current.timeIntervalSince(bucket.updated))
            bucket.tokens = min(Double(limit.burst), bucket.tokens + elapsed * limit.perSecond)
            bucket.updated = current
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                let missing = 1 - bucket.tokens
                guard limit.perSecond > 0 else { return 3_600 }
                return max(1, Int((missing / limit.perSecond).rounded(.up).clamped(to: 1...86_400)))
            }
            bucket.tokens -= 1
            if buckets[key] == nil, buckets.count >= capacity {
                Self.prune(&buckets, at: current, limit: limit, capacity: capacity)
            }
            buckets[key] = bucket
            return nil
        }
    }

    /// Gives back a token taken for `address` (the request turned out not to count).
    public func giveBack(_ address: String?) {
        guard let address else { return }
        let key = Self.key(address)
        let burst = Double(limit.burst)
        buckets.withLock { buckets in
            if var bucket = buckets[key] {
                bucket.tokens = min(burst, bucket.tokens + 1)
                buckets[key] = bucket
            }
        }
    }

    /// How many addresses are tracked.
    public var count: Int { buckets.withLock { $0.count } }

    private static func prune(_ buckets: inout [String: Bucket], at current: Date, limit: RateLimit, capacity: Int) {
        buckets = buckets.filter { _, bucket in
            bucket.tokens + current.timeIntervalSince(bucket.updated) * limit.perSecond < Double(limit.burst)
        }
        guard buckets.count >= capacity else { return }
        let excess = buckets.count - capacity * 9 / 10
        for key in buckets.sorted(by: { $0.value.updated < $1.value.updated }).prefix(excess).map(\.key) {
            buckets[key] = nil
        }
    }

    /// The bucket an address counts against: IPv4 as is, IPv6 by its /64.
    public static func key(_ address: String?) -> String {
        guard let address, let bytes = AddressRange.parse(address) else { return address ?? "unknown" }
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return bytes.prefix(8).map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

}

extension Comparable {
    fileprivate func clamped(to range: ClosedRange<Self>) -> Self { min(max(self, range.lowerBound), range.upperBound) }
}
