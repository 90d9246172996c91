// The StoreKit 2 adapter against Apple's real StoreKit, driven by StoreKitTest with the example app's `.storekit`
// file: compiled and run only where StoreKitTest exists (macOS; `.github/workflows/apple.yml`), never on Linux,
// where AppleStoreKitTests runs the same adapter against the mirror.
#if canImport(StoreKitTest)
    import CofferStoreKit
    import CofferStoreKit2
    import Foundation
    import StoreKitTest
    import Testing

    @Suite("AppleStoreKit against StoreKitTest", .serialized)
    struct StoreKitTestSessionTests {
        /// A session over the example app's products, with no dialogs and no transactions left from another test.
        static func session() throws -> SKTestSession {
            let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Examples/CreditsApp/CreditsApp.storekit")
            let session = try SKTestSession(contentsOf: file)
            session.resetToDefaultState()
            session.disableDialogs = true
            session.clearTransactions()
            return session
        }

        @Test("products come with their App Store Connect group id; a purchase is verified and finished once")
        func purchase() async throws {
            let session = try Self.session()
            defer { session.clearTransactions() }
            let store = AppleStoreKit()
            let products = try await store.products(ids: ["com.example.credits.400k", "com.example.pro.monthly"])
            #expect(Set(products.map(\.id)) == ["com.example.credits.400k", "com.example.pro.monthly"])
            #expect(products.first { $0.id == "com.example.pro.monthly" }?.subscription?.groupId == "21482456")
            let token = UUID()
            guard
                case .success(let bought) = try await store.purchase(
                    productId: "com.example.credits.400k", quantity: 2, appAccountToken: token)
            else {
                Issue.record("the purchase did not succeed")
                return
            }
            #expect(bought.quantity == 2 && bought.appAccountToken == token && !bought.jwsRepresentation.isEmpty)
            #expect(await store.unfinished().map(\.id).contains(bought.id))
            await store.finish(transactionId: bought.id)
            #expect(await !store.unfinished().map(\.id).contains(bought.id))
            guard
                case .success(let subscribed) = try await store.purchase(
                    productId: "com.example.pro.monthly", quantity: 1, appAccountToken: token)
            else {
                Issue.record("the subscription did not succeed")
                return
            }
            #expect(subscribed.subscriptionGroupId == "21482456")
            #expect(await store.currentEntitlements().map(\.productId).contains("com.example.pro.monthly"))
        }
    }
#endif
