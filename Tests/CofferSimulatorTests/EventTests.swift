import CofferAppStore
import CofferSimulator
import Foundation
import Testing

/// The App Store's own events, each caused by a control: price increases, a product off sale, a parent's rescinded
/// consent, offer codes and a downgrade undone, each sending the notification Apple sends.
@Suite("App Store simulator events", .timeLimit(.minutes(1)))
struct EventTests {
    static let monthly = "com.example.pro.monthly"

    func subscribe(_ fixture: SimulatorFixture, _ account: String, _ product: String = monthly) async throws -> String {
        try #require(try await fixture.store.purchase(account: account, productId: product).transactionIds.first)
    }

    @Test("a price increase: pending until accepted, expired if never; one only told of renews at the new price")
    func priceIncreases() async throws {
        let fixture = try SimulatorFixture()
        let store = fixture.store
        let (alice, bob, carol) = (
            try await subscribe(fixture, "alice"), try await subscribe(fixture, "bob"),
            try await subscribe(fixture, "carol")
        )
        for original in [alice, bob] {
            try await store.announcePriceIncrease(originalTransactionId: original, price: 12_990, consentRequired: true)
        }
        try await store.acceptPriceIncrease(originalTransactionId: bob)
        try await store.announcePriceIncrease(originalTransactionId: carol, price: 11_990, consentRequired: false)
        await #expect(throws: SimulatorError.self) { try await store.acceptPriceIncrease(originalTransactionId: carol) }
        let pending = try #require(try await fixture.notifications().first { $0.payload.rawSubtype == "PENDING" })
        #expect(pending.renewalInfo?.priceIncreaseStatus == .customerHasNotResponded)
        #expect(pending.renewalInfo?.renewalPrice == 12_990)
        try await store.advanceClock(by: 31 * 86_400)

        let notifications = try await fixture.notifications()
        let about = { (original: String) in
            notifications.filter { $0.transaction?.originalTransactionId == original }.map { notification in
                [notification.payload.rawNotificationType, notification.payload.rawSubtype].compactMap(\.self)
                    .joined(separator: "/")
            }
        }
        #expect(about(alice) == ["SUBSCRIBED/INITIAL_BUY", "PRICE_INCREASE/PENDING", "EXPIRED/PRICE_INCREASE"])
        #expect(
            about(bob) == [
                "SUBSCRIBED/INITIAL_BUY", "PRICE_INCREASE/PENDING", "PRICE_INCREASE/ACCEPTED", "DID_RENEW",
            ])
        #expect(about(carol) == ["SUBSCRIBED/INITIAL_BUY", "PRICE_INCREASE/ACCEPTED", "DID_RENEW"])
        let expired = try #require(notifications.first { $0.payload.rawSubtype == "PRICE_INCREASE" })
        #expect(expired.renewalInfo?.expirationIntent == .customerDidNotConsentToPriceIncrease)
        let renewals = notifications.filter { $0.payload.rawNotificationType == "DID_RENEW" }
        #expect(renewals.compactMap(\.transaction?.price) == [12_990, 11_990])
    }

    @Test("a product off sale: its subscribers expire at renewal with PRODUCT_NOT_FOR_SALE")
    func offSale() async throws {
        let fixture = try SimulatorFixture()
        _ = try await subscribe(fixture, "dave")
        try await fixture.store.removeFromSale(productId: Self.monthly)
        await #expect(throws: SimulatorError.self) {
            try await fixture.store.removeFromSale(productId: "com.example.credits")
        }
        try await fixture.store.advanceClock(by: 31 * 86_400)
        let last = try #require(try await fixture.notifications().last)
        #expect(last.payload.rawNotificationType == "EXPIRED" && last.payload.rawSubtype == "PRODUCT_NOT_FOR_SALE")
        #expect(last.renewalInfo?.expirationIntent == .productNotAvailable)
    }

    @Test("a parent rescinds consent: RESCIND_CONSENT carries the account's app transaction")
    func rescindedConsent() async throws {
        let fixture = try SimulatorFixture()
        try await fixture.store.rescindConsent(account: "erin")
        let notification = try #require(try await fixture.notifications().last)
        #expect(notification.payload.rawNotificationType == "RESCIND_CONSENT")
        #expect(notification.payload.data == nil)
        let expected = try await fixture.verifier.verifyAppTransaction(
            try await fixture.store.signedAppTransaction(account: "erin"))
        #expect(notification.appTransaction?.appTransactionId == expected.appTransactionId)
    }

    @Test("offer codes send OFFER_REDEEMED with Apple's subtypes; choosing the current product undoes a downgrade")
    func offersAndReverts() async throws {
        let fixture = try SimulatorFixture {
            $0.offerCodes = ["MONTH": Self.monthly, "YEAR": "com.example.pro.yearly", "AGAIN": Self.monthly]
        }
        let store = fixture.store
        try await store.redeemOfferCode("MONTH", account: "fiona")
        try await store.redeemOfferCode("YEAR", account: "fiona")  // yearly ranks higher: an upgrade
        try await store.redeemOfferCode("AGAIN", account: "fiona")  // back to monthly at the next renewal
        // Gus upgrades, chooses monthly again (from the next renewal), then stays on yearly after all.
        for product in [Self.monthly, "com.example.pro.yearly", Self.monthly, "com.example.pro.yearly"] {
            try await store.purchase(account: "gus", productId: product)
        }

        let notifications = try await fixture.notifications()
        let types = notifications.map { notification in
            [notification.payload.rawNotificationType, notification.payload.rawSubtype].compactMap(\.self)
                .joined(separator: "/")
        }
        #expect(
            types == [
                "OFFER_REDEEMED/INITIAL_BUY", "OFFER_REDEEMED/UPGRADE", "OFFER_REDEEMED/DOWNGRADE",
                "SUBSCRIBED/INITIAL_BUY", "DID_CHANGE_RENEWAL_PREF/UPGRADE", "DID_CHANGE_RENEWAL_PREF/DOWNGRADE",
                "DID_CHANGE_RENEWAL_PREF",
            ])
        let first = try #require(notifications.first?.transaction)
        #expect(first.offerType == .subscriptionOfferCode && first.offerIdentifier == "MONTH")
        #expect(notifications.last?.renewalInfo?.autoRenewProductId == "com.example.pro.yearly")
    }
}
