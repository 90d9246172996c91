import CofferAPI
import CofferAppStore
import CofferCore
import CofferService
import CofferSimulator
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The application layer called directly, with no HTTP: what the routes do is decided here.
@Suite("Client service", .timeLimit(.minutes(1)))
struct ServiceTests {
    /// A client service over an in-memory store, and the simulator that signs its transactions.
    static func make(wallet: WalletMode) throws -> (ClientService, SimulatedAppStore) {
        let start = SimulatedApple.start
        let (pki, catalog, apple) = try SimulatedApple.make(at: start)
        var configuration = ServiceConfiguration(bundleId: SimulatedApple.bundleId)
        configuration.wallet = wallet
        let store = InMemoryStore()
        let dependencies = try ServerDependencies(
            store: store,
            verifier: try SignedDataVerifier(
                rootCertificates: [pki.rootDER()], bundleId: SimulatedApple.bundleId, appAppleId: nil,
                environment: .sandbox),
            catalog: catalog, now: { start.addingTimeInterval(3_600) })
        let service = ClientService(
            ServiceParts(
                configuration: configuration, dependencies: dependencies, events: EventHub(),
                ledger: LedgerBatcher(store: store)))
        return (service, apple)
    }

    @Test("a user presents a purchase: delivered once, another user is refused, the wallet spends by key")
    func purchaseAndSpend() async throws {
        let (service, apple) = try Self.make(wallet: .server)
        let created = try await service.createUser()
        let user = try await service.authenticate(token: created.token)
        #expect(user.supportId.rawValue == created.supportId)
        let bought = try await apple.purchase(
            account: "ann", productId: "com.example.credits", appAccountToken: created.appAccountToken)
        let signed = try await apple.signedTransaction(id: try #require(bought.transactionIds.first))

        let first = try await service.present(signed, user: user)
        #expect(first.outcome == .delivered)
        #expect(first.balance == 100)
        #expect(try await service.present(signed, user: user).outcome == .duplicate)

        let other = try await service.authenticate(token: try await service.createUser().token)
        await #expect(throws: ServiceError.wrongUser) { try await service.present(signed, user: other) }

        #expect(try await service.spend(30, key: "k1", for: user) == 70)
        #expect(try await service.spend(30, key: "k1", for: user) == 70)
        await #expect(throws: ServiceError.badRequest("an Idempotency-Key header is required")) {
            try await service.spend(1, key: nil, for: user)
        }
        await #expect(throws: ServiceError.ledger(.insufficientBalance(balance: 70, requested: 500))) {
            try await service.spend(500, key: "k2", for: user)
        }
        #expect(try await service.me(user: user).balance == 70)
        await #expect(throws: ServiceError.noBearer) { try await service.authenticate(token: "not a token") }
    }

    @Test("the device wallet: the backup moves by version, spending belongs to the app")
    func deviceWallet() async throws {
        let (service, _) = try Self.make(wallet: .device)
        let user = try await service.authenticate(token: try await service.createUser().token)
        await #expect(throws: ServiceError.noBackup) { try await service.backup(of: user) }
        guard
            case .saved(let first) = try await service.saveBackup(
                of: user, value: 500, device: "phone", precondition: .absent)
        else { throw ServiceError.internalError("not saved") }
        #expect(try await service.backup(of: user) == first)
        let stale = try await service.saveBackup(of: user, value: 1, device: "phone", precondition: .absent)
        #expect(stale == .conflict(current: first))
        await #expect(throws: ServiceError.badRequest("a backup cannot be negative")) {
            try await service.saveBackup(of: user, value: -1, device: nil, precondition: .overwrite)
        }
        await #expect(throws: ServiceError.deviceWallet) { try await service.spend(1, key: "k", for: user) }
        await #expect(throws: ServiceError.notFound("no such grant")) {
            try await service.claimGrant(UUID(), for: user)
        }
    }
}
