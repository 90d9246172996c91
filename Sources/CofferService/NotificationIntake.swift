import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging

/// Applies App Store Server Notifications V2, whether Apple posted them or the recovery service fetched
/// them from Notification History: verify, de-duplicate by `notificationUUID`, apply to the ledger, record.
///
/// The effect is written before the notification is recorded as processed, and every effect is keyed in
/// the ledger, so a crash between the two only means the next delivery finds the effect already there. The one
/// exception is a word kept for nobody whose transaction an app presented meanwhile: it is recorded as kept
/// (`unattributed`), then applied to the owner found after all, and answered `applied`.
public struct NotificationIntake: ServiceOnParts {
    /// What it is built from.
    public let parts: ServiceParts

    /// An intake of its own over `configuration` and `dependencies` (for a `coffer` command's service, not a running
    /// server's, which shares its parts).
    public init(configuration: ServiceConfiguration, dependencies: ServerDependencies) {
        self.init(
            ServiceParts(
                configuration: configuration, dependencies: dependencies, events: EventHub(),
                ledger: LedgerBatcher(store: dependencies.store, writers: configuration.ledgerWriters)))
    }

    /// The intake over `parts`.
    public init(_ parts: ServiceParts) {
        self.parts = parts
    }

    /// What receiving one notification did.
    public enum Outcome: String, Sendable {
        /// Applied to its owner's ledger.
        case applied
        /// Seen before (its `notificationUUID`).
        case duplicate
        /// About a transaction nobody presented yet: kept, applied when a user presents it.
        case unattributed
        /// Recorded; nothing to apply.
        case logged
    }

    /// Types whose transaction Coffer records (or delivers, if it never saw it): the purchase, renewal
    /// and subscription-status types. REFUND/REVOKE and REFUND_REVERSED are handled on their own.
    static let recordingTypes: Set<NotificationTypeV2> = [
        .subscribed, .didRenew, .offerRedeemed, .oneTimeCharge, .didChangeRenewalPref, .didChangeRenewalStatus,
        .expired, .didFailToRenew, .gracePeriodExpired, .renewalExtended, .priceIncrease, .refundDeclined,
    ]

    /// Verifies and applies one signed notification.
    ///
    /// - Parameters:
    ///   - signedPayload: Apple's `signedPayload`.
    ///   - source: `apple` or `recovery`, recorded with it.
    ///   - logger: Where it logs.
    ///   - verified: Called as soon as the notification verified, before it is stored or applied.
    ///   - body: The request's body as Apple posted it, forwarded unchanged to `apple.forward.url`; `nil` for one
    ///     read from Notification History (forwarded as Apple posts it).
    /// - Returns: What it did, once durable, and the record kept of it (`nil` for a duplicate).
    /// - Throws: ``ServiceError`` for data that does not verify (``ServiceError/unavailable(code:message:)``
    ///   when verification could not be completed now) and storage failures.
    public func receive(
        _ signedPayload: String, source: String, logger: Logger, verified: @Sendable () -> Void = {},
        forwarding body: String? = nil
    ) async throws -> (outcome: Outcome, record: NotificationRecord?) {
        let notification: VerifiedNotification
        do {
            notification = try await dependencies.verifier.verifyNotification(signedPayload)
            verified()
        } catch {
            dependencies.metrics.verificationFailed(status: error.status)
            dependencies.metrics.notificationRefused(status: error.status, at: dependencies.now())
            logger.warning("notification refused", metadata: ["status": "\(error.status)"])
            throw ServiceError(error)
        }
        let payload = notification.payload
        guard let uuid = payload.notificationUUID, !uuid.isEmpty, let signedDate = payload.signedDate else {
            throw ServiceError.verification(
                code: "VERIFICATION_FAILURE", message: "the notification lacks notificationUUID or signedDate")
        }
        let environment = configuration.environment
        if try await store.notification(uuid: uuid, environment: environment) != nil { return (.duplicate, nil) }

        let type = payload.rawNotificationType ?? "UNKNOWN"
        let now = dependencies.now()
        dependencies.metrics.notificationReceived(type: type, lag: now.timeIntervalSince(signedDate))
        var record = NotificationRecord(
            uuid: uuid, environment: environment, type: type, subtype: payload.rawSubtype,
            transactionId: notification.transaction?.transactionId,
            originalTransactionId: notification.transaction?.originalTransactionId
                ?? notification.renewalInfo?.originalTransactionId,
            signedDate: signedDate, receivedAt: now, outcome: .logged, source: source)
        // What `apple.forward.url` gets: Apple's body as it came, or (from Notification History) as Apple posts it.
        record.forwardBody = body ?? #"{"signedPayload":"\#(signedPayload)"}"#
        var metadata: Logger.Metadata = [
            "notificationUUID": "\(uuid)", "type": "\(type)", "source": "\(source)",
        ]
        if let id = record.transactionId { metadata["transactionId"] = "\(id)" }

        if let transaction = notification.transaction, let fact = TransactionFact(transaction) {
            var owner = try await owner(of: fact, appAccountToken: transaction.appAccountToken)
            var byAccount = false
            if owner == nil, let customer = try await accountOwner(of: fact, transaction: transaction) {
                (owner, byAccount) = (customer, true)
            }
            record.owner = owner?.id
            if let owner {
                record.outcome = try await apply(notification, fact: fact, to: owner, logger: logger)
                if byAccount, record.outcome == .applied,
                    Self.recordingTypes.contains(payload.notificationType ?? .test)
                {
                    // Found by its Apple account: later notifications about it name the customer themselves.
                    writeTokenBack(fact, user: owner)
                }
            } else if [.refund, .revoke, .refundReversed].contains(payload.notificationType)
                || Self.recordingTypes.contains(payload.notificationType ?? .test)
            {
                // Nobody presented it yet: kept, and applied when a user presents the transaction.
                record.outcome = .unattributed
            }
        }
        if payload.notificationType == .rescindConsent, let owner = try await rescindedCustomer(notification) {
            record.owner = owner.id
            record.outcome = .applied
            // Recorded on the customer (their timeline shows it), and told to their app.
            // Keyed by the notification: Apple's retry and the recovery's copy meeting write it once.
            do {
                try await store.recordAudit(
                    AuditEvent(
                        id: AdminService.stableId("rescind-consent:\(environment.rawValue):\(uuid)"),
                        environment: owner.environment, actor: "Apple", action: "customer.consent-rescinded",
                        subject: owner.supportId.rawValue, at: signedDate))
            } catch StoreError.alreadyExists {}
            await events.publish(ServerEventBody(type: .consentRescinded, key: uuid), to: owner.id)
        }
        _ = try await store.recordNotification(record)
        if record.outcome == .unattributed, let transaction = notification.transaction,
            let fact = TransactionFact(transaction),
            let owner = try await owner(of: fact, appAccountToken: transaction.appAccountToken)
        {
            // Presented while this looked for its owner (that presentation read Apple's kept words before this
            // was kept): applied now, or it would wait for a presentation that never comes. The record keeps
            // what it was when written; the ledger's keys make the two paths meet once.
            record.owner = owner.id
            record.outcome = try await apply(notification, fact: fact, to: owner, logger: logger)
        }
        metadata["outcome"] = "\(record.outcome.rawValue)"
        logger.info("notification", metadata: metadata)
        return (Outcome(rawValue: record.outcome.rawValue) ?? .logged, record)
    }

    /// The customer a RESCIND_CONSENT is about: the one of the Apple account its verified `appData` app transaction
    /// names.
    private func rescindedCustomer(_ notification: VerifiedNotification) async throws -> User? {
        guard let app = notification.appTransaction, let appTransactionId = app.appTransactionId else { return nil }
        let account = AppleAccount(
            appTransactionId: appTransactionId,
            environment: app.receiptType?.ledgerEnvironment ?? configuration.environment)
        return try await store.user(appleAccount: account, environment: configuration.environment).flatMap {
            $0.isOwnCustomer ? $0 : nil
        }
    }

    /// The user a transaction belongs to: whoever it was delivered to, else whoever its `appAccountToken`
    /// names (as `POST /v1/transactions` insists), else whoever owns its subscription chain (then, in the server
    /// wallet, ``ServiceOnParts/accountOwner(of:transaction:)``). The token comes before the chain because two
    /// installs of the app on one Apple account are two users: a subscription one of them started again after the
    /// other's lapsed keeps the chain but names its own user.
    func owner(of fact: TransactionFact, appAccountToken: UUID?) async throws -> User? {
        let environment = configuration.environment
        if let ownerId = try await store.receipt(transactionId: fact.transactionId, environment: environment)?.owner {
            return try await store.user(id: ownerId)
        }
        // Apple's Sandbox data about a customer whose AppTransaction says Production is recorded and applied to
        // nobody (any TestFlight tester makes it for free, naming whatever account token the app sets).
        let reaches = { (user: User) in
            Delivery.reaches(data: fact.environment, customer: user.appleAccount?.environment)
        }
        if let appAccountToken,
            let named = try await store.user(appAccountToken: appAccountToken, environment: environment)
        {
            return reaches(named) ? named : nil
        }
        // A chain from the other environment (App Review's sandbox purchases on a Production server) is
        // another chain, whatever its id.
        guard
            let chainOwner = try await store.receipts(
                originalTransactionId: fact.originalTransactionId, environment: environment
            ).first(where: { ($0.transaction.environment ?? environment) == (fact.environment ?? environment) })?
            .owner
        else { return nil }
        // A customer deleted at their request gets nothing new: a renewal of their chain waits for the app to
        // present it (under whoever it signs in as now). A transaction delivered to them before still finds them
        // above, so Apple's refunds are still taken back.
        return try await store.user(id: chainOwner).flatMap { $0.isLive && reaches($0) ? $0 : nil }
    }

    private func apply(_ notification: VerifiedNotification, fact: TransactionFact, to user: User, logger: Logger)
        async throws -> NotificationOutcome
    {
        let type = notification.payload.notificationType
        if let info = notification.renewalInfo {
            let state = RenewalState(
                originalTransactionId: info.originalTransactionId ?? fact.originalTransactionId,
                environment: user.environment, owner: user.id, autoRenewProductId: info.autoRenewProductId,
                autoRenews: info.autoRenewStatus == .on, inBillingRetry: info.isInBillingRetryPeriod ?? false,
                gracePeriodExpiresDate: info.gracePeriodExpiresDate,
                signedDate: info.signedDate ?? notification.payload.signedDate ?? dependencies.now())
            _ = try await store.saveRenewalState(state)
        }
        if type == .consumptionRequest {
            await answerConsumptionRequest(notification, fact: fact, user: user, logger: logger)
            return .applied
        }
        switch type {
        case .refund, .revoke, .refundReversed:
            guard let type = notification.payload.rawNotificationType,
                let signedDate = notification.payload.signedDate,
                let word = Delivery.LaterWord(notificationType: type, signedDate: signedDate)
            else { return .logged }
            return try await apply(word, on: fact, to: user, logger: logger)
        case let type? where Self.recordingTypes.contains(type):
            let delivered = try await deliver(fact, to: user, source: "notification", logger: logger)
            if delivered, type == .renewalExtended {
                // The period ends later now (support's or an outage's extension): the app refreshes what it unlocks.
                await events.publish(ServerEventBody(type: .entitlements, key: fact.transactionId), to: user.id)
            }
            return delivered ? .applied : .logged
        default:
            return .logged
        }
    }

    /// Applies Apple's word on a transaction its owner holds (``Delivery/events(for:on:credits:)``): a reversal
    /// of a purchase refunded before it was ever delivered delivers it.
    ///
    /// - Returns: What the first of its events came to.
    func apply(_ word: Delivery.LaterWord, on fact: TransactionFact, to user: User, logger: Logger) async throws
        -> NotificationOutcome
    {
        var credits: Int64?
        if word.kind == .reversal,
            try await store.receipt(transactionId: fact.transactionId, environment: user.environment)?
                .deliveredCredits == nil
        {
            do {
                credits = try dependencies.catalog.defaultCredits(for: fact)
            } catch {
                logger.warning("a transaction of a product the catalog does not sell: \(fact.productId)")
            }
        }
        var outcomes: [NotificationOutcome] = []
        for event in Delivery.events(for: word, on: fact, credits: credits) {
            outcomes.append(try await applyEvent(event, to: user, source: "notification", logger: logger))
        }
        return outcomes.first ?? .logged
    }

    /// Records a transaction for a user: delivered (or, already refunded, revoked) unless the ledger has it.
    ///
    /// - Returns: Whether the ledger took it (`false` for a product the catalog does not sell or a refusal).
    func deliver(_ fact: TransactionFact, to user: User, source: String, logger: Logger) async throws -> Bool {
        guard let event = try? Delivery.event(for: fact, catalog: dependencies.catalog) else {
            logger.warning("a transaction of a product the catalog does not sell: \(fact.productId)")
            return false
        }
        return try await applyEvent(event, to: user, source: source, logger: logger) == .applied
    }

    /// Applies one ledger event, counts it and tells the user's event streams.
    private func applyEvent(_ event: LedgerEvent, to user: User, source: String, logger: Logger) async throws
        -> NotificationOutcome
    {
        let request = LedgerRequest(
            owner: user.id, environment: user.environment, event: event, policy: configuration.deficitPolicy,
            at: dependencies.now())
        switch try await applyInEveryCurrency([request]).first {
        case .success(let result):
            if result.outcome == .applied {
                switch event {
                case .revocation: dependencies.metrics.revoked()
                case .purchase(let fact, _):
                    dependencies.metrics.delivered(source: source)
                    finishOnApple(fact, user: user)
                default: break
                }
                let kind: ServerEventKind =
                    switch event {
                    case .revocation, .reversal: .adjustment
                    default: .entitlements
                    }
                await events.publish(ServerEventBody(type: kind, key: result.entry?.key.rawValue), to: user.id)
            }
            return .applied
        case .failure(let error):
            // A refusal is final (another user's transaction, a mismatch): recorded, not retried.
            logger.warning("refused by the ledger: \(error)")
            return .logged
        case nil:
            throw ServiceError.internalError("the ledger did not answer")
        }
    }
}
