import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

/// A transaction StoreKit cannot verify, on one account's devices.
struct ForgedTransaction: Sendable {
    var account: String
    var transaction: StoreTransaction
    var finished = false
}

extension SimulatedAppStore {
    /// Puts a transaction on the account's devices that StoreKit cannot verify, as a jailbroken device's purchase
    /// tool does: a purchase of `productId` the App Store never sold, whose signed form was changed after signing
    /// (the quantity raised), so its signature no longer matches. It is unfinished and arrives through the
    /// account's updates marked `invalidSignature` (``StoreTransaction/verificationFailure``), as StoreKit reports
    /// `VerificationResult.unverified`; it never counts toward entitlements or history, Apple's books (the App
    /// Store Server API, notifications) never hold it, and it stays until the app finishes it.
    @discardableResult
    public func forgeTransaction(
        account: String, productId: String, quantity: Int = 1, appAccountToken: UUID? = nil
    ) throws(SimulatorError) -> SimulatorReport {
        let product = try product(productId)
        guard quantity >= 1, quantity <= 10 else {
            throw SimulatorError("invalid-request", "quantity \(quantity) is not allowed")
        }
        let now = clock.now()
        let id = nextIdentifier()
        var expires: Date?
        if product.kind != .consumable, product.kind != .nonConsumable { expires = now + period(product) }
        let record = SimulatedTransaction(
            id: id, originalId: id, webOrderLineItemId: nil, orderId: orderId(), account: account, product: product,
            purchaseDate: now, originalPurchaseDate: now, expiresDate: expires, quantity: quantity,
            appAccountToken: appAccountToken, familyShared: false, renewal: false, price: 0, modified: now)
        let honest = try signedTransaction(record)
        var raised = decoded(record)
        raised.quantity = Int32(quantity * 10)
        let tampered = try sign(raised)
        // The honest header and signature around the raised payload: StoreKit's signature check fails.
        let parts = honest.split(separator: ".", omittingEmptySubsequences: false)
        let payload = tampered.split(separator: ".", omittingEmptySubsequences: false)[1]
        var transaction = storeTransaction(record)
        transaction.jwsRepresentation = [parts[0], payload, parts[2]].joined(separator: ".")
        transaction.verificationFailure = "invalidSignature"
        forged[id] = ForgedTransaction(account: account, transaction: transaction)
        for continuation in (updateStreams[account] ?? [:]).values { continuation.yield(transaction) }
        var report = SimulatorReport()
        report.happened.append(
            "a transaction StoreKit cannot verify (\(productId) ×\(quantity), its payload changed after signing) is on \(account)'s devices: \(id)"
        )
        report.transactionIds.append(id)
        return report
    }

    /// The account's unfinished forged transactions, oldest first.
    func unfinishedForged(account: String) -> [StoreTransaction] {
        forged.values.filter { $0.account == account && !$0.finished }.map(\.transaction)
            .sorted { ($0.purchaseDate, $0.id.count, $0.id) < ($1.purchaseDate, $1.id.count, $1.id) }
    }

    /// Whether the account's devices finished this forged transaction; `nil` when there is no such forgery.
    public func forgeryFinished(_ transactionId: String) -> Bool? { forged[transactionId]?.finished }
}
