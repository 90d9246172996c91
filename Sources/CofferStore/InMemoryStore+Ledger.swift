// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

extension InMemoryStore {
    public func apply(_ requests: [LedgerRequest]) -> [Result<LedgerResult, LedgerError>] {
        let results = requests.map { request in
            // The in-memory context never throws; a refusal comes back as the request's failure.
            (try? LedgerWriter.apply(request, in: &state)) ?? .failure(.unknownUser(request.owner))
        }
        updateLots(requests, results)
        return EntitlementSources.answer(results, for: requests) { asked in
            EntitlementSources(
                receipts: receipts(owner: asked.owner, environment: asked.environment, productIds: asked.products),
                renewals: asked.renewals ? renewalStates(owner: asked.owner, environment: asked.environment) : [],
                grants: entitlementGrants(environment: asked.environment, recipient: asked.owner))
        }
    }

    public func wallet(owner: UUID, environment: AppStoreEnvironment) -> Wallet {
        state.wallet(owner: owner, environment: environment) ?? .empty
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment) -> [LedgerEntry] {
        entries(owner: owner, environment: environment, currency: nil)
    }

    public func currencyWallets(owner: UUID, environment: AppStoreEnvironment) -> [Currency: Wallet] {
        guard state.users[owner]?.environment == environment else { return [:] }
        return Dictionary(
            uniqueKeysWithValues: state.currencyWallets.filter { $0.key.of == owner }.map {
                ($0.key.currency, $0.value)
            }
        )
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment, currency: Currency?) -> [LedgerEntry] {
        guard state.users[owner]?.environment == environment else { return [] }
        return state.entries.filter { $0.owner == owner && $0.currency == currency }
    }

    public func receiptCurrencies(transactionId: String, environment: AppStoreEnvironment) -> [Currency] {
        state.currencyReceipts.keys.filter {
            $0.of.transactionId == transactionId && $0.of.environment == environment
        }.map(\.currency).sorted()
    }

    public func receipt(transactionId: String, environment: AppStoreEnvironment, currency: Currency?) -> Receipt? {
        state.receipt(transactionId: transactionId, environment: environment, currency: currency)
    }

    public func entries(owner: UUID, environment: AppStoreEnvironment, kinds: Set<LedgerEntryKind>) -> [LedgerEntry] {
        entries(owner: owner, environment: environment).filter { kinds.contains($0.key.kind) }
    }

    public func receipt(transactionId: String, environment: AppStoreEnvironment) -> Receipt? {
        state.receipt(transactionId: transactionId, environment: environment)
    }

    public func receipts(owner: UUID, environment: AppStoreEnvironment) -> [Receipt] {
        state.receiptOrder.filter { $0.environment == environment }
            .compactMap { state.receipts[$0] }
            .filter { $0.owner == owner }
            .sorted {
                ($0.transaction.purchaseDate, $0.transaction.transactionId) < (
                    $1.transaction.purchaseDate, $1.transaction.transactionId
                )
            }
    }

    public func receipts(owner: UUID, environment: AppStoreEnvironment, productIds: Set<String>) -> [Receipt] {
        receipts(owner: owner, environment: environment).filter { productIds.contains($0.transaction.productId) }
    }

    public func receipts(originalTransactionId: String, environment: AppStoreEnvironment) -> [Receipt] {
        state.receipts.values
            .filter { $0.transaction.originalTransactionId == originalTransactionId }
            .filter { state.users[$0.owner]?.environment == environment }
            .sorted {
                ($0.transaction.purchaseDate, $0.transaction.transactionId) < (
                    $1.transaction.purchaseDate, $1.transaction.transactionId
                )
            }
    }
}
