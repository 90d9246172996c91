import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// Apple's renewal extensions as the server reaches them, with its App Store Server API key: Extend a Subscription
/// Renewal Date, Extend Renewal Dates for All Active Subscribers and the latter's status.
public struct RenewalExtensions: Sendable {
    /// Where a mass extension stands, as Apple answers it.
    public struct Status: Sendable, Equatable {
        /// Whether Apple finished.
        public var complete: Bool?
        /// When.
        public var completeDate: Date?
        /// Subscriptions extended.
        public var succeededCount: Int64?
        /// Subscriptions not extended.
        public var failedCount: Int64?

        /// Creates a status.
        public init(complete: Bool?, completeDate: Date?, succeededCount: Int64?, failedCount: Int64?) {
            self.complete = complete
            self.completeDate = completeDate
            self.succeededCount = succeededCount
            self.failedCount = failedCount
        }
    }

    /// The environment Apple's API answers for (the server's own).
    public var environment: AppStoreEnvironment
    /// Extends one subscription chain: whether Apple did, and the period's new end.
    public var extend:
        @Sendable (_ originalTransactionId: String, _ days: Int32, _ reasonCode: Int32, _ requestIdentifier: String)
            async throws -> (extended: Bool, effectiveDate: Date?)
    /// Extends every active subscriber of a product, optionally of some storefronts only.
    public var extendAll:
        @Sendable (
            _ productId: String, _ days: Int32, _ reasonCode: Int32, _ storefronts: [String]?,
            _ requestIdentifier: String
        ) async throws -> Void
    /// How far a mass extension got.
    public var status: @Sendable (_ productId: String, _ requestIdentifier: String) async throws -> Status

    /// Creates the calls.
    public init(
        environment: AppStoreEnvironment,
        extend:
            @escaping @Sendable (String, Int32, Int32, String) async throws -> (extended: Bool, effectiveDate: Date?),
        extendAll: @escaping @Sendable (String, Int32, Int32, [String]?, String) async throws -> Void,
        status: @escaping @Sendable (String, String) async throws -> Status
    ) {
        self.environment = environment
        self.extend = extend
        self.extendAll = extendAll
        self.status = status
    }
}

/// Support extending subscriptions: one customer's (a goodwill gesture), or every active subscriber of a product (an
/// outage), each audited and shown on the customer page or the dashboard.
extension AdminService {
    /// The audit action of a customer's extension.
    public static let extendAction = "subscription.extend"
    /// The audit action of a mass extension.
    public static let extendAllAction = "subscription.extend-all"

    /// Extends the customer's active subscriptions (paid up, ending, or in Apple's grace period; one product's group
    /// with `productId`) by `days`, each through Apple, and records what Apple answered in the audit log, where the
    /// customer's timeline shows it. Apple's refusals (two extensions a year at most, none in a free offer period)
    /// come back per subscription.
    ///
    /// - Throws: ``AdminError/invalid(_:)`` for days, a reason code or a reason out of Apple's rules, or a customer with
    ///   no active subscription; ``AdminError/unavailable(_:)`` without an App Store Server API key.
    public func extendSubscriptions(
        environment: AppStoreEnvironment, supportId: String, request: ExtendSubscriptionRequest, actor: String
    ) async throws -> ExtendSubscriptionResponse {
        let days = try Self.rule { () throws(SupportRuleError) in try SupportRules.extensionDays(request.days) }
        let code = try Self.rule { () throws(SupportRuleError) in
            try SupportRules.extensionReasonCode(request.reasonCode)
        }
        let reason = try Self.reason(request.reason ?? SupportRules.extensionReasons[code] ?? "")
        let apple = try renewalExtensions(for: environment)
        var group: String?
        if let productId = request.productId {
            guard let product = catalog.product(id: productId), product.kind == .autoRenewable else {
                throw AdminError.invalid("\(productId) is not an auto-renewable subscription of the catalog")
            }
            group = product.group
        }
        let user = try await findChangeable(supportId, environment: environment)
        try await refuseRepeat(
            AuditQuery(subject: user.supportId.rawValue, action: Self.extendAction), environment: environment,
            what: "\(user.supportId)'s subscription was")
        let subscriptionProducts = Set(catalog.products.filter { $0.kind == .autoRenewable }.map(\.id))
        let receipts = try await store.receipts(
            owner: user.id, environment: environment, productIds: subscriptionProducts)
        let renewals = try await store.renewalStates(owner: user.id, environment: environment)
        let chosen = SubscriptionSummary.groups(receipts: receipts, renewals: renewals, catalog: catalog, at: now())
            .filter { [.active, .expiring, .inGrace].contains($0.state) && (group == nil || $0.group == group) }
        guard !chosen.isEmpty else {
            throw AdminError.invalid("\(user.supportId) has no active subscription to extend")
        }
        // Written before Apple is asked: a request whose answer is lost is still on record, and not asked again.
        try await store.recordAudit(
            AuditEvent(
                environment: environment, actor: actor, action: Self.extendAction + ".requested",
                subject: user.supportId.rawValue,
                after: try Self.json(
                    ExtensionRequestAudit(
                        days: Int(days), reasonCode: Int(code), reason: reason,
                        originalTransactionIds: chosen.map(\.originalTransactionId))), at: now()))
        var extensions: [SubscriptionExtensionView] = []
        for summary in chosen {
            let chain = receipts.filter { $0.transaction.originalTransactionId == summary.originalTransactionId }
            let productId =
                chain.max { $0.transaction.purchaseDate < $1.transaction.purchaseDate }?.transaction.productId
                ?? summary.product
            var view = SubscriptionExtensionView(
                originalTransactionId: summary.originalTransactionId, productId: productId, extended: false)
            if let data = summary.dataEnvironment, data != DataEnvironment(apple.environment) {
                // App Review's, TestFlight's or Xcode's data: Apple's API of this server's environment does not
                // know it.
                view.error = "\(data.rawValue) data: Apple's \(apple.environment.rawValue) API cannot extend it"
                extensions.append(view)
                continue
            }
            do {
                let requestIdentifier = UUID().uuidString.lowercased()
                let answer = try await Self.within(seconds: Self.appleDeadline) {
                    try await apple.extend(summary.originalTransactionId, days, code, requestIdentifier)
                }
                (view.extended, view.effectiveDate) = (answer.extended, answer.effectiveDate)
            } catch {
                view.error = "no answer from Apple in time, or a refusal: \(error); check before extending again"
            }
            extensions.append(view)
        }
        let response = ExtendSubscriptionResponse(
            supportId: user.supportId.rawValue, days: Int(days), reasonCode: Int(code), extensions: extensions)
        try await store.recordAudit(
            AuditEvent(
                environment: environment, actor: actor, action: Self.extendAction, subject: user.supportId.rawValue,
                after: try Self.json(ExtensionAudit(response: response, reason: reason)), at: now()))
        return response
    }

    /// Extends every active subscriber of a product through Apple's mass extension (an outage), audited; Apple
    /// works through it in the background, and ``massExtensions(environment:)`` follows it.
    ///
    /// - Throws: ``AdminError/invalid(_:)`` for a product that is not a subscription of the catalog, or days, a reason
    ///   code, a reason or storefronts out of Apple's rules; ``AdminError/unavailable(_:)`` without a key.
    public func extendAllSubscribers(environment: AppStoreEnvironment, request: MassExtensionRequest, actor: String)
        async throws -> MassExtensionView
    {
        guard let product = catalog.product(id: request.productId), product.kind == .autoRenewable else {
            throw AdminError.invalid("\(request.productId) is not an auto-renewable subscription of the catalog")
        }
        let days = try Self.rule { () throws(SupportRuleError) in try SupportRules.extensionDays(request.days) }
        let code = try Self.rule { () throws(SupportRuleError) in
            try SupportRules.extensionReasonCode(request.reasonCode)
        }
        let reason = try Self.reason(request.reason ?? SupportRules.extensionReasons[code] ?? "")
        let storefronts = try Self.rule { () throws(SupportRuleError) in
            try SupportRules.storefronts(request.storefronts ?? [])
        }
        let apple = try renewalExtensions(for: environment)
        try await refuseRepeat(
            AuditQuery(subject: "product \(product.id)", action: Self.extendAllAction), environment: environment,
            what: "every subscriber of \(product.id) was")
        let requestIdentifier = UUID().uuidString.lowercased()
        let at = now()
        let view = MassExtensionView(
            requestIdentifier: requestIdentifier, productId: product.id, days: Int(days), reasonCode: Int(code),
            requestedBy: actor, requestedAt: at)
        // On record before Apple is asked: a request Apple took but whose answer was lost is followed all the same
        // (``massExtensions(environment:)`` asks Apple about it), and the same product is not asked again at once.
        try await store.recordAudit(
            AuditEvent(
                environment: environment, actor: actor, action: Self.extendAllAction, subject: "product \(product.id)",
                after: try Self.json(MassExtensionAudit(view: view, reason: reason, storefronts: storefronts)), at: at))
        do {
            try await Self.within(seconds: Self.appleDeadline) {
                try await apple.extendAll(
                    product.id, days, code, storefronts.isEmpty ? nil : storefronts, requestIdentifier)
            }
        } catch {
            throw AdminError.unavailable(
                "Apple did not take the mass extension \(requestIdentifier) in time or refused it (\(error)); the "
                    + "extensions page asks Apple how it stands")
        }
        return view
    }

    /// How long one call to Apple may take here (the client's own retries included).
    static let appleDeadline: Double = 20
    /// How long after an extension the same one is refused: a retry after a lost answer must not extend twice.
    public static let repeatWindow: TimeInterval = 600

    /// Refuses an extension like one asked within ``repeatWindow``, found in the audit log.
    private func refuseRepeat(_ query: AuditQuery, environment: AppStoreEnvironment, what: String) async throws {
        guard let last = try await store.auditEvents(environment: environment, query: query, limit: 1).first else {
            return
        }
        let age = now().timeIntervalSince(last.at)
        guard age < Self.repeatWindow else { return }
        throw AdminError.invalid(
            "\(what) extended \(max(0, Int(age / 60))) minutes ago by \(last.actor): Apple allows two extensions a "
                + "year, so check what Apple answered first; the same extension is taken again after "
                + "\(Int(Self.repeatWindow / 60)) minutes")
    }

    /// The latest mass extensions (from the audit log, newest first, at most 10), each with Apple's status now;
    /// Apple gets 3 seconds for all of them, and a status it did not give in time is left out.
    public func massExtensions(environment: AppStoreEnvironment) async throws -> [MassExtensionView] {
        let events = try await store.auditEvents(
            environment: environment, query: AuditQuery(action: Self.extendAllAction), limit: 10)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var views = events.compactMap { event in
            event.after.flatMap { try? decoder.decode(MassExtensionAudit.self, from: Data($0.utf8)).view }
        }
        guard let apple = renewalExtensions, apple.environment == environment else { return views }
        let statuses = await withTaskGroup(of: (Int, RenewalExtensions.Status?).self) { group in
            for (index, view) in views.enumerated() {
                group.addTask {
                    (
                        index,
                        try? await Self.within(seconds: 3) {
                            try await apple.status(view.productId, view.requestIdentifier)
                        }
                    )
                }
            }
            var found: [Int: RenewalExtensions.Status] = [:]
            for await (index, status) in group { found[index] = status }
            return found
        }
        for (index, status) in statuses {
            views[index].complete = status.complete
            views[index].completeDate = status.completeDate
            views[index].succeededCount = status.succeededCount
            views[index].failedCount = status.failedCount
        }
        return views
    }

    /// A customer's extension in words, for their timeline: who, how many days, why, and what Apple answered for
    /// each subscription; `nil` for any other audit event.
    static func extensionSummary(_ event: AuditEvent) -> String? {
        guard event.action == extendAction || event.action == extendAction + ".requested", let after = event.after
        else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        if let asked = try? decoder.decode(ExtensionRequestAudit.self, from: Data(after.utf8)),
            event.action != extendAction
        {
            return "\(event.actor) asked Apple to extend the subscription by \(asked.days) days: \(asked.reason)"
        }
        guard let audit = try? decoder.decode(ExtensionAudit.self, from: Data(after.utf8)) else { return nil }
        let outcomes = audit.response.extensions.map { item in
            if item.extended {
                "\(item.productId) extended" + (item.effectiveDate.map { " to \($0.formatted(.iso8601))" } ?? "")
            } else {
                "\(item.productId) not extended (\(item.error ?? "Apple refused"))"
            }
        }
        let why = SupportRules.extensionReasons[Int32(audit.response.reasonCode)] ?? "\(audit.response.reasonCode)"
        return "\(event.actor) extended the subscription by \(audit.response.days) days (\(why)): \(audit.reason). "
            + outcomes.joined(separator: "; ")
    }

    private func renewalExtensions(for environment: AppStoreEnvironment) throws(AdminError) -> RenewalExtensions {
        guard let apple = renewalExtensions else {
            throw .unavailable(
                "extending a subscription goes through Apple's App Store Server API: give the server its In-App "
                    + "Purchase key (appstore.key.id, appstore.issuer.id, appstore.private.key)")
        }
        guard apple.environment == environment else {
            throw .invalid("subscriptions are extended in \(apple.environment.rawValue) only, the server's environment")
        }
        return apple
    }

    struct ExtensionRequestAudit: Codable, Sendable {
        var days: Int
        var reasonCode: Int
        var reason: String
        var originalTransactionIds: [String]
    }

    struct ExtensionAudit: Codable, Sendable {
        var response: ExtendSubscriptionResponse
        var reason: String
    }

    struct MassExtensionAudit: Codable, Sendable {
        var view: MassExtensionView
        var reason: String
        var storefronts: [String]
    }
}
