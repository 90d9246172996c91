// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// The in-memory store's tokens, merge codes, shared failure counts and grant totals.
extension InMemoryStore {

    public func recordFailure(_ key: String, at date: Date, since: Date) -> Int {
        let day = date.addingTimeInterval(-86_400)
        failureLog = failureLog.compactMapValues { times in
            let kept = times.filter { $0 >= day }
            return kept.isEmpty ? nil : kept
        }
        failureLog[key, default: []].append(date)
        return failures(key, since: since)
    }

    public func failures(_ key: String, since: Date) -> Int { failureLog[key]?.count { $0 >= since } ?? 0 }

    public func clearFailures(_ key: String) { failureLog[key] = nil }

    public func ping() {}

    public func createUser(_ user: User) throws {
        for other in state.users.values {
            if other.id == user.id { throw StoreError.alreadyExists("user \(user.id)") }
            if other.tokenHash == user.tokenHash { throw StoreError.alreadyExists("token") }
            if other.environment == user.environment {
                if other.supportId == user.supportId { throw StoreError.alreadyExists("support id \(user.supportId)") }
                if other.appAccountToken == user.appAccountToken {
                    throw StoreError.alreadyExists("appAccountToken \(user.appAccountToken)")
                }
                if let account = user.appleAccount, other.appleAccount == account {
                    throw StoreError.alreadyExists("Apple account \(account.appTransactionId)")
                }
            }
        }
        state.users[user.id] = user
    }

    public func revokeOldTokens(owner: UUID, keeping: Int, at date: Date) -> Int {
        guard let user = state.users[owner] else { return 0 }
        if deviceTokens[user.tokenHash] == nil, !imports.values.contains(where: { $0.user == owner }) {
            deviceTokens[user.tokenHash] = (owner, nil, .device)
            tokenCreated[user.tokenHash] = user.createdAt
        }
        let live = deviceTokens.filter {
            $0.value.owner == owner && $0.value.revokedAt == nil && $0.value.origin == .device
        }
        .map(\.key).sorted { (tokenCreated[$0] ?? .distantPast, $0) > (tokenCreated[$1] ?? .distantPast, $1) }
        let old = live.dropFirst(max(0, keeping))
        for hash in old { deviceTokens[hash]?.revokedAt = date }
        return old.count
    }

    public func tokenCounts(owner: UUID) -> TokenCounts {
        guard let user = state.users[owner] else { return TokenCounts(devices: 0, claims: 0) }
        let live = deviceTokens.values.filter { $0.owner == owner && $0.revokedAt == nil }
        let imported = imports.values.contains { $0.user == owner }
        let first = deviceTokens[user.tokenHash] == nil && !imported && user.isLive ? 1 : 0
        return TokenCounts(
            devices: live.count { $0.origin == .device } + first, claims: live.count { $0.origin == .claim })
    }

    public func saveMergeCode(_ code: MergeCode) throws {
        guard isOwnCustomer(code.owner) else {
            throw StoreError.notFound("user \(code.owner)")
        }
        mergeCodes[code.owner] = code
    }

    public func useMergeCode(owner: UUID, codeHash: String, at date: Date) -> Bool {
        guard let code = mergeCodes[owner], code.codeHash == codeHash, code.expiresAt > date else { return false }
        mergeCodes[owner] = nil
        return true
    }

    public func grantedCredits(environment: AppStoreEnvironment, holder: String, since: Date) -> Int64 {
        grantList.filter { grant in
            grant.environment == environment && grant.createdAt >= since && grant.status != .cancelled
                && (grant.createdBy == holder || grant.createdBy.hasPrefix(holder + " from "))
        }.reduce(Int64(0)) { sum, grant in
            let (total, overflow) = sum.addingReportingOverflow(grant.credits)
            return overflow ? .max : total
        }
    }
}
