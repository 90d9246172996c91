import CofferAppStore
import CofferCore
import CofferSimulator
import CofferStoreKit
import CofferTestSupport
import Foundation
import Testing

@testable import CofferClient

/// The device and the server decide entitlements with the same core function and the same inputs: over random
/// histories (subscriptions with free trials, upgrades, billing failures in and out of grace, auto-renew
/// switched off, refunds and their reversals, non-consumables, passes), what the device reads from StoreKit
/// (transactions, renewal info's grace periods) and what the server reads from Apple's signed data (the signed
/// transactions, the signed renewal info) give the same entitlements and the same loyalty counts.
@Suite("Entitlements: the device and the server agree", .timeLimit(.minutes(3)))
struct EntitlementAgreementTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)
    static let bundleId = "com.example.coffer"
    static let monthly = "com.example.pro.monthly"
    static let yearly = "com.example.pro.yearly"
    static let noAds = "com.example.noads"
    static let pass = "com.example.pass"
    static let credits = "com.example.credits"

    @Test("random histories: the same entitlements, sources and paid periods on both sides", arguments: 1...60)
    func agree(seed: Int) async throws {
        let catalog = try Catalog(
            products: [
                CatalogProduct(
                    id: Self.yearly, kind: .autoRenewable, entitlements: ["premium"], group: "pro", durationDays: 365),
                CatalogProduct(id: Self.monthly, kind: .autoRenewable, entitlements: ["premium"], group: "pro"),
                CatalogProduct(id: Self.noAds, kind: .nonConsumable, entitlements: ["adFree"]),
                CatalogProduct(id: Self.pass, kind: .nonRenewing, entitlements: ["pass"], durationDays: 20),
                CatalogProduct(id: Self.credits, kind: .consumable, credits: 100),
            ], loyalty: [LoyaltyRule(group: "pro", periods: 3, entitlements: ["lifetime"])])
        let pki = try SimulatorPKI(
            validFrom: Self.start.addingTimeInterval(-86_400),
            leafValidUntil: Self.start.addingTimeInterval(4_000 * 86_400))
        var configuration = SimulatorConfiguration(bundleId: Self.bundleId, appAppleId: 1_234)
        configuration.introductoryOffers = [
            Self.monthly: StoreIntroductoryOffer(
                paymentMode: .freeTrial, price: 0, displayPrice: "USD 0.00", period: StorePeriod(value: 1, unit: .week),
                periodCount: 1)
        ]
        let clock = SimulatorClock(start: Self.start)
        let apple = SimulatedAppStore(
            catalog: catalog, configuration: configuration, signer: try pki.signer(), clock: clock)
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: Self.bundleId, appAppleId: nil, environment: .sandbox)
        var random = SeededGenerator(state: UInt64(seed))
        var steps: [String] = []
        for _ in 0..<30 {
            let ids = await apple.accountTransactions(account: "alice").map(\.id)
            let originals = Set(await apple.accountTransactions(account: "alice").map(\.originalId))
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                steps.append("buy monthly")
                _ = try? await apple.purchase(account: "alice", productId: Self.monthly)
            case 1:
                steps.append("buy yearly")
                _ = try? await apple.purchase(account: "alice", productId: Self.yearly)
            case 2:
                steps.append("buy no-ads")
                _ = try? await apple.purchase(account: "alice", productId: Self.noAds)
            case 3:
                steps.append("buy pass")
                _ = try? await apple.purchase(account: "alice", productId: Self.pass)
            case 4:
                steps.append("buy credits")
                _ = try? await apple.purchase(account: "alice", productId: Self.credits)
            case 5:
                if let id = ids.randomElement(using: &random) {
                    steps.append("refund \(id)")
                    _ = try? await apple.refund(transactionId: id)
                }
            case 6:
                if let id = ids.randomElement(using: &random) {
                    steps.append("reverse \(id)")
                    _ = try? await apple.reverseRefund(transactionId: id)
                }
            case 7:
                let fails = Bool.random(using: &random)
                steps.append("billing fails \(fails)")
                _ = try? await apple.setBillingFails(account: "alice", fails)
            case 8:
                if let original = originals.sorted().randomElement(using: &random) {
                    let on = Bool.random(using: &random)
                    steps.append("auto-renew \(original) \(on)")
                    _ = try? await apple.setAutoRenew(originalTransactionId: original, on)
                }
            default:
                let days = Double(Int.random(in: 1...40, using: &random))
                steps.append("advance \(Int(days))d")
                _ = try? await apple.advanceClock(by: days * 86_400)
            }
        }
        let now = clock.now()

        // The device: StoreKit's transactions and the renewal info's grace periods, through the SDK's mapping.
        let device = apple.device(account: "alice")
        let deviceTransactions = await device.all()
        let deviceFacts = deviceTransactions.map(CofferSDK.fact)
        // Asked by the group ids the transactions carry, as the SDK asks StoreKit (never the catalog's "pro").
        let groupIds = Set(deviceTransactions.compactMap(\.subscriptionGroupId))
        #expect(groupIds.isSubset(of: [SimulatedAppStore.groupId("pro")]))
        #expect(await device.gracePeriods(groups: ["pro"]).isEmpty)
        let deviceGrace = await device.gracePeriods(groups: groupIds.sorted())
        let onDevice = Entitlements.evaluate(deviceFacts, catalog: catalog, gracePeriods: deviceGrace, at: now)

        // The server: Apple's signed transactions and signed renewal info, verified and mapped as it does.
        var serverFacts: [TransactionFact] = []
        for transaction in await apple.accountTransactions(account: "alice") {
            let payload = try await verifier.verifyTransaction(await apple.signedTransaction(id: transaction.id))
            serverFacts.append(try #require(TransactionFact(payload)))
        }
        var serverGrace: [String: Date] = [:]
        if let any = serverFacts.first?.transactionId {
            for group in try await apple.subscriptionStatuses(any).data ?? [] {
                for item in group.lastTransactions ?? [] {
                    guard let signed = item.signedRenewalInfo else { continue }
                    let info = try await verifier.verifyRenewalInfo(signed)
                    if let original = info.originalTransactionId, let end = info.gracePeriodExpiresDate {
                        serverGrace[original] = end
                    }
                }
            }
        }
        let onServer = Entitlements.evaluate(serverFacts, catalog: catalog, gracePeriods: serverGrace, at: now)

        #expect(onDevice.names == onServer.names, "seed \(seed): \(steps.joined(separator: ", "))")
        #expect(onDevice.sources == onServer.sources, "seed \(seed): \(steps.joined(separator: ", "))")
        #expect(onDevice.paidPeriods == onServer.paidPeriods, "seed \(seed): \(steps.joined(separator: ", "))")
    }
}
