import CofferAppStore
import CofferCore
import CofferSimulator
import Foundation

/// A simulated App Store for one test: a fresh PKI, a catalog with every kind of product, a verifier that
/// trusts the simulator's root in Sandbox.
struct SimulatorFixture {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01
    static let bundleId = "com.example.coffer"

    let pki: SimulatorPKI
    let clock = SimulatorClock(start: start)
    let store: SimulatedAppStore
    let verifier: SignedDataVerifier

    init(configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        var configuration = SimulatorConfiguration(bundleId: Self.bundleId, appAppleId: 1_234)
        configure(&configuration)
        // Coffer refuses the simulator's root in Production; a Production simulator under test signs with an
        // unmarked stand-in for Apple's chain so its data can still be checked.
        var options = SimulatorPKI.Options()
        options.simulatorMarker = configuration.environment != .production
        pki = try SimulatorPKI(
            validFrom: Self.start.addingTimeInterval(-86_400),
            leafValidUntil: Self.start.addingTimeInterval(5 * 365 * 86_400), options: options)
        let catalog = try Catalog(products: [
            CatalogProduct(id: "com.example.credits", kind: .consumable, credits: 100),
            CatalogProduct(id: "com.example.noads", kind: .nonConsumable, entitlements: ["adFree"]),
            CatalogProduct(
                id: "com.example.pro.yearly", kind: .autoRenewable, entitlements: ["premium"], group: "pro",
                durationDays: 365),
            CatalogProduct(
                id: "com.example.pro.monthly", kind: .autoRenewable, entitlements: ["premium"], group: "pro"),
            CatalogProduct(id: "com.example.pass", kind: .nonRenewing, entitlements: ["premium"], durationDays: 7),
        ])
        store = SimulatedAppStore(
            catalog: catalog, configuration: configuration, signer: try pki.signer(), clock: clock)
        verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: Self.bundleId, appAppleId: 1_234,
            environment: configuration.environment)
    }

    /// Every notification sent so far, verified and decoded, oldest first. (Get Notification History reaches back
    /// only 30 days in the sandbox, as Apple's; its own tests read it.)
    func notifications() async throws -> [VerifiedNotification] {
        var verified: [VerifiedNotification] = []
        for notification in await store.sentNotifications() {
            verified.append(try await verifier.verifyNotification(notification.signedPayload))
        }
        return verified
    }

    /// The notification types so far, as `TYPE` or `TYPE/SUBTYPE`.
    func notificationTypes() async throws -> [String] {
        try await notifications().map { notification in
            let type = notification.payload.rawNotificationType ?? "?"
            return notification.payload.rawSubtype.map { "\(type)/\($0)" } ?? type
        }
    }
}
