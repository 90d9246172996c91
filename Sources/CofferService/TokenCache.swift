import CofferStore
import Foundation
import Synchronization

/// Remembers which user a token hash belongs to for a short while, so a busy app's requests do not each
/// read the users table. Bounded in size (`capacity` entries, 50,000 by default); an entry lives `lifetime`
/// seconds (5 by default), which bounds how long another instance honours a token that was revoked, merged away or
/// deleted (this instance forgets it at once): every instance reads the store again within that bound, whatever
/// message might be lost.
final class TokenCache: Sendable {
    private struct Entry {
        var user: User
        var expires: Date
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let capacity: Int
    private let lifetime: TimeInterval

    init(capacity: Int = 50_000, lifetime: TimeInterval = ClientService.tokenCacheLifetime) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// How many tokens are remembered now (expired ones included until they are read or swept).
    var count: Int { entries.withLock { $0.count } }

    /// The user for a token hash, when remembered and fresh.
    func user(tokenHash: String, now: Date) -> User? {
        entries.withLock { entries in
            guard let entry = entries[tokenHash] else { return nil }
            guard entry.expires > now else {
                entries[tokenHash] = nil
                return nil
            }
            return entry.user
        }
    }

    /// Forgets a token (revoked here; other instances forget it within `lifetime`).
    func forget(tokenHash: String) {
        _ = entries.withLock { $0.removeValue(forKey: tokenHash) }
    }

    /// Forgets every token remembered for a user.
    func forget(user: UUID) {
        entries.withLock { entries in entries = entries.filter { $0.value.user.id != user } }
    }

    /// Remembers a user found by its token hash.
    func remember(_ user: User, tokenHash: String, now: Date) {
        entries.withLock { entries in
            if entries[tokenHash] == nil, entries.count >= capacity {
                // Full: first forget what has expired. If more than three quarters are still fresh (about as many
                // customers in a lifetime as the cache holds), keep half, in the dictionary's arbitrary order,
                // rather than track recency: a sweep that freed little would run again at the next few tokens. The
                // store answers the misses; the half kept keeps its hits.
                entries = entries.filter { $0.value.expires > now }
                if entries.count > capacity * 3 / 4 {
                    var kept = 0
                    entries = entries.filter { _ in
                        kept += 1
                        return kept <= capacity / 2
                    }
                }
            }
            entries[tokenHash] = Entry(user: user, expires: now.addingTimeInterval(lifetime))
        }
    }
}
