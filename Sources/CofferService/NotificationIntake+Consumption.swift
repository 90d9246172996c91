import CofferAppStore
import CofferCore
import CofferStore
import Foundation
import Logging

/// The refund defence: Apple's CONSUMPTION_REQUEST answered from the ledger, with the customer's consent, and the
/// answer (or why there was none) recorded for support.
extension NotificationIntake {
    /// Answers a CONSUMPTION_REQUEST through Send Consumption Information (version 2 unless `consumption.version` is
    /// 1), only for a customer who consented; records what was answered and why. Apple asks once: a failure is
    /// recorded and logged, and never fails the notification.
    func answerConsumptionRequest(
        _ notification: VerifiedNotification, fact: TransactionFact, user: User, logger: Logger
    ) async {
        guard user.isLive else {
            // Their consent and their balance went with the deletion: Apple decides without Coffer's word.
            logger.info("consumption request about a customer deleted at their request not answered")
            return
        }
        var record = ConsumptionAnswerRecord(
            notificationUUID: notification.payload.notificationUUID ?? UUID().uuidString, environment: user.environment,
            owner: user.id, transactionId: fact.transactionId,
            requestedAt: notification.payload.signedDate ?? dependencies.now(), answeredAt: dependencies.now(),
            sent: false, body: nil, reason: "")
        await answer(&record, fact: fact, user: user, logger: logger)
        do {
            _ = try await store.recordConsumptionAnswer(record)
        } catch {
            logger.error("could not record the consumption answer: \(error)")
        }
    }

    /// Decides, builds and sends the answer, writing into `record` what was sent and why.
    private func answer(_ record: inout ConsumptionAnswerRecord, fact: TransactionFact, user: User, logger: Logger)
        async
    {
        let settings = configuration.consumption
        guard settings.answer, let client = dependencies.appStoreAPI else {
            record.reason =
                settings.answer
                ? "not sent: no App Store Server API key" : "not sent: consumption answers are off (consumption.answer)"
            logger.info("consumption request not answered (\(record.reason))")
            return
        }
        guard (fact.environment ?? user.environment) == user.environment else {
            // The client speaks to this server's environment; Apple asks about sandbox purchases in the sandbox.
            record.reason = "not sent: about \(fact.environment?.rawValue ?? "") data, not this server's"
            logger.info("consumption request about \(fact.environment?.rawValue ?? "") data not answered")
            return
        }
        do {
            let consent = try await store.consumptionConsent(owner: user.id, environment: user.environment)
            guard consent?.consented == true else {
                // Apple takes consumption information only with the customer's consent: nothing is sent.
                record.reason =
                    consent == nil
                    ? "not sent: the customer was never asked to share consumption data"
                    : "not sent: the customer declined to share consumption data"
                return
            }
            let receipt = try await store.receipt(transactionId: fact.transactionId, environment: user.environment)
            let product = dependencies.catalog.product(id: fact.productId)
            // A purchase that gave other currencies: the share used is not one number Coffer can stand behind, so
            // Apple is told nothing rather than something false.
            if try await deliveredOtherCurrencies(fact, product: product, user: user) {
                record.reason = "not sent: the purchase delivered credits in several currencies"
                logger.info("consumption request about a purchase of several currencies not answered")
                return
            }
            if settings.version == 1 {
                let request = ConsumptionAnswer.request(
                    receipt: receipt, product: product,
                    wallet: try await store.wallet(owner: user.id, environment: user.environment),
                    backup: try await store.backup(owner: user.id, environment: user.environment),
                    wallet: configuration.wallet, user: user, refundPreference: settings.refundPreference,
                    now: dependencies.now())
                record.body = String(decoding: try AppleJSON.encode(request), as: UTF8.self)
                record.reason = "version 1 (consumption.version)"
                try await client.sendConsumptionInformationV1(fact.transactionId, request)
            } else {
                let used = try await used(of: receipt, user: user)
                let (request, reason) = ConsumptionAnswer.requestV2(
                    receipt: receipt, product: product, used: used, configuration: settings)
                record.body = String(decoding: try AppleJSON.encode(request), as: UTF8.self)
                record.reason = reason
                try await client.sendConsumptionInformation(fact.transactionId, request)
            }
            record.sent = true
        } catch {
            record.reason = "not sent: \(error)" + (record.reason.isEmpty ? "" : " (\(record.reason))")
            logger.error("could not send consumption information: \(error)")
        }
    }

    /// Whether the purchase gives, or delivered, credits of a currency other than the default.
    private func deliveredOtherCurrencies(_ fact: TransactionFact, product: CatalogProduct?, user: User) async throws
        -> Bool
    {
        if product?.otherCredits.contains(where: { $0.value != 0 }) == true { return true }
        for currency in dependencies.catalog.currencies.dropFirst() {
            let receipt = try await store.receipt(
                transactionId: fact.transactionId, environment: user.environment, currency: currency.id)
            if (receipt?.deliveredCredits ?? 0) > 0 { return true }
        }
        return false
    }

    /// How many of the purchase's credits were used since it was delivered, never more than the balance lacks of
    /// them (credits held before the purchase are spent first): in the server wallet, what was spent since, at most
    /// what the balance no longer holds of the purchase; in the device wallet, what the latest backup no longer
    /// holds of it.
    private func used(of receipt: Receipt?, user: User) async throws -> Int64? {
        guard let receipt, let delivered = receipt.deliveredCredits, let since = receipt.deliveredAt else { return nil }
        switch configuration.wallet {
        case .server:
            let balance = try await store.wallet(owner: user.id, environment: user.environment).balance
            let spent = try await store.entries(owner: user.id, environment: user.environment, kinds: [.spend])
                .reduce(Int64(0)) { $1.createdAt >= since ? $0 + max(-$1.amount, 0) : $0 }
            return min(spent, delivered - min(max(balance, 0), delivered))
        case .device:
            guard let backup = try await store.backup(owner: user.id, environment: user.environment) else { return nil }
            return delivered - min(max(backup.value, 0), delivered)
        }
    }
}
