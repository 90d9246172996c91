// StoreKit 2 exists on Apple platforms only; elsewhere this module is empty and apps use the simulator's
// StoreKit (`SimulatedDevice`, `SimulatorStoreKit`).
#if canImport(StoreKit)
    import CofferStoreKit
    import Foundation
    import StoreKit

    /// StoreKit 2 behind ``StoreKitProvider``: what an iOS, macOS or visionOS app gives `CofferSDK`.
    ///
    /// Only transactions StoreKit verified on the device are passed on; the server verifies their signed
    /// form again, and the device wallet delivers nothing StoreKit could not verify.
    @available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
    public struct AppleStoreKit: StoreKitProvider {
        /// StoreKit as the app sees it.
        public init() {}

        /// Buys through `Product.purchase(options:)` with the quantity and the Coffer user's account token.
        public func purchase(productId: String, quantity: Int, appAccountToken: UUID?) async throws
            -> StorePurchaseResult
        {
            guard let product = try await Product.products(for: [productId]).first else {
                throw AppleStoreKitError.unknownProduct(productId)
            }
            var options: Set<Product.PurchaseOption> = [.quantity(quantity)]
            if let appAccountToken { options.insert(.appAccountToken(appAccountToken)) }
            switch try await product.purchase(options: options) {
            case .success(let result):
                return .success(try Self.transaction(result))
            case .userCancelled:
                return .userCancelled
            case .pending:
                return .pending
            @unknown default:
                return .pending
            }
        }

        /// `Transaction.updates` (it starts with the unfinished transactions, once per launch).
        public func updates() async -> AsyncStream<StoreTransaction> {
            let (stream, continuation) = AsyncStream<StoreTransaction>.makeStream()
            let task = Task {
                for await result in Transaction.updates {
                    if let transaction = try? Self.transaction(result) { continuation.yield(transaction) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
            return stream
        }

        /// `Transaction.unfinished`.
        public func unfinished() async -> [StoreTransaction] { await Self.collect(Transaction.unfinished) }

        /// `Transaction.all`.
        public func all() async -> [StoreTransaction] { await Self.collect(Transaction.all) }

        /// `Transaction.currentEntitlements`.
        public func currentEntitlements() async -> [StoreTransaction] {
            await Self.collect(Transaction.currentEntitlements)
        }

        /// Finishes the unfinished transaction with this id (`Transaction.finish()`).
        public func finish(transactionId: String) async {
            for await result in Transaction.unfinished {
                guard case .verified(let transaction) = result, String(transaction.id) == transactionId else {
                    continue
                }
                await transaction.finish()
                return
            }
        }

        /// `AppStore.sync()`: asks the customer to sign in; for a Restore Purchases button only.
        public func sync() async throws { try await AppStore.sync() }

        /// `AppTransaction.shared`, or `AppTransaction.refresh()`; only what StoreKit verified.
        public func appTransaction(refresh: Bool) async -> String? {
            do {
                let result = refresh ? try await AppTransaction.refresh() : try await AppTransaction.shared
                guard case .verified = result else { return nil }
                return result.jwsRepresentation
            } catch {
                return nil
            }
        }

        private static func collect(_ results: Transaction.Transactions) async -> [StoreTransaction] {
            var transactions: [StoreTransaction] = []
            for await result in results {
                if let transaction = try? transaction(result) { transactions.append(transaction) }
            }
            return transactions
        }

        /// A verified StoreKit transaction as the SDK reads it, with its signed form.
        static func transaction(_ result: VerificationResult<Transaction>) throws -> StoreTransaction {
            let transaction: Transaction
            switch result {
            case .verified(let verified):
                transaction = verified
            case .unverified(_, let error):
                throw AppleStoreKitError.unverified(String(describing: error))
            }
            let kind: StoreTransaction.ProductType =
                switch transaction.productType {
                case .consumable: .consumable
                case .nonConsumable: .nonConsumable
                case .autoRenewable: .autoRenewable
                default: .nonRenewing
                }
            return StoreTransaction(
                id: String(transaction.id), originalId: String(transaction.originalID),
                productId: transaction.productID, productType: kind, purchaseDate: transaction.purchaseDate,
                quantity: transaction.purchasedQuantity, expirationDate: transaction.expirationDate,
                revocationDate: transaction.revocationDate, isFamilyShared: transaction.ownershipType == .familyShared,
                isUpgraded: transaction.isUpgraded, appAccountToken: transaction.appAccountToken,
                jwsRepresentation: result.jwsRepresentation)
        }
    }

    /// What ``AppleStoreKit`` refuses.
    public enum AppleStoreKitError: Error, Equatable, Sendable {
        /// The App Store does not sell a product with this id to this app.
        case unknownProduct(String)
        /// StoreKit could not verify the transaction's signature on the device.
        case unverified(String)
    }
#endif
