import CofferAPI
import CofferAppStore
import CofferCore
import CofferStore
import Foundation

extension ClientService {
    /// Registers this device's APNs token for the user (`PUT /v1/me/push-token`): registering again refreshes
    /// it; a token another user registered before moves to this one (the device now runs this install).
    ///
    /// - Throws: ``ServiceError/badRequest(_:)`` for a token that is not hex of 16 to 100 bytes, or an
    ///   environment other than `sandbox` or `production`.
    public func registerPushToken(_ request: PushTokenRequest, user: User) async throws {
        let (token, gateway) = try Self.pushToken(request)
        try await store.savePushToken(
            PushToken(
                token: token, owner: user.id, environment: user.environment, gateway: gateway,
                updatedAt: dependencies.now()))
        // A customer has a few devices: past the limit, the tokens registered longest ago go (a device not
        // heard from since is likely gone), so no one user makes every grant cost hundreds of pushes.
        let tokens = try await store.pushTokens(owner: user.id, environment: user.environment)
        for stale in tokens.dropFirst(Self.pushTokensPerUser) {
            try await store.deletePushToken(stale.token, owner: user.id)
        }
    }

    /// The most push tokens one user keeps.
    public static let pushTokensPerUser = 10

    /// Forgets this device's APNs token (`DELETE /v1/me/push-token`), when the user holds it.
    ///
    /// - Throws: ``ServiceError/notFound(_:)`` when the user has no such token.
    public func unregisterPushToken(_ request: PushTokenRequest, user: User) async throws {
        let (token, _) = try Self.pushToken(request)
        guard try await store.deletePushToken(token, owner: user.id) else {
            throw ServiceError.notFound("this user has no such push token")
        }
    }

    /// Records a milestone the app reached for the customer (`POST /v1/me/milestones`), once per customer: the
    /// answer says whether this asker is the first, so the celebration shows once across the customer's devices.
    ///
    /// - Throws: ``ServiceError/badRequest(_:)`` for a name that is not 1 to 64 of `a-z0-9._-:`.
    public func recordMilestone(_ request: MilestoneRequest, user: User) async throws -> MilestoneResponse {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789._-:")
        guard (1...64).contains(request.name.count), request.name.allSatisfy(allowed.contains) else {
            throw ServiceError.badRequest("name must be 1 to 64 of a-z, 0-9, '.', '_', '-' and ':'")
        }
        // Only what the server's own rules say was earned: a loyalty lifetime of the catalog, its periods paid.
        let now = dependencies.now()
        guard
            let rule = dependencies.catalog.loyalty.first(where: { LoyaltyRule.milestoneName($0.group) == request.name }
            ),
            (try await store.entitlementState(of: user, catalog: dependencies.catalog, at: now).paidPeriods[rule.group]
                ?? 0) >= rule.periods
        else {
            throw ServiceError.verification(
                code: "milestone-not-earned",
                message: "\(request.name) is not a loyalty lifetime this customer has earned by the server's records")
        }
        let first = try await store.recordMilestone(owner: user.id, name: request.name, at: now)
        return MilestoneResponse(name: request.name, first: first)
    }

    /// The most items a Verify Purchases report keeps.
    public static let verifyReportItems = 500

    /// Keeps the install's Verify Purchases report for support, replacing the one before.
    ///
    /// - Throws: ``ServiceError/badRequest(_:)`` for more than ``verifyReportItems`` items, an id or product
    ///   that is not printable ASCII of its length, or an unknown verdict.
    public func saveVerifyReport(_ request: VerifyReportRequest, user: User) async throws -> VerifyReportResponse {
        guard request.items.count <= Self.verifyReportItems else {
            throw ServiceError.badRequest("a report has at most \(Self.verifyReportItems) items")
        }
        func printable(_ text: String, upTo limit: Int) -> Bool {
            (1...limit).contains(text.utf8.count) && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        }
        let items = try request.items.map { item throws(ServiceError) -> ReconciliationItem in
            guard printable(item.transactionId, upTo: 64), printable(item.productId, upTo: 200) else {
                throw ServiceError.badRequest(
                    "transactionId is 1 to 64 and productId 1 to 200 printable ASCII characters")
            }
            guard let verdict = ReconciliationVerdict(rawValue: item.verdict) else {
                throw ServiceError.badRequest(
                    "verdict must be deliverNow, alreadyRecorded, finishOnly or couldNotBeVerified")
            }
            return ReconciliationItem(
                transaction: DeviceTransaction(
                    transactionId: item.transactionId, productId: item.productId, isFinished: item.finished,
                    isVerified: item.verified),
                verdict: verdict)
        }
        try await store.saveVerifyReport(
            VerifyReport(owner: user.id, environment: user.environment, reportedAt: dependencies.now(), items: items))
        return VerifyReportResponse(items: items.count)
    }

    static func pushToken(_ request: PushTokenRequest) throws -> (String, PushToken.Gateway) {
        guard APNsClient.isDeviceToken(request.token) else {
            throw ServiceError.badRequest("token must be the device token in hex (16 to 100 bytes)")
        }
        guard let gateway = PushToken.Gateway(rawValue: request.environment ?? "production") else {
            throw ServiceError.badRequest("environment must be sandbox or production")
        }
        return (request.token.lowercased(), gateway)
    }
}
