import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// Support granting an entitlement for a time: it unlocks for the customer until it ends (in `GET /v1/me` and the
/// SDK), is audited and cancellable, shows on the customer page, and never counts toward loyalty.
extension AdminService {
    /// The most days a support admin or key grants an entitlement for; owners, up to ten years.
    public static let supportEntitlementDays = 90

    /// Grants `entitlement` to the customer for `days` from now, audited (`entitlement.grant`); the app is told at
    /// once.
    ///
    /// - Parameter support: Whether a support admin or key asks (at most ``supportEntitlementDays``), not an owner.
    /// - Throws: ``AdminError/invalid(_:)`` for an entitlement the catalog does not know, days out of 1 to 3,650, no
    ///   reason, or a customer who cannot be changed (deleted, merged); ``AdminError/forbidden(_:)`` past support's
    ///   days.
    public func grantEntitlement(
        environment: AppStoreEnvironment, support: Bool = false, request: EntitlementGrantRequest, actor: String
    ) async throws -> EntitlementGrantView {
        let entitlement = try Self.rule { () throws(SupportRuleError) in
            try SupportRules.entitlement(request.entitlement, in: catalog)
        }
        let days = try Self.rule { () throws(SupportRuleError) in try SupportRules.entitlementDays(request.days) }
        guard !support || days <= Self.supportEntitlementDays else {
            throw AdminError.forbidden(
                "support grants an entitlement for at most \(Self.supportEntitlementDays) days; an owner may grant longer"
            )
        }
        let reason = try Self.reason(request.reason)
        let user = try await findChangeable(request.supportId, environment: environment)
        let at = now()
        let grant = EntitlementGrant(
            environment: environment, recipient: user.id, entitlement: entitlement, startsAt: at,
            endsAt: at.addingTimeInterval(Double(days) * 86_400), reason: reason, createdBy: actor)
        let view = Self.view(grant, supportId: user.supportId.rawValue, at: at)
        try await store.createEntitlementGrant(
            grant,
            audit: [
                AuditEvent(
                    id: grant.id, environment: environment, actor: actor, action: "entitlement.grant",
                    subject: user.supportId.rawValue, after: try Self.json(view), at: at)
            ])
        await onChange?(user.id, .entitlements(grant: grant.id))
        return view
    }

    /// Cancels an entitlement grant: it stops unlocking now; audited (`entitlement.cancel`). One cancelled before
    /// comes back as it is.
    ///
    /// - Throws: ``AdminError/notFound(_:)`` for no such grant in `environment`.
    ///
    /// - Parameter supportId: When given, the grant must be this customer's (the panel's page it was cancelled from).
    public func cancelEntitlementGrant(
        environment: AppStoreEnvironment, id: String, actor: String, supportId: String? = nil
    ) async throws -> EntitlementGrantView {
        guard let uuid = UUID(uuidString: id) else { throw AdminError.invalid("\(id) is not a grant id (a UUID)") }
        if let supportId {
            let user = try await find(supportId, environment: environment)
            guard
                try await store.entitlementGrants(environment: environment, recipient: user.id).contains(where: {
                    $0.id == uuid
                })
            else { throw AdminError.notFound("entitlement grant \(id) of \(supportId)") }
        }
        let at = now()
        let cancelled: EntitlementGrant
        do {
            cancelled = try await store.cancelEntitlementGrant(id: uuid, environment: environment, by: actor, at: at) {
                _ in []
            }
        } catch StoreError.notFound {
            throw AdminError.notFound("entitlement grant \(id)")
        }
        let supportId = try await store.user(id: cancelled.recipient)?.supportId.rawValue ?? ""
        let view = Self.view(cancelled, supportId: supportId, at: at)
        // Audited once, under the grant's own id: a cancellation whose audit write failed is audited when asked again.
        do {
            try await store.recordAudit(
                AuditEvent(
                    id: Self.stableId("entitlement-cancel:\(cancelled.id.uuidString)"), environment: environment,
                    actor: cancelled.cancelledBy ?? actor, action: "entitlement.cancel", subject: supportId,
                    after: try Self.json(view), at: cancelled.cancelledAt ?? at))
        } catch StoreError.alreadyExists {}
        await onChange?(cancelled.recipient, .entitlements(grant: cancelled.id))
        return view
    }

    /// A customer's entitlement grants, newest first.
    func entitlementGrantViews(of user: User, environment: AppStoreEnvironment) async throws -> [EntitlementGrantView] {
        let at = now()
        return try await store.entitlementGrants(environment: environment, recipient: user.id).map {
            Self.view($0, supportId: user.supportId.rawValue, at: at)
        }
    }

    static func view(_ grant: EntitlementGrant, supportId: String, at now: Date) -> EntitlementGrantView {
        EntitlementGrantView(
            id: grant.id, supportId: supportId, entitlement: grant.entitlement, startsAt: grant.startsAt,
            endsAt: grant.endsAt, reason: grant.reason, createdBy: grant.createdBy, cancelledAt: grant.cancelledAt,
            cancelledBy: grant.cancelledBy, active: grant.isActive(at: now))
    }

    /// An entitlement grant's audit entry in words, for the customer's timeline; `nil` for any other event.
    static func entitlementSummary(_ event: AuditEvent) -> String? {
        guard event.action == "entitlement.grant" || event.action == "entitlement.cancel", let after = event.after
        else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let view = try? decoder.decode(EntitlementGrantView.self, from: Data(after.utf8)) else { return nil }
        if event.action == "entitlement.cancel" {
            return
                "\(event.actor) cancelled the grant of \(view.entitlement) (until \(view.endsAt.formatted(.iso8601)))"
        }
        let days = Int((view.endsAt.timeIntervalSince(view.startsAt) / 86_400).rounded())
        return "\(event.actor) granted \(view.entitlement) for \(days) days, until "
            + "\(view.endsAt.formatted(.iso8601)): \(view.reason)"
    }

    /// An audit entry in words for the customer's timeline, where one is kept (extensions, entitlement grants).
    static func timelineSummary(_ event: AuditEvent) -> String? {
        extensionSummary(event) ?? entitlementSummary(event)
    }
}
