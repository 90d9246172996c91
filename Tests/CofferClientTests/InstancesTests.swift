import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferClient
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferStorePostgres
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Two `coffer serve` instances on one PostgreSQL database: what happens on one reaches a customer's event
/// stream open on the other (LISTEN/NOTIFY).
@Suite(
    "Events across instances", .timeLimit(.minutes(3)),
    .enabled(if: TestPostgres.url != nil || TestPostgres.required, "\(TestPostgres.missing)"))
struct InstancesTests {
    /// The simulated App Store, the catalog, its clock and a verifier of what it signs.
    static func world() throws -> (SimulatedAppStore, Catalog, SimulatorClock, SignedDataVerifier) {
        let start = PurchaseFlowTests.start
        let pki = try SimulatorPKI(
            validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(400 * 86_400))
        let catalog = try Catalog(products: [
            CatalogProduct(id: PurchaseFlowTests.product, kind: .consumable, credits: 100)
        ])
        let clock = SimulatorClock(start: start)
        let apple = SimulatedAppStore(
            catalog: catalog, configuration: .init(bundleId: PurchaseFlowTests.bundleId, appAppleId: 1_234),
            signer: try pki.signer(), clock: clock)
        let verifier = try SignedDataVerifier(
            rootCertificates: [pki.rootDER()], bundleId: PurchaseFlowTests.bundleId, appAppleId: nil,
            environment: .sandbox)
        return (apple, catalog, clock, verifier)
    }

    @Test("support's grant made through one instance reaches the app listening on the other")
    func grantAcrossInstances() async throws {
        let (apple, catalog, clock, verifier) = try Self.world()
        let store = try await PostgresStore(url: try await TestPostgres.freshDatabase(), maximumConnections: 8)
        defer { store.close() }
        var configuration = ServerConfiguration(bundleId: PurchaseFlowTests.bundleId)
        configuration.port = 0
        configuration.wallet = .device
        configuration.recoveryInterval = 0
        configuration.reconcileInterval = 0
        let dependencies = try ServerDependencies(store: store, verifier: verifier, catalog: catalog, broadcast: store)
        let firstInstance = try buildApplication(configuration: configuration, dependencies: dependencies)
        let secondInstance = try buildApplication(configuration: configuration, dependencies: dependencies)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-two-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await firstInstance.test(.live) { first in
            try await secondInstance.test(.live) { second in
                func world(_ port: Int?) throws -> PurchaseFlowTests.World {
                    let port = try #require(port)
                    let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
                    return PurchaseFlowTests.World(
                        apple: apple, serverStore: store, catalog: catalog, wallet: .device,
                        server: ServerClient(baseURL: base), folder: folder, clock: clock)
                }
                let onFirst = try world(first.port)
                let onSecond = try world(second.port)
                let app = try onFirst.app()
                try await app.launch()
                let supportId = try #require(await app.credentials?.supportId)
                try await LiveSyncTests.listening(app) {
                    let status = try await LiveSyncTests.admin(
                        onSecond, "/v1/admin/grants?environment=Sandbox",
                        body: GrantRequest(supportId: supportId, credits: 400, reason: "Ticket #9"))
                    #expect(status == 201)
                    try await LiveSyncTests.eventually("the grant reaches the app on the other instance") {
                        try await app.balance() == 400
                    }
                }
                #expect(await app.lastEventFailure == nil)
            }
        }
    }

    @Test("a support command's grant on the server's database reaches the app's event stream through the relay")
    func commandGrantReachesApp() async throws {
        let (apple, catalog, clock, verifier) = try Self.world()
        let url = try await TestPostgres.freshDatabase()
        let store = try await PostgresStore(url: url, maximumConnections: 8)
        defer { store.close() }
        // The command's own connection to the server's database, as `coffer grant` opens it.
        let commandStore = try await PostgresStore(url: url, maximumConnections: 2)
        defer { commandStore.close() }
        var configuration = ServerConfiguration(bundleId: PurchaseFlowTests.bundleId)
        configuration.port = 0
        configuration.wallet = .device
        configuration.recoveryInterval = 0
        configuration.reconcileInterval = 0
        let dependencies = try ServerDependencies(store: store, verifier: verifier, catalog: catalog, broadcast: store)
        let server = try buildApplication(configuration: configuration, dependencies: dependencies)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-cmd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await server.test(.live) { client in
            let port = try #require(client.port)
            let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
            let world = PurchaseFlowTests.World(
                apple: apple, serverStore: store, catalog: catalog, wallet: .device,
                server: ServerClient(baseURL: base), folder: folder, clock: clock)
            let app = try world.app()
            try await app.launch()
            let supportId = try #require(await app.credentials?.supportId)
            let support = AdminService.onServerDatabase(store: commandStore, catalog: catalog, walletMode: .device)
            try await LiveSyncTests.listening(app) {
                _ = try await support.createGrant(
                    environment: .sandbox, supportId: supportId, credits: 250, reason: "Ticket #12", actor: "cli:ada")
                try await LiveSyncTests.eventually("the command's grant reaches the app's event stream") {
                    try await app.balance() == 250
                }
            }
            #expect(await app.lastEventFailure == nil)
        }
    }
}
