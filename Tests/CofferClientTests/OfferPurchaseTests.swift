import CofferAPI
import CofferAppStore
import CofferClient
import CofferCore
import CofferSimulator
import CofferStore
import CofferStoreKit
import Crypto
import Foundation
import Testing

/// `purchase(_:offer:)`: the SDK has the server sign the offer for the customer, StoreKit (the simulator, checking
/// the signatures with the In-App Purchase key as the App Store does) applies it, and the purchase is delivered as
/// any other.
@Suite("SDK offers", .timeLimit(.minutes(2)))
struct OfferPurchaseTests {
    static let monthly = "com.example.pro.monthly"
    static let products = [
        CatalogProduct(
            id: monthly, kind: .autoRenewable, entitlements: ["premium"], group: "pro", durationDays: 30)
    ]

    /// The offer on Apple's side: the transaction the simulator signed.
    static func signed(_ world: PurchaseFlowTests.World, _ id: String) async throws -> JWSTransactionDecodedPayload {
        let jws = try await world.apple.signedTransaction(id: id)
        let payload = try #require(jws.split(separator: ".").dropFirst().first)
        var text = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try decoder.decode(JWSTransactionDecodedPayload.self, from: try #require(Data(base64Encoded: text)))
    }

    @Test("a promotional offer is signed by the server, accepted by StoreKit and delivered; its transaction names it")
    func promotional() async throws {
        try await PurchaseFlowTests.withWorld(
            wallet: .device, serverOnSimulatedTime: true, products: Self.products, offerKey: P256.Signing.PrivateKey()
        ) { world in
            let app = try world.app(identity: .appleAccount)
            try await app.launch()
            let result = try await app.purchase(Self.monthly, offer: .promotional("winback.50"))
            guard case .delivered(let id, _) = result else {
                Issue.record("not delivered: \(result)")
                return
            }
            let payload = try await Self.signed(world, id)
            #expect(payload.rawOfferType == 2)
            #expect(payload.offerIdentifier == "winback.50")
            #expect(try await app.refreshEntitlements().names.contains("premium"))
            #expect(await world.apple.unfinishedTransactions(account: "alice").isEmpty)
        }
    }

    @Test("a signature StoreKit refuses buys nothing: another key, and the same nonce twice")
    func refusedSignatures() async throws {
        try await PurchaseFlowTests.withWorld(
            wallet: .device, serverOnSimulatedTime: true, products: Self.products, offerKey: P256.Signing.PrivateKey()
        ) { world in
            let app = try world.app(identity: .appleAccount)
            try await app.launch()
            let device = world.apple.device(account: "alice")
            let token = try #require(await app.credentials).appAccountToken
            // Signed by a key the App Store does not know for this app.
            let forger = OfferSignatureCreator(
                credentials: .init(
                    keyId: "OFFERKEY01", issuerId: "57246542-96fe-1a63-e053-0824d011072a",
                    bundleId: PurchaseFlowTests.bundleId, privateKey: P256.Signing.PrivateKey()),
                now: { world.clock.now() })
            let v1 = try forger.promotionalOfferV1(
                productId: Self.monthly, offerIdentifier: "free", appAccountToken: token)
            let forged = StorePurchaseOffer.promotional(
                offerId: "free",
                compactJWS: try forger.promotionalOffer(productId: Self.monthly, offerIdentifier: "free"),
                signature: StoreOfferSignature(
                    keyId: v1.keyId, nonce: v1.nonce, signature: try #require(Data(base64Encoded: v1.encodedSignature)),
                    timestamp: Int(v1.timestamp)))
            let forgery = await #expect(throws: SimulatorError.self) {
                _ = try await device.purchase(
                    productId: Self.monthly, quantity: 1, appAccountToken: token, offer: forged)
            }
            #expect(forgery?.description.contains("does not verify") == true)
            // The server's signature is good once; a copy replayed is refused.
            let signed = try await world.server.signOffer(
                productId: Self.monthly, offerId: "winback.50", token: try #require(await app.credentials).token)
            let genuine = StorePurchaseOffer.promotional(
                offerId: "winback.50", compactJWS: signed.promotionalOfferSignatureV2,
                signature: StoreOfferSignature(
                    keyId: signed.promotionalOfferSignatureV1.keyId,
                    nonce: try #require(UUID(uuidString: signed.promotionalOfferSignatureV1.nonce)),
                    signature: try #require(Data(base64Encoded: signed.promotionalOfferSignatureV1.encodedSignature)),
                    timestamp: Int(signed.promotionalOfferSignatureV1.timestamp)))
            _ = try await device.purchase(productId: Self.monthly, quantity: 1, appAccountToken: token, offer: genuine)
            let replay = await #expect(throws: SimulatorError.self) {
                _ = try await device.purchase(
                    productId: Self.monthly, quantity: 1, appAccountToken: token, offer: genuine)
            }
            #expect(replay?.description.contains("nonce was used before") == true)
            #expect(await world.apple.deviceTransactions(account: "alice").count == 1)
        }
    }

    @Test("the introductory offer: the server's signed word decides it, and says no after a first subscription")
    func introductory() async throws {
        let trial = StoreIntroductoryOffer(
            paymentMode: .freeTrial, price: 0, displayPrice: "Free", period: StorePeriod(value: 1, unit: .week),
            periodCount: 1)
        let key = P256.Signing.PrivateKey()
        let withTrial: (inout SimulatorConfiguration) -> Void = { $0.introductoryOffers[Self.monthly] = trial }
        try await PurchaseFlowTests.withWorld(
            wallet: .device, serverOnSimulatedTime: true, products: Self.products, simulator: withTrial, offerKey: key
        ) { world in
            // A customer of an Apple account whose earlier subscription never reached Coffer (bought and lapsed
            // elsewhere): the App Store's own rule would say no, Coffer's ledger says yes and signs it, tied to
            // their appTransactionId, and StoreKit takes the signed word.
            let app = try world.app(identity: .appleAccount)
            try await app.launch()
            let earlier = try #require(
                try await world.apple.purchase(account: "alice", productId: Self.monthly).transactionIds.first)
            await world.apple.finish(transactionId: earlier)
            try await world.apple.setAutoRenew(originalTransactionId: earlier, false)
            try await world.apple.advanceClock(by: 40 * 86_400)
            guard case .delivered(let first, _) = try await app.purchase(Self.monthly, offer: .introductory) else {
                Issue.record("the subscription was not delivered")
                return
            }
            #expect(try await Self.signed(world, first).rawOfferType == 1)
            let token = try #require(await app.credentials).token
            let after = try await world.server.introductoryOfferEligibility(productId: Self.monthly, token: token)
            #expect(!after.allowIntroductoryOffer && after.signature != nil)

            // An anonymous install's yes comes unsigned: the SDK buys with StoreKit's own eligibility.
            let other = try world.app(install: "dave", device: world.apple.device(account: "dave"))
            try await other.launch()
            guard case .delivered(let daves, _) = try await other.purchase(Self.monthly, offer: .introductory) else {
                Issue.record("the anonymous install's subscription was not delivered")
                return
            }
            #expect(try await Self.signed(world, daves).rawOfferType == 1)

            // The signed word decides, whatever the App Store would: a "no" for an account new to the group buys
            // the first period at full price.
            let bob = try await world.server.introductoryOfferEligibility(
                productId: Self.monthly,
                token: try await world.server.register(
                    signedAppTransaction: try await world.apple.signedAppTransaction(account: "bob")
                ).token)
            #expect(bob.allowIntroductoryOffer)
            let signer = OfferSignatureCreator(
                credentials: .init(
                    keyId: "OFFERKEY01", issuerId: "57246542-96fe-1a63-e053-0824d011072a",
                    bundleId: PurchaseFlowTests.bundleId, privateKey: key),
                now: { world.clock.now() })
            let no = try signer.introductoryOfferEligibility(
                productId: Self.monthly, allowIntroductoryOffer: false,
                transactionId: try #require(bob.transactionId))
            let report = try await world.apple.purchase(
                account: "bob", productId: Self.monthly, appAccountToken: nil,
                offer: .introductoryEligibility(compactJWS: no))
            #expect(try await Self.signed(world, try #require(report.transactionIds.first)).rawOfferType == nil)
            // Tied to another account's transaction, it is refused.
            let alices = try signer.introductoryOfferEligibility(
                productId: Self.monthly, allowIntroductoryOffer: true, transactionId: first)
            let refused = await #expect(throws: SimulatorError.self) {
                try await world.apple.purchase(
                    account: "carol", productId: Self.monthly, appAccountToken: nil,
                    offer: .introductoryEligibility(compactJWS: alices))
            }
            #expect(refused?.description.contains("not this account's") == true)
        }
    }

    @Test("a win-back offer goes to StoreKit as it is: only a lapsed subscriber may take it")
    func winBack() async throws {
        let withWinBack: (inout SimulatorConfiguration) -> Void = { $0.winBackOffers[Self.monthly] = ["comeback"] }
        try await PurchaseFlowTests.withWorld(wallet: .device, products: Self.products, simulator: withWinBack) {
            world in
            let app = try world.app()
            try await app.launch()
            await #expect(throws: SimulatorError.self) {
                _ = try await app.purchase(Self.monthly, offer: .winBack("comeback"))
            }
            _ = try await app.purchase(productId: Self.monthly)
            let original = try #require(await world.apple.deviceTransactions(account: "alice").first).originalId
            try await world.apple.setAutoRenew(originalTransactionId: original, false)
            try await world.apple.advanceClock(by: 31 * 86_400)
            guard case .delivered(let id, _) = try await app.purchase(Self.monthly, offer: .winBack("comeback")) else {
                Issue.record("the win-back purchase was not delivered")
                return
            }
            let payload = try await Self.signed(world, id)
            #expect(payload.rawOfferType == 4 && payload.offerIdentifier == "comeback")
        }
    }

    @Test("an offer the server will not sign buys nothing and says why")
    func refusedByServer() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, products: Self.products) { world in
            let app = try world.app()
            try await app.launch()
            // This server has no In-App Purchase key: 503, which the SDK reads as the server out of reach.
            await #expect(throws: ServerClientError.self) {
                _ = try await app.purchase(Self.monthly, offer: .promotional("winback.50"))
            }
            await #expect(throws: SDKError.unknownProduct("com.example.gems")) {
                _ = try await app.purchase("com.example.gems", offer: .promotional("winback.50"))
            }
            #expect(await world.apple.deviceTransactions(account: "alice").isEmpty)
        }
    }
}

/// Support's entitlements for a time reach the app: kept with their ends, unlocked until then, offline too.
@Suite("SDK granted entitlements", .timeLimit(.minutes(1)))
struct GrantedEntitlementTests {
    @Test("support grants adFree for 7 days: the app unlocks it at launch, keeps it offline, and closes it at the end")
    func grantedForATime() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .device, serverOnSimulatedTime: true) { world in
            let first = try world.app()
            try await first.launch()
            #expect(try await first.refreshEntitlements().names.isEmpty)
            let supportId = try #require(await first.credentials.flatMap { SupportID($0.supportId) })
            let user = try #require(try await world.serverStore.user(supportId: supportId, environment: .sandbox))
            let now = world.clock.now()
            try await world.serverStore.createEntitlementGrant(
                EntitlementGrant(
                    environment: .sandbox, recipient: user.id, entitlement: "adFree", startsAt: now,
                    endsAt: now.addingTimeInterval(7 * 86_400), reason: "Ticket #9", createdBy: "ada"),
                audit: [])
            // The open app hears of it on coming to the foreground (the event stream or a push tell it at once).
            _ = try await first.enteredForeground()
            #expect(try await first.refreshEntitlements().names == ["adFree"])
            // The next launch reads it from the server too.
            let second = try world.app()
            try await second.launch()
            #expect(try await second.refreshEntitlements().names == ["adFree"])
            // Offline, the kept grant still unlocks until its end, and not after.
            let offline = try world.app(offline: true)
            #expect(try await offline.refreshEntitlements().names == ["adFree"])
            try await world.apple.advanceClock(by: 7 * 86_400 + 1)
            #expect(try await offline.refreshEntitlements().names.isEmpty)
        }
    }
}
