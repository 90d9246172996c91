import CofferCore
import CofferStore
import Foundation
import Synchronization
import Testing

@testable import CofferService

/// What an instance keeps in memory per customer or per address is bounded, however many there are (issue 38 §4).
@Suite("Bounds on what an instance remembers")
struct BoundsTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func user(_ number: Int) -> User {
        User(
            environment: .sandbox, supportId: SupportID(String(format: "_%012x", number))!,
            tokenHash: "hash-\(number)", createdAt: start)
    }

    @Test("the token cache holds at most its capacity, sweeps what expired first, and keeps half when all is fresh")
    func tokenCache() {
        let cache = TokenCache(capacity: 100, lifetime: 5)
        for number in 0..<100 { cache.remember(Self.user(number), tokenHash: "t\(number)", now: Self.start) }
        #expect(cache.count == 100)
        // Full of fresh entries: a new customer's token makes room by forgetting half, not all.
        cache.remember(Self.user(100), tokenHash: "t100", now: Self.start.addingTimeInterval(1))
        #expect(cache.count == 51)
        let kept = (0..<100).filter { cache.user(tokenHash: "t\($0)", now: Self.start.addingTimeInterval(1)) != nil }
        #expect(kept.count == 50)
        #expect(
            cache.user(tokenHash: "t100", now: Self.start.addingTimeInterval(1))?.supportId == Self.user(100).supportId)
        // Refill past capacity after the first ones expired: the sweep takes the expired, the fresh stay.
        for number in 101..<150 {
            cache.remember(Self.user(number), tokenHash: "t\(number)", now: Self.start.addingTimeInterval(6))
        }
        #expect(cache.count == 100)
        cache.remember(Self.user(150), tokenHash: "t150", now: Self.start.addingTimeInterval(6))
        #expect(cache.count == 50)
        for number in 101...150 {
            #expect(cache.user(tokenHash: "t\(number)", now: Self.start.addingTimeInterval(6)) != nil)
        }
        // A token already remembered is refreshed in place, never making room.
        cache.remember(Self.user(150), tokenHash: "t150", now: Self.start.addingTimeInterval(7))
        #expect(cache.count == 50)
        // Twenty thousand customers through a cache of 100: never more than 100.
        var most = 0
        for number in 0..<20_000 {
            cache.remember(Self.user(number), tokenHash: "u\(number)", now: Self.start.addingTimeInterval(8))
            most = max(most, cache.count)
        }
        #expect(most == 100)
    }

    @Test("a rate limiter tracks at most its capacity of addresses, dropping refilled buckets before a busy one")
    func rateLimiter() {
        let seconds = Mutex(0.0)
        let limiter = RateLimiter(limit: RateLimit(burst: 2, perSecond: 1), capacity: 1_000) {
            Self.start.addingTimeInterval(seconds.withLock { $0 })
        }
        func flood(_ range: Range<Int>) -> Int {
            var most = 0
            for number in range {
                _ = limiter.take("10.\(number / 65_536).\(number / 256 % 256).\(number % 256)")
                most = max(most, limiter.count)
            }
            return most
        }
        #expect(flood(0..<1_000) == 1_000)
        // Ten seconds on, every flooded bucket has refilled and means nothing; one address spends its burst.
        seconds.withLock { $0 = 10 }
        #expect(limiter.take("198.51.100.1") == nil)
        #expect(limiter.take("198.51.100.1") == nil)
        // The busy one's arrival found the tracker full of refilled buckets and dropped them, not it: new addresses
        // now fill it again beside the busy one, which is still limited.
        #expect(limiter.count == 1)
        #expect(flood(1_000..<1_999) == 1_000)
        #expect(limiter.take("198.51.100.1") != nil)
        // A flood of 20,000 addresses at once, every bucket spent: the oldest go, and the tracker never passes its
        // capacity.
        #expect(flood(2_000..<22_000) <= 1_000)
    }
}
