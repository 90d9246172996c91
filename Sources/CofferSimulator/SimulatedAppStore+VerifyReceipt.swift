import CofferAppStore
import CofferCore
import Foundation

extension SimulatedAppStore {
    private static let receiptPrefix = "coffer-simulator-receipt"

    /// The account's app receipt, as the device would send it to a server (base64): with a receipt authority,
    /// a PKCS#7 receipt in Apple's shape (``signedAppReceipt(account:authority:)``); without one, a token only
    /// this simulator reads. Its verifyReceipt answers for either with the account's purchases.
    public func appReceipt(account: String) -> String {
        if let receiptAuthority, let signed = try? signedAppReceipt(account: account, authority: receiptAuthority) {
            return signed
        }
        return Data("\(Self.receiptPrefix)|\(environment(of: account).rawValue)|\(account)".utf8)
            .base64EncodedString()
    }

    /// The environment and account of a receipt this simulator handed out: a token, or a PKCS#7 receipt its
    /// receipt authority signed (read with Apple's receipt policy; the account is the owner of its purchases).
    private func receiptOwner(_ decoded: Data) async -> (environment: SignedDataEnvironment, account: String)? {
        if let text = String(data: decoded, encoding: .utf8) {
            let parts = text.split(separator: "|", maxSplits: 2).map(String.init)
            if parts.count == 3, parts[0] == Self.receiptPrefix,
                let environment = SignedDataEnvironment(rawValue: parts[1])
            {
                return (environment, parts[2])
            }
        }
        guard let receiptAuthority, let root = try? receiptAuthority.rootDER(),
            let reader = try? AppReceiptReader(trustedRoots: [root], now: { [clock] in clock.now() }),
            let receipt = try? await reader.read(der: decoded), receipt.bundleId == configuration.bundleId
        else { return nil }
        let environment: SignedDataEnvironment
        switch receipt.receiptType {
        case "Production": environment = .production
        case "ProductionSandbox": environment = .sandbox
        default: return nil
        }
        let ids = Set(receipt.inAppPurchases.compactMap(\.transactionId))
        let account = transactions.first { ids.contains($0.id) }?.account ?? ""
        return (environment, account)
    }

    /// The account's app receipt as a real PKCS#7 container in Apple's shape, signed by `authority`: the
    /// type (`ProductionSandbox` or `Production`), the bundle id and version, the creation date (now on the
    /// simulator's clock) and one in-app record per purchase of the account, with refunds as cancellation
    /// dates. A server that trusts the authority's root reads it with Apple's receipt policy.
    ///
    /// - Returns: The receipt in base64, as an app sends it.
    public func signedAppReceipt(account: String, authority: SimulatorReceiptAuthority) throws -> String {
        var receipt = AppReceipt()
        receipt.receiptType = environment(of: account) == .sandbox ? "ProductionSandbox" : "Production"
        receipt.bundleId = configuration.bundleId
        receipt.applicationVersion = configuration.bundleVersion
        receipt.originalApplicationVersion = configuration.bundleVersion
        receipt.creationDate = clock.now()
        receipt.inAppPurchases = transactions.filter { $0.account == account }.map { record in
            var purchase = InAppPurchaseReceipt()
            purchase.quantity = Int64(record.quantity)
            purchase.productId = record.product.id
            purchase.transactionId = record.id
            purchase.originalTransactionId = record.originalId
            purchase.purchaseDate = record.purchaseDate
            purchase.originalPurchaseDate = record.originalPurchaseDate
            purchase.expiresDate = record.expiresDate
            purchase.cancellationDate = record.revocationDate
            return purchase
        }
        return try authority.sign(receipt).base64EncodedString()
    }

    /// Answers verifyReceipt as Apple's host for `environment` does: 21002 for data that is not a receipt,
    /// 21007 for a sandbox receipt sent to production, 21008 for a production receipt sent to the sandbox,
    /// 21004 for a wrong shared secret; otherwise status 0 with the receipt, the latest transactions and
    /// pending renewal info, numbers as strings as Apple writes them.
    ///
    /// - Parameters:
    ///   - body: The request body (`receipt-data`, `password`, `exclude-old-transactions`).
    ///   - host: Which of Apple's two hosts was asked.
    /// - Returns: The JSON answer.
    public func verifyReceipt(body: Data, host: SignedDataEnvironment) async -> Data {
        func answer(_ object: [String: Any]) -> Data {
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        }
        guard let request = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let receiptData = request["receipt-data"] as? String,
            let decoded = Data(base64Encoded: receiptData.filter { !$0.isWhitespace })
        else { return answer(["status": 21002]) }
        guard let (environment, account) = await receiptOwner(decoded) else { return answer(["status": 21002]) }
        if host == .production, environment == .sandbox { return answer(["status": 21007]) }
        if host == .sandbox, environment == .production { return answer(["status": 21008]) }
        let owned = transactions.filter { $0.account == account }
        if let secret = configuration.sharedSecret, owned.contains(where: { $0.product.kind == .autoRenewable }),
            request["password"] as? String != secret
        {
            return answer(["status": 21004, "environment": environment.rawValue])
        }
        let inApp = owned.map(Self.receiptFields)
        var latest = owned.filter { $0.product.kind == .autoRenewable }
        if request["exclude-old-transactions"] as? Bool == true {
            latest = subscriptions.values.filter { $0.account == account }.compactMap { record($0.latestTransactionId) }
        }
        let pending = subscriptions.values.filter { $0.account == account }.sorted { $0.originalId < $1.originalId }
            .map { subscription -> [String: Any] in
                var fields: [String: Any] = [
                    "original_transaction_id": subscription.originalId, "product_id": subscription.productId,
                    "auto_renew_product_id": subscription.autoRenewProductId,
                    "auto_renew_status": subscription.autoRenew ? "1" : "0",
                ]
                if subscription.state == .billingRetry || subscription.state == .gracePeriod {
                    fields["is_in_billing_retry_period"] = "1"
                }
                if let intent = subscription.expirationIntent { fields["expiration_intent"] = String(intent) }
                if let grace = subscription.gracePeriodExpiresDate {
                    fields["grace_period_expires_date_ms"] = Self.milliseconds(grace)
                }
                return fields
            }
        let now = clock.now()
        return answer([
            "status": 0, "environment": environment.rawValue, "latest_receipt": receiptData,
            "receipt": [
                "receipt_type": environment == .sandbox ? "ProductionSandbox" : "Production",
                "bundle_id": configuration.bundleId, "application_version": configuration.bundleVersion,
                "original_application_version": configuration.bundleVersion,
                "receipt_creation_date_ms": Self.milliseconds(now), "request_date_ms": Self.milliseconds(now),
                "in_app": inApp,
            ] as [String: Any],
            "latest_receipt_info": latest.sorted { $0.purchaseDate > $1.purchaseDate }.map(Self.receiptFields),
            "pending_renewal_info": pending,
        ])
    }

    private static func receiptFields(_ record: SimulatedTransaction) -> [String: Any] {
        var fields: [String: Any] = [
            "transaction_id": record.id, "original_transaction_id": record.originalId, "product_id": record.product.id,
            "quantity": String(record.quantity), "purchase_date_ms": milliseconds(record.purchaseDate),
            "original_purchase_date_ms": milliseconds(record.originalPurchaseDate), "is_trial_period": "false",
            "in_app_ownership_type": record.familyShared ? "FAMILY_SHARED" : "PURCHASED",
        ]
        if let expires = record.expiresDate { fields["expires_date_ms"] = milliseconds(expires) }
        if let revoked = record.revocationDate {
            fields["cancellation_date_ms"] = milliseconds(revoked)
            fields["cancellation_reason"] = String(record.revocationReason ?? 0)
        }
        if let line = record.webOrderLineItemId { fields["web_order_line_item_id"] = line }
        if record.isUpgraded { fields["is_upgraded"] = "true" }
        return fields
    }

    private static func milliseconds(_ date: Date) -> String { String(Milliseconds.from(date)) }
}
