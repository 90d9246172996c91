import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// Support's grants: the checks every front end shares, the grant with its audit entry and its limit, and its
/// cancellation.
extension AdminService {
    /// Checks a grant before anything is read or written (the panel's confirmation page asks the same):
    /// credits in range and within `ceiling`, a reason.
    ///
    /// - Returns: The reason, trimmed.
    /// - Throws: ``AdminError/invalid(_:)``, or ``AdminError/forbidden(_:)`` over the limit.
    public static func checkGrant(credits: Int64, reason: String, ceiling: Int64?) throws(AdminError) -> String {
        _ = try rule { () throws(SupportRuleError) in try SupportRules.grantCredits(credits) }
        if !SupportRules.fitsGrantLimit(credits, used: 0, limit: ceiling), let ceiling {
            throw .forbidden(
                "\(PanelText.credits(credits)) credits is over your grant limit of \(PanelText.credits(ceiling)): "
                    + "ask an owner to grant it or to raise your limit")
        }
        return try Self.reason(reason)
    }

    /// The ledger's currency of credits support names by id (``LedgerRequest/currency``): `nil` for none or the
    /// default's id, the currency for another the catalog lists.
    ///
    /// - Throws: ``AdminError/invalid(_:)`` for a currency the catalog does not list.
    public func ledgerCurrency(_ id: String?) throws(AdminError) -> Currency? {
        guard let id, id != catalog.defaultCurrency.rawValue else { return nil }
        guard let listed = catalog.currencies.first(where: { $0.id.rawValue == id })?.id else {
            let named = Currency(rawValue: id).map { "\"\($0)\"" } ?? "(not a currency id)"
            throw .invalid(
                "unknown currency \(named): the catalog lists "
                    + catalog.currencies.map(\.id.rawValue).joined(separator: ", "))
        }
        return listed
    }

    /// The longest life of credits that expire, in days.
    public static let maximumExpiryDays = 3_650

    /// Checks the life of credits that expire: 1 to ``maximumExpiryDays`` days after the app claims them, in the
    /// server wallet (the device wallet's ledger keeps no end for credits).
    ///
    /// - Throws: ``AdminError/invalid(_:)`` saying what is wrong.
    public func checkExpiry(_ days: Int?) throws(AdminError) {
        guard let days else { return }
        guard (1...Self.maximumExpiryDays).contains(days) else {
            throw .invalid("expires in days must be 1 to \(Self.maximumExpiryDays) (got \(days))")
        }
        guard walletMode == .server else {
            throw .invalid("credits that expire need the server wallet: the device wallet's credits never end")
        }
    }

    /// How long a support admin's grant limit counts their grants: a total over a rolling day.
    public static let grantLimitWindow: TimeInterval = 86_400

    /// Grants credits to a user; the app picks them up on its next refresh. `ceiling` is the acting admin's
    /// grant limit (a support admin's or a support key's; `nil` for an owner, an owner key or the CLI): the most
    /// credits their grants may carry in all over a rolling 24 hours, counted in the store (so every instance
    /// counts the same) by `holder` (who made them: the admin's name, or the key's name and id).
    ///
    /// With an `id`, asking again is safe: after an answer that was lost (a 503 from a database that went away
    /// after the grant was written), the same request answers the grant made the first time, never a second
    /// one. Its audit entry carries the grant's id, written once.
    ///
    /// - Throws: ``AdminError/forbidden(_:)`` over the limit, ``AdminError/invalid(_:)`` for an `id` that
    ///   names another grant.
    public func createGrant(
        environment: AppStoreEnvironment, supportId: String, credits: Int64, reason: String, actor: String,
        ceiling: Int64? = nil, holder: String? = nil, id: UUID? = nil, currency: String? = nil,
        expiresInDays: Int? = nil
    ) async throws -> GrantView {
        let reason = try Self.checkGrant(credits: credits, reason: reason, ceiling: ceiling)
        let currency = try ledgerCurrency(currency)
        try checkExpiry(expiresInDays)
        // A grant limit counts the default currency's credits: another currency's worth is not comparable.
        if ceiling != nil, let currency {
            throw AdminError.forbidden(
                "your grant limit counts \(catalog.defaultCurrency) credits: grants of \(currency) need an owner")
        }
        let user = try await findChangeable(supportId, environment: environment)
        if let ceiling, let holder {
            // A grant asked again with its id is found below, not counted twice.
            var known = false
            if let id { known = try await store.grant(id: id, environment: environment) != nil }
            if !known {
                let granted = try await store.grantedCredits(
                    environment: environment, holder: holder, since: now().addingTimeInterval(-Self.grantLimitWindow))
                if !SupportRules.fitsGrantLimit(credits, used: granted, limit: ceiling) {
                    let (total, overflow) = granted.addingReportingOverflow(credits)
                    throw AdminError.forbidden(
                        "\(PanelText.credits(credits)) more credits would bring your grants of the last 24 hours to "
                            + "\(PanelText.credits(overflow ? .max : total)), over your limit of "
                            + "\(PanelText.credits(ceiling)): ask an owner to grant it or to raise your limit")
                }
            }
        }
        let grant = Grant(
            id: id ?? UUID(), environment: environment, recipient: user.id, credits: credits, reason: reason,
            createdBy: actor, createdAt: now(), currency: currency, expiresInDays: expiresInDays)
        let view = GrantView(grant, supportId: user.supportId.rawValue)
        do {
            // Audited in the grant's own transaction, under the grant's id (a request asked again finds it).
            try await store.createGrant(
                grant,
                audit: [
                    AuditEvent(
                        id: grant.id, environment: environment, actor: actor, action: "grant.create",
                        subject: view.supportId, after: try Self.json(view), at: view.createdAt)
                ])
        } catch StoreError.alreadyExists where id != nil {
            guard let made = try await store.grant(id: grant.id, environment: environment),
                made.recipient == grant.recipient, made.credits == grant.credits, made.reason == grant.reason,
                made.currency == grant.currency, made.expiresInDays == grant.expiresInDays
            else { throw AdminError.invalid("grant id \(grant.id) names another grant") }
            let view = GrantView(made, supportId: user.supportId.rawValue)
            // The first answer may have been lost before its audit entry was written; written now if so.
            try await auditGrant(view, environment: environment, actor: made.createdBy)
            return view
        }
        if let ceiling, let holder {
            // Counted again after the write: requests racing past the check above all see the total, and each
            // takes its own grant back, so the day's grants never pass the limit.
            let granted = try await store.grantedCredits(
                environment: environment, holder: holder, since: now().addingTimeInterval(-Self.grantLimitWindow))
            if !SupportRules.fitsGrantLimit(0, used: granted, limit: ceiling) {
                let at = now()
                _ = try await store.cancelGrant(id: grant.id, environment: environment, by: actor, at: at) {
                    cancelled in
                    [
                        AuditEvent(
                            environment: environment, actor: actor, action: "grant.cancel", subject: view.supportId,
                            after: try? Self.json(GrantView(cancelled, supportId: view.supportId)), at: at)
                    ]
                }
                throw AdminError.forbidden(
                    "other grants were made at the same moment and together pass your limit of "
                        + "\(PanelText.credits(ceiling)) over 24 hours: nothing was granted; try again")
            }
        }
        await onChange?(user.id, .grant(id: grant.id))
        return view
    }

    /// The audit entry of a grant, written once: keyed by the grant's id, so a request asked again finds it
    /// written. When another entry holds that id (a caller chose a grant id equal to an audit entry's), this
    /// grant's entry is written under an id of its own: no grant goes unaudited.
    private func auditGrant(_ view: GrantView, environment: AppStoreEnvironment, actor: String) async throws {
        let after = try Self.json(view)
        func entry(_ id: UUID) -> AuditEvent {
            AuditEvent(
                id: id, environment: environment, actor: actor, action: "grant.create", subject: view.supportId,
                after: after, at: view.createdAt)
        }
        do {
            try await store.recordAudit(entry(view.id))
        } catch StoreError.alreadyExists {
            let written = try await store.auditEvents(
                environment: environment, query: AuditQuery(subject: view.supportId, action: "grant.create"),
                limit: 1_000)
            let grantId = view.id.uuidString.lowercased()
            guard
                !written.contains(where: {
                    $0.action == "grant.create" && $0.after?.lowercased().contains(grantId) == true
                })
            else { return }
            try await store.recordAudit(entry(UUID()))
        }
    }

    /// One grant, with its recipient's Support ID.
    public func grant(environment: AppStoreEnvironment, id: String) async throws -> GrantView {
        guard let uuid = UUID(uuidString: id), let grant = try await store.grant(id: uuid, environment: environment)
        else { throw AdminError.notFound("grant \(id) in \(environment.rawValue)") }
        let supportId = try await store.user(id: grant.recipient)?.supportId.rawValue ?? "?"
        return GrantView(grant, supportId: supportId)
    }

    /// Cancels a grant the app has not claimed (in Production too), audited. A grant the app claimed already
    /// is the customer's: it cannot be cancelled, only answered by a new adjustment (setting the balance).
    ///
    /// - Throws: ``AdminError/notFound(_:)`` for an unknown grant, ``AdminError/invalid(_:)`` for a claimed one.
    public func cancelGrant(environment: AppStoreEnvironment, id: String, actor: String) async throws -> GrantView {
        guard let uuid = UUID(uuidString: id) else {
            throw AdminError.notFound("grant \(id) in \(environment.rawValue)")
        }
        let before = try await grant(environment: environment, id: id)
        let after: Grant
        let at = now()
        let beforeJSON = try Self.json(before)
        do {
            // Audited in the cancellation's own transaction: its webhook event (grant.cancelled) is never lost.
            after = try await store.cancelGrant(id: uuid, environment: environment, by: actor, at: at) { cancelled in
                [
                    AuditEvent(
                        environment: environment, actor: actor, action: "grant.cancel", subject: before.supportId,
                        before: beforeJSON, after: try? Self.json(GrantView(cancelled, supportId: before.supportId)),
                        at: at)
                ]
            }
        } catch StoreError.notFound {
            throw AdminError.notFound("grant \(id) in \(environment.rawValue)")
        }
        let view = GrantView(after, supportId: before.supportId)
        switch after.status {
        case .claimed:
            throw AdminError.invalid(
                "the app claimed this grant already: the credits are the customer's; answer it with a new "
                    + "adjustment (set the balance) instead")
        case .cancelled:
            // Audited by the store in the cancellation's transaction; one cancelled before is not audited again.
            return view
        case .pending:
            throw AdminError.invalid("the grant could not be cancelled")
        }
    }
}
