import CofferAPI
import CofferCore
import CofferService
import CofferSimulator
import CofferStore
import CofferStoreKit
import CofferTestSupport
import Foundation
import Logging

/// The model simulation's Apple notifications and its check after every step (``ModelRun``).
extension ModelRun {
    // MARK: Apple's notifications

    /// Apple's notifications sent since the last look, now in flight, and the facts of the transactions they
    /// carry as Apple signed them.
    func takeSent(_ apple: SimulatedAppStore) async {
        let sent = await apple.sentNotifications()
        guard sent.count > sentCount else { return }
        var refunded: Set<String> = []
        for (index, customer) in customers.enumerated() {
            for transaction in await apple.accountTransactions(account: customer.account) {
                facts[transaction.id] = purchase(transaction, customer: index)
                if transaction.revocationDate != nil { refunded.insert(transaction.id) }
            }
        }
        for notification in sent.dropFirst(sentCount) {
            let carried = notification.transactionId.map { refunded.contains($0) } ?? false
            inFlight.append(InFlight(notification: notification, refunded: carried))
        }
        sentCount = sent.count
    }

    /// A notification that may arrive now: Apple's notifications about one transaction arrive in Apple's order;
    /// those about different transactions in any.
    func nextDeliverable() -> Int? {
        var seen: Set<String> = []
        var candidates: [Int] = []
        for (index, flight) in inFlight.enumerated() {
            let id = flight.notification.transactionId ?? flight.notification.uuid
            if seen.insert(id).inserted { candidates.append(index) }
        }
        return candidates.randomElement(using: &random)
    }

    func deliver(_ index: Int, intake: NotificationIntake, store: CountingStore, logger: Logger, step: Int)
        async throws
    {
        var flight = inFlight[index]
        let notification = flight.notification
        guard !flight.acknowledged else {
            // Apple sends a notification again: already recorded.
            let (again, _) = try await request("notification", store: store) {
                try await intake.receive(notification.signedPayload, source: "apple", logger: logger)
            }
            guard again.outcome == .duplicate else {
                throw Broken(description: "step \(step): \(notification.type) again answered \(again.outcome)")
            }
            inFlight.remove(at: index)
            return
        }
        if let id = notification.transactionId, let customer = owner(of: notification) {
            switch notification.type {
            case "REFUND", "REVOKE":
                model.refund(id, customerPurchase(id, customer: customer), at: serverNow())
            case "REFUND_REVERSED":
                model.reverse(id, at: serverNow())
            default:
                _ = model.present(
                    id, customerPurchase(id, customer: customer), refunded: flight.refunded, at: serverNow())
            }
        }
        let (answer, committed) = try await request("notification", store: store) {
            try await intake.receive(notification.signedPayload, source: "apple", logger: logger)
        }
        let expected: NotificationIntake.Outcome =
            committed?.contains("recordNotification") == true ? .duplicate : .applied
        guard answer.outcome == expected else {
            throw Broken(
                description: "step \(step): \(notification.type) of \(notification.transactionId ?? "-") answered "
                    + "\(answer.outcome), expected \(expected)")
        }
        note("  \(notification.type) of \(notification.transactionId ?? "-") arrived")
        if chance(15) {
            flight.acknowledged = true
            inFlight[index] = flight
        } else {
            inFlight.remove(at: index)
        }
    }

    func owner(of notification: OutgoingNotification) -> Int? {
        guard let id = notification.transactionId else { return nil }
        return facts[id]?.customer
    }

    func customerPurchase(_ id: String, customer: Int) -> MoneyModel.Purchase {
        facts[id] ?? MoneyModel.Purchase(customer: customer, product: "", credits: [:], purchaseDate: .distantPast)
    }

    // MARK: The check

    /// After every step: the credits whose end has come end (as the server's sweep ends them), and every customer's
    /// wallet in each currency, what is left of their credits that end, and their entitlements are the model's.
    func check(after moment: String, client: ClientService, store: CountingStore) async throws {
        _ = try await store.expireCredits(environment: .sandbox, owner: nil, at: serverNow(), limit: 1_000)
        model.expire(at: serverNow())
        for (index, customer) in customers.enumerated() {
            let others = try await store.currencyWallets(owner: customer.user.id, environment: .sandbox)
            for currency in MoneyModel.currencies {
                let wallet =
                    currency == MoneyModel.coins
                    ? try await store.wallet(owner: customer.user.id, environment: .sandbox)
                    : others[Currency(rawValue: currency)!] ?? Wallet()
                let expected = model.account(index, currency)
                guard wallet.balance == expected.balance, wallet.deficit == expected.deficit else {
                    throw Broken(
                        description: "\(moment): \(customer.account) has \(currency) balance \(wallet.balance), "
                            + "deficit \(wallet.deficit); the model \(expected)")
                }
            }
            var left: [String: Int64] = [:]
            for lot in try await store.creditLots(owner: customer.user.id, environment: .sandbox) {
                left[lot.currency?.rawValue ?? MoneyModel.coins, default: 0] += lot.remaining
            }
            guard left == model.expiring(of: index) else {
                throw Broken(
                    description: "\(moment): \(customer.account)'s credits that end: \(left); the model "
                        + "\(model.expiring(of: index))")
            }
            let entitlements = try await client.entitlements(of: customer.user)
            let modelled = model.entitlements(of: index, at: serverNow())
            guard entitlements == modelled else {
                throw Broken(
                    description: "\(moment): \(customer.account) is entitled to \(entitlements); the model \(modelled)")
            }
        }
    }
}
