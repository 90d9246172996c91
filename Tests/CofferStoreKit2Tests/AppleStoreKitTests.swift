// The StoreKit 2 adapter, run on Linux against StoreKitInterface (the mirror of the StoreKit declarations it
// uses) with a store standing in for the App Store. On Apple platforms these tests are not compiled: there the
// adapter imports StoreKit itself.
#if !canImport(StoreKit)
    import CofferStoreKit
    @testable import CofferStoreKit2
    import Foundation
    import StoreKitInterface
    import Synchronization
    import Testing

    /// The App Store and the device's StoreKit for one test: what it was asked, and what it answers.
    final class FakeStore: MirrorStore {
        struct State {
            var products: [Product] = []
            var purchaseAnswer: Product.PurchaseResult = .pending
            var purchaseOptions: [Set<Product.PurchaseOption>] = []
            /// The scene each purchase was confirmed in (`nil`: `purchase(options:)`, without one).
            var purchaseScenes: [UIScene?] = []
            var feeds: [MirrorFeed: [VerificationResult<Transaction>]] = [:]
            var finished: [UInt64] = []
            var synced = 0
            var appTransaction: VerificationResult<AppTransaction>?
            var eligibleGroups: Set<String> = []
            var refundAnswer: Transaction.RefundRequestStatus = .success
            var refundRequests: [UInt64] = []
            var manageShown = 0
            var offerCodeShown = 0
            var statuses: [String: [Product.SubscriptionInfo.Status]] = [:]
        }

        let state = Mutex(State())

        func products(for ids: [String]) async throws -> [Product] {
            state.withLock { state in state.products.filter { ids.contains($0.id) } }
        }

        func purchase(_ product: Product, options: Set<Product.PurchaseOption>) async throws -> Product.PurchaseResult {
            state.withLock { state in
                state.purchaseOptions.append(options)
                state.purchaseScenes.append(nil)
                return state.purchaseAnswer
            }
        }

        func purchase(_ product: Product, options: Set<Product.PurchaseOption>, confirmIn scene: UIScene)
            async throws -> Product.PurchaseResult
        {
            state.withLock { state in
                state.purchaseOptions.append(options)
                state.purchaseScenes.append(scene)
                return state.purchaseAnswer
            }
        }

        func transactions(_ feed: MirrorFeed) -> AsyncStream<VerificationResult<Transaction>> {
            let results = state.withLock { $0.feeds[feed] ?? [] }
            return AsyncStream { continuation in
                for result in results { continuation.yield(result) }
                continuation.finish()
            }
        }

        func finish(_ transaction: Transaction) async { state.withLock { $0.finished.append(transaction.id) } }

        func sync() async throws { state.withLock { $0.synced += 1 } }

        func appTransaction(refresh: Bool) async throws -> VerificationResult<AppTransaction> {
            guard let answer = state.withLock({ $0.appTransaction }) else { throw MirrorStoreKitError.noStore }
            return answer
        }

        func isEligibleForIntroOffer(groupID: String) async -> Bool {
            state.withLock { $0.eligibleGroups.contains(groupID) }
        }

        func refundRequest(for transactionID: UInt64) async throws -> Transaction.RefundRequestStatus {
            state.withLock { state in
                state.refundRequests.append(transactionID)
                return state.refundAnswer
            }
        }

        func statuses(groupID: String) async throws -> [Product.SubscriptionInfo.Status] {
            guard let statuses = state.withLock({ $0.statuses[groupID] }) else { throw MirrorStoreKitError.noStore }
            return statuses
        }

        func showManageSubscriptions() async throws { state.withLock { $0.manageShown += 1 } }

        func presentOfferCodeRedeemSheet() async throws { state.withLock { $0.offerCodeShown += 1 } }
    }

    @Suite("The StoreKit 2 adapter, against the StoreKit mirror")
    struct AppleStoreKitTests {
        static let date = Date(timeIntervalSince1970: 1_780_000_000)
        static let token = UUID(uuidString: "8A1E9B2C-0000-4000-8000-000000000001")!

        static let credits = Product(
            id: "com.example.credits", type: .consumable, displayName: "400 Credits", description: "A pile",
            price: Decimal(string: "4.99")!, displayPrice: "€4,99", currencyCode: "EUR")
        static let monthly = Product(
            id: "com.example.pro.monthly", type: .autoRenewable, displayName: "Pro", description: "Everything",
            price: Decimal(string: "9.99")!, displayPrice: "€9,99", currencyCode: "EUR",
            subscription: .init(
                subscriptionGroupID: "21482456", subscriptionPeriod: .init(value: 1, unit: .month),
                introductoryOffer: .init(
                    price: 0, displayPrice: "€0,00", period: .init(value: 1, unit: .week), periodCount: 1,
                    paymentMode: .freeTrial)))

        static func transaction(
            _ id: UInt64, _ productID: String = "com.example.credits", type: Product.ProductType = .consumable,
            ownership: Transaction.OwnershipType = .purchased, revoked: Date? = nil
        ) -> Transaction {
            Transaction(
                id: id, originalID: id - 1, productID: productID, productType: type, purchaseDate: date,
                purchasedQuantity: 3, expirationDate: type == .autoRenewable ? date.addingTimeInterval(86_400) : nil,
                revocationDate: revoked, ownershipType: ownership, isUpgraded: false, appAccountToken: token,
                subscriptionGroupID: type == .autoRenewable ? "21482456" : nil, signed: "jws-\(id)")
        }

        func withStore<T>(_ store: FakeStore, _ body: () async throws -> T) async rethrows -> T {
            try await MirrorStoreKit.$store.withValue(store) { try await body() }
        }

        @Test("a verified transaction maps field by field, with its signed form; an unverified one carries why")
        func transactionMapping() throws {
            let mapped = AppleStoreKit.transaction(.verified(Self.transaction(42)))
            #expect(
                mapped
                    == StoreTransaction(
                        id: "42", originalId: "41", productId: "com.example.credits", productType: .consumable,
                        purchaseDate: Self.date, quantity: 3, appAccountToken: Self.token, jwsRepresentation: "jws-42"))
            let shared = AppleStoreKit.transaction(
                .verified(
                    Self.transaction(7, "com.example.pro.monthly", type: .autoRenewable, ownership: .familyShared)))
            #expect(shared.isFamilyShared && shared.productType == .autoRenewable)
            #expect(shared.subscriptionGroupId == "21482456" && mapped.subscriptionGroupId == nil)
            #expect(shared.expirationDate == Self.date.addingTimeInterval(86_400))
            #expect(mapped.isVerified && mapped.verificationFailure == nil)
            let unverified = AppleStoreKit.transaction(.unverified(Self.transaction(9), .invalidSignature))
            #expect(unverified.verificationFailure == "invalidSignature" && !unverified.isVerified)
            #expect(unverified.id == "9" && unverified.jwsRepresentation == "jws-9")
            #expect(AppleStoreKit.productType(.nonRenewable) == .nonRenewing)
            #expect(AppleStoreKit.productType(.nonConsumable) == .nonConsumable)
        }

        @Test("StoreKit's revocationPercentage is the share refunded in milliunits; 100 states a full refund")
        func proratedShare() {
            func refunded(_ percentage: Decimal?) -> Int? {
                let base = Self.transaction(11, revoked: Self.date)
                return AppleStoreKit.transaction(
                    .verified(
                        Transaction(
                            id: base.id, originalID: base.originalID, productID: base.productID,
                            productType: base.productType, purchaseDate: base.purchaseDate,
                            revocationDate: base.revocationDate, signed: base.signed,
                            revocationPercentage: percentage))
                ).revocationPercentage
            }
            #expect(refunded(Decimal(string: "33.333")) == 33_333)
            #expect(refunded(25) == 25_000)
            #expect(refunded(100) == 100_000, "a full refund, stated")
            #expect(refunded(nil) == nil && refunded(0) == nil)
        }

        @Test("a purchase asks StoreKit with the quantity and the account token; each of its endings maps")
        func purchase() async throws {
            let store = FakeStore()
            store.state.withLock {
                $0.products = [Self.credits]
                $0.purchaseAnswer = .success(.verified(Self.transaction(100)))
            }
            try await withStore(store) {
                let bought = try await AppleStoreKit().purchase(
                    productId: "com.example.credits", quantity: 3, appAccountToken: Self.token)
                #expect(bought == .success(AppleStoreKit.transaction(.verified(Self.transaction(100)))))
                #expect(store.state.withLock(\.purchaseOptions) == [[.quantity(3), .appAccountToken(Self.token)]])
                // Confirmed in a window scene (iOS 17 and visionOS: `purchase(confirmIn:options:)`), the one the
                // app names when it names one (an app extension's).
                #expect(store.state.withLock { $0.purchaseScenes.count == 1 && $0.purchaseScenes[0] != nil })
                let named = UIWindowScene()
                _ = try await AppleStoreKit(scene: { named }).purchase(
                    productId: "com.example.credits", quantity: 1, appAccountToken: nil)
                #expect(store.state.withLock { $0.purchaseScenes.last.flatMap { $0 } === named })
                store.state.withLock { $0.purchaseAnswer = .userCancelled }
                #expect(
                    try await AppleStoreKit().purchase(
                        productId: "com.example.credits", quantity: 1, appAccountToken: nil) == .userCancelled)
                #expect(store.state.withLock(\.purchaseOptions).last == [.quantity(1)])
                store.state.withLock { $0.purchaseAnswer = .pending }
                #expect(
                    try await AppleStoreKit().purchase(
                        productId: "com.example.credits", quantity: 1, appAccountToken: nil) == .pending)
                store.state.withLock {
                    $0.purchaseAnswer = .success(.unverified(Self.transaction(101), .invalidCertificateChain))
                }
                // A purchase StoreKit could not verify reaches the SDK marked, for the server to judge.
                let unverified = try await AppleStoreKit().purchase(
                    productId: "com.example.credits", quantity: 1, appAccountToken: nil)
                guard case .success(let transaction) = unverified else {
                    Issue.record("an unverified purchase should reach the SDK: \(unverified)")
                    return
                }
                #expect(transaction.id == "101" && transaction.verificationFailure == "invalidCertificateChain")
                await #expect(throws: AppleStoreKitError.unknownProduct("com.example.nothing")) {
                    try await AppleStoreKit().purchase(
                        productId: "com.example.nothing", quantity: 1, appAccountToken: nil)
                }
            }
        }

        @Test(
            "entitlements and history pass on only what StoreKit verified; unfinished and updates pass the unverified marked; finish finds either by id"
        )
        func lists() async throws {
            let store = FakeStore()
            store.state.withLock {
                $0.feeds[.all] = [
                    .verified(Self.transaction(1)), .unverified(Self.transaction(2), .invalidSignature),
                    .verified(Self.transaction(3)),
                ]
                $0.feeds[.unfinished] = [
                    .verified(Self.transaction(3)), .verified(Self.transaction(5)),
                    .unverified(Self.transaction(6), .revokedCertificate),
                ]
                $0.feeds[.currentEntitlements] = [
                    .verified(Self.transaction(8, "com.example.pro.monthly", type: .autoRenewable))
                ]
                $0.feeds[.updates] = [
                    .unverified(Self.transaction(6), .revokedCertificate), .verified(Self.transaction(7)),
                ]
            }
            try await withStore(store) {
                let kit = AppleStoreKit()
                #expect(await kit.all().map(\.id) == ["1", "3"])
                #expect(await kit.unfinished().map(\.id) == ["3", "5", "6"])
                #expect(await kit.unfinished().map(\.verificationFailure) == [nil, nil, "revokedCertificate"])
                #expect(await kit.currentEntitlements().map(\.productId) == ["com.example.pro.monthly"])
                var updates: [String] = []
                for await transaction in await kit.updates() { updates.append(transaction.id) }
                #expect(updates == ["6", "7"])
                await kit.finish(transactionId: "5")
                await kit.finish(transactionId: "1")  // finished already: not among the unfinished
                await kit.finish(transactionId: "6")  // unverified: finished once the server refused it
                #expect(store.state.withLock(\.finished) == [5, 6])
                try await kit.sync()
                #expect(store.state.withLock(\.synced) == 1)
            }
        }

        @Test("products carry their localized price, currency, period, introductory offer and eligibility")
        func products() async throws {
            let store = FakeStore()
            store.state.withLock {
                $0.products = [Self.credits, Self.monthly]
                $0.eligibleGroups = ["21482456"]
            }
            try await withStore(store) {
                let products = try await AppleStoreKit().products(ids: [
                    "com.example.pro.monthly", "com.example.credits", "gone",
                ])
                let pro = try #require(products.first { $0.id == "com.example.pro.monthly" })
                #expect(pro.displayName == "Pro" && pro.displayPrice == "€9,99" && pro.currencyCode == "EUR")
                #expect(pro.price == Decimal(string: "9.99")!)
                #expect(
                    pro.subscription
                        == StoreSubscriptionInfo(
                            groupId: "21482456", period: StorePeriod(value: 1, unit: .month),
                            introductoryOffer: StoreIntroductoryOffer(
                                paymentMode: .freeTrial, price: 0, displayPrice: "€0,00",
                                period: StorePeriod(value: 1, unit: .week), periodCount: 1),
                            isEligibleForIntroOffer: true))
                let credits = try #require(products.first { $0.id == "com.example.credits" })
                #expect(credits.type == .consumable && credits.subscription == nil)
                #expect(products.count == 2)
                store.state.withLock { $0.eligibleGroups = [] }
                let again = try await AppleStoreKit().products(ids: ["com.example.pro.monthly"])
                #expect(again.first?.subscription?.isEligibleForIntroOffer == false)
            }
        }

        @Test("refund requests, subscription management and offer codes reach StoreKit's sheets")
        func sheets() async throws {
            let store = FakeStore()
            try await withStore(store) {
                let kit = AppleStoreKit()
                #expect(try await kit.beginRefundRequest(transactionId: "2000000042") == .success)
                store.state.withLock { $0.refundAnswer = .userCancelled }
                #expect(try await kit.beginRefundRequest(transactionId: "2000000043") == .userCancelled)
                #expect(store.state.withLock(\.refundRequests) == [2_000_000_042, 2_000_000_043])
                await #expect(throws: AppleStoreKitError.unknownTransaction("not-a-number")) {
                    try await kit.beginRefundRequest(transactionId: "not-a-number")
                }
                try await kit.showManageSubscriptions()
                try await kit.presentOfferCodeRedeemSheet()
                #expect(store.state.withLock { ($0.manageShown, $0.offerCodeShown) } == (1, 1))
            }
        }

        @Test("a free trial is marked from the transaction's offer; grace periods come from verified renewal info")
        func trialsAndGrace() async throws {
            let trial = Transaction(
                id: 50, originalID: 50, productID: "com.example.pro.monthly", productType: .autoRenewable,
                purchaseDate: Self.date, expirationDate: Self.date.addingTimeInterval(7 * 86_400),
                offer: .init(type: .introductory, paymentMode: .freeTrial), signed: "jws-50")
            #expect(try AppleStoreKit.transaction(.verified(trial)).isTrial)
            let discounted = Transaction(
                id: 51, originalID: 50, productID: "com.example.pro.monthly", productType: .autoRenewable,
                purchaseDate: Self.date, offer: .init(type: .introductory, paymentMode: .payAsYouGo), signed: "jws-51")
            #expect(try AppleStoreKit.transaction(.verified(discounted)).isTrial == false)
            #expect(try AppleStoreKit.transaction(.verified(Self.transaction(52))).isTrial == false)

            let store = FakeStore()
            let end = Self.date.addingTimeInterval(16 * 86_400)
            store.state.withLock {
                $0.statuses["21482456"] = [
                    .init(renewalInfo: .verified(.init(originalTransactionID: 50, gracePeriodExpirationDate: end))),
                    .init(renewalInfo: .verified(.init(originalTransactionID: 60, gracePeriodExpirationDate: nil))),
                    .init(
                        renewalInfo: .unverified(
                            .init(originalTransactionID: 70, gracePeriodExpirationDate: end), .invalidSignature)),
                ]
            }
            await withStore(store) {
                // Group "gone" throws: it is left out, not fatal.
                #expect(await AppleStoreKit().gracePeriods(groups: ["21482456", "21000000"]) == ["50": end])
            }
        }

        @Test("the app transaction is passed on only when StoreKit verified it")
        func appTransaction() async {
            let store = FakeStore()
            await withStore(store) {
                #expect(await AppleStoreKit().appTransaction(refresh: false) == nil)
                store.state.withLock {
                    $0.appTransaction = .verified(AppTransaction(appTransactionID: "7", signed: "app-jws"))
                }
                #expect(await AppleStoreKit().appTransaction(refresh: true) == "app-jws")
                store.state.withLock {
                    $0.appTransaction = .unverified(
                        AppTransaction(appTransactionID: "7", signed: "x"), .invalidSignature)
                }
                #expect(await AppleStoreKit().appTransaction(refresh: false) == nil)
            }
        }

        @Test("without a store, the mirror's StoreKit has nothing and says so")
        func noStore() async throws {
            #expect(await AppleStoreKit().all().isEmpty)
            await #expect(throws: MirrorStoreKitError.noStore) { try await AppleStoreKit().products(ids: ["x"]) }
        }
    }
#endif
