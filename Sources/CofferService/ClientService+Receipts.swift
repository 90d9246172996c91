import CofferAPI
import CofferAppStore
import CofferCore
import CofferStore
import Foundation

extension ClientService {
    /// Reads and verifies a legacy app receipt (PKCS#7 signature, chain to Apple Root CA at the receipt's
    /// creation date, this app's bundle, this environment) and delivers every in-app purchase in it once, like
    /// a signed transaction.
    ///
    /// - Throws: ``ServiceError/verification(code:message:)`` for a receipt that does not verify here.
    public func verifyReceipt(_ receiptData: String, user: User) async throws -> ReceiptVerifyResponse {
        let receipt: AppReceipt
        do {
            receipt = try await dependencies.receiptReader.read(base64: receiptData)
        } catch {
            dependencies.metrics.verificationFailed(status: error.status)
            throw ServiceError.verification(code: error.status, message: error.description)
        }
        guard receipt.bundleId == configuration.bundleId else {
            throw ServiceError.verification(
                code: "INVALID_APP_IDENTIFIER",
                message: "the receipt is for \(receipt.bundleId ?? "no bundle"), not \(configuration.bundleId)")
        }
        // A Production server takes the sandbox receipts App Review and TestFlight make, unless told not to.
        let sandbox = ["ProductionSandbox", "Sandbox"]
        let expected =
            configuration.environment == .production
            ? ["Production"] + (configuration.sandboxInProduction ? sandbox : []) : sandbox
        guard let type = receipt.receiptType, expected.contains(type) else {
            throw ServiceError.verification(
                code: "INVALID_ENVIRONMENT",
                message:
                    "a \(receipt.receiptType ?? "untyped") receipt is not accepted in \(configuration.environment.rawValue)"
            )
        }
        // TestFlight and App Review receipts say Sandbox; a customer installed from the App Store takes none.
        guard sandbox.contains(type) ? Delivery.reaches(data: .sandbox, customer: user.appleAccount?.environment) : true
        else { throw ServiceError.sandboxDataForProductionCustomer }

        var outcomes: [ReceiptTransactionOutcome] = []
        var requests: [LedgerRequest] = []
        var pending: [Int] = []  // outcomes waiting for their ledger result, by index
        for purchase in receipt.inAppPurchases {
            guard let fact = TransactionFact(purchase, receiptType: receipt.receiptType) else { continue }
            outcomes.append(
                ReceiptTransactionOutcome(transactionId: fact.transactionId, productId: fact.productId, outcome: ""))
            let event: LedgerEvent
            do {
                // The catalog must sell the product, refunded record or not.
                _ = try dependencies.catalog.defaultCredits(for: fact)
                event = try Delivery.event(for: fact, catalog: dependencies.catalog)
            } catch {
                outcomes[outcomes.count - 1].outcome = "unknown-product"
                continue
            }
            requests.append(
                LedgerRequest(
                    owner: user.id, environment: user.environment, event: event,
                    policy: configuration.deficitPolicy, at: dependencies.now()))
            pending.append(outcomes.count - 1)
        }
        // A legacy receipt says neither what a period cost nor whether it came through Family Sharing: no allowance.
        let results = try await applyInEveryCurrency(requests, allowances: false)
        var balance = try await store.wallet(owner: user.id, environment: user.environment).balance
        for (index, (request, result)) in zip(pending, zip(requests, results)) {
            switch result {
            case .success(let applied):
                balance = applied.wallet.balance
                let outcome = Delivery.outcome(of: [request.event], ledger: applied.outcome)
                outcomes[index].outcome = outcome.rawValue
                if outcome == .delivered { dependencies.metrics.delivered(source: "receipt") }
            case .failure(.wrongUser):
                outcomes[index].outcome = "wrong-user"
            case .failure(let error):
                outcomes[index].outcome = "refused: \(error)"
            }
        }
        return ReceiptVerifyResponse(
            transactions: outcomes, balance: balance, entitlements: try await entitlements(of: user))
    }
}
