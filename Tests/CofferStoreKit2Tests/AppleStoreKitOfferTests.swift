// The StoreKit 2 adapter's offers, run on Linux against StoreKitInterface (see AppleStoreKitTests).
#if !canImport(StoreKit)
    import CofferStoreKit
    @testable import CofferStoreKit2
    import Foundation
    import StoreKitInterface
    import Testing

    @Suite("The StoreKit 2 adapter applies offers with StoreKit's purchase options")
    struct AppleStoreKitOfferTests {
        static let winBack = Product.SubscriptionOffer(
            id: "comeback", price: Decimal(string: "4.99")!, displayPrice: "€4,99",
            period: .init(value: 1, unit: .month),
            periodCount: 3, paymentMode: .payAsYouGo)
        static let monthly = Product(
            id: "com.example.pro.monthly", type: .autoRenewable, displayName: "Pro", description: "Everything",
            price: Decimal(string: "9.99")!, displayPrice: "€9,99", currencyCode: "EUR",
            subscription: .init(
                subscriptionGroupID: "21482456", subscriptionPeriod: .init(value: 1, unit: .month),
                winBackOffers: [winBack]))
        static let signature = StoreOfferSignature(
            keyId: "OFFERKEY01", nonce: UUID(uuidString: "5E1F0C3A-0000-4000-8000-00000000000A")!,
            signature: Data([1, 2, 3]), timestamp: 1_780_000_000_000)

        func purchased(_ offer: StorePurchaseOffer) async throws -> Set<Product.PurchaseOption> {
            let store = FakeStore()
            store.state.withLock {
                $0.products = [Self.monthly]
                $0.purchaseAnswer = .success(
                    .verified(AppleStoreKitTests.transaction(7, "com.example.pro.monthly", type: .autoRenewable)))
            }
            try await MirrorStoreKit.$store.withValue(store) {
                _ = try await AppleStoreKit().purchase(
                    productId: "com.example.pro.monthly", quantity: 1, appAccountToken: AppleStoreKitTests.token,
                    offer: offer)
            }
            return try #require(store.state.withLock(\.purchaseOptions).last)
        }

        @Test("a promotional offer passes its JWS (Xcode 26's SDK), beside the quantity and the account token")
        func promotional() async throws {
            let options = try await purchased(
                .promotional(offerId: "winback.50", compactJWS: "h.p.s", signature: Self.signature))
            let base: Set<Product.PurchaseOption> = [.quantity(1), .appAccountToken(AppleStoreKitTests.token)]
            #if compiler(>=6.2)
                #expect(
                    options == base.union(Product.PurchaseOption.promotionalOffer("winback.50", compactJWS: "h.p.s")))
            #else
                #expect(
                    options
                        == base.union([
                            .promotionalOffer(
                                offerID: "winback.50", keyID: "OFFERKEY01", nonce: Self.signature.nonce,
                                signature: Data([1, 2, 3]), timestamp: 1_780_000_000_000)
                        ]))
            #endif
        }

        @Test("the server's word on the introductory offer, and a win-back offer found among the product's")
        func eligibilityAndWinBack() async throws {
            let eligibility = try await purchased(.introductoryEligibility(compactJWS: "e.l.i"))
            #expect(eligibility.contains(.introductoryOfferEligibility(compactJWS: "e.l.i")))
            let winBack = try await purchased(.winBack(offerId: "comeback"))
            #expect(winBack.contains(.winBackOffer(Self.winBack)))
            await #expect(throws: StorePurchaseOfferError.unknownOffer("gone")) {
                _ = try await purchased(.winBack(offerId: "gone"))
            }
        }
    }
#endif
