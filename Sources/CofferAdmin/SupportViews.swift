import CofferAPI
import CofferCore
import CofferStore
import Foundation

// The admin API's answers are CofferAPI's wire types; here is how the use cases build them from the store's
// records, and the words support reads beside them.

extension BackupView {
    /// The view of a backup record.
    public init(_ record: BackupRecord) {
        let (writer, name): (Writer, String) =
            switch record.writer {
            case .device(let name): (.device, name)
            case .admin(let name): (.admin, name)
            }
        self.init(
            value: record.value, lastUpdated: record.lastUpdated, version: record.version, writer: writer,
            writerName: name,
            currencies: record.currencies.isEmpty
                ? nil : Dictionary(uniqueKeysWithValues: record.currencies.map { ($0.key.rawValue, $0.value.balance) }))
    }
}

extension GrantView {
    /// The view of a grant, with its recipient's Support ID.
    public init(_ grant: Grant, supportId: String) {
        self.init(
            id: grant.id, supportId: supportId, credits: grant.credits, reason: grant.reason,
            createdBy: grant.createdBy, createdAt: grant.createdAt, claimedAt: grant.claimedAt,
            cancelledAt: grant.cancelledAt, cancelledBy: grant.cancelledBy, status: grant.status)
        currency = grant.currency?.rawValue
        expiresInDays = grant.expiresInDays
    }
}

extension PurchaseView {
    /// A receipt as support sees it, named from the catalog.
    public init(_ receipt: Receipt, catalog: Catalog) {
        let fact = receipt.transaction
        self.init(
            transactionId: fact.transactionId, productId: fact.productId,
            product: catalog.product(id: fact.productId)?.name ?? fact.productId, purchaseDate: fact.purchaseDate,
            quantity: fact.quantity, price: fact.price, currency: fact.currency, storefront: fact.storefront,
            dataEnvironment: fact.dataEnvironment, familyShared: fact.isFamilyShared, status: receipt.status,
            credits: receipt.deliveredCredits, refundedAt: receipt.isRevoked ? receipt.revokedAt : nil,
            refundReason: receipt.isRevoked ? fact.revocationReason : nil)
    }

    /// The price in words (`4.99 USD`), or `nil` where Apple's data gave none.
    public var priceText: String? {
        guard let price, let currency else { return nil }
        return PanelText.money(price, currency: currency)
    }

    /// Apple's refund reason in words, while refunded.
    public var refundReasonText: String? {
        status == .revoked ? Payment.revocationReasonText(refundReason) ?? "Apple gave no reason" : nil
    }
}

extension VerifyReportView {
    /// A verdict in words, for support.
    public static func words(_ verdict: ReconciliationVerdict) -> String {
        switch verdict {
        case .deliverNow: "delivered now (it had never been fulfilled)"
        case .alreadyRecorded: "already recorded"
        case .finishOnly: "finished (it had been delivered before)"
        case .couldNotBeVerified: "could not be verified: the customer was told to contact support"
        }
    }

    /// The report in one sentence: how many transactions, and how many of each verdict.
    public var summary: String {
        let order: [ReconciliationVerdict] = [.couldNotBeVerified, .deliverNow, .finishOnly, .alreadyRecorded]
        let parts = order.compactMap { verdict -> String? in
            let count = items.count { $0.verdict == verdict }
            return count == 0 ? nil : "\(PanelText.count(count)) \(Self.words(verdict).split(separator: ":")[0])"
        }
        let transactions = items.count == 1 ? "1 transaction" : "\(PanelText.count(items.count)) transactions"
        return parts.isEmpty ? "no transactions" : "\(transactions): " + parts.joined(separator: ", ")
    }
}
