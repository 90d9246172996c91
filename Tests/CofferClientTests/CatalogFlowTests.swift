import CofferAPI
import CofferCore
import Foundation
import Testing

@testable import CofferClient

/// The SDK takes its catalog from the server, and stops when it is configured for the other wallet.
@Suite("SDK and the server's catalog", .timeLimit(.minutes(2)))
struct CatalogFlowTests {
    @Test(
        "the app takes the server's catalog at launch (a product the bundled one lacks is sold), and keeps it offline",
        arguments: WalletMode.allCases)
    func serverCatalog(wallet: WalletMode) async throws {
        try await PurchaseFlowTests.withWorld(wallet: wallet, serverOnSimulatedTime: true) { world in
            // The app shipped before the no-ads product existed.
            let bundled = try Catalog(products: world.catalog.products.filter { $0.id != PurchaseFlowTests.noAds })
            let app = try world.app(install: "phone", bundled: bundled)
            #expect(await app.catalog == bundled)
            try await app.launch()
            #expect(await app.catalog == world.catalog)
            guard case .delivered = try await app.purchase(productId: PurchaseFlowTests.noAds) else {
                Issue.record("the product from the server's catalog was not delivered")
                return
            }
            #expect(try await app.refreshEntitlements().names.contains("adFree"))
            // A launch without the server still sells it: the server's catalog was kept.
            let offline = try world.app(install: "phone", offline: true, bundled: bundled)
            #expect(await offline.catalog == world.catalog)
            // The server answers 304 to the catalog the app holds: nothing is read again.
            let tag = try #require(try await world.server.catalog(etag: nil)?.etag)
            #expect(try await world.server.catalog(etag: tag) == nil)
        }
    }

    @Test("an app configured for the other wallet than the server keeps stops at launch, saying which")
    func walletMismatch() async throws {
        try await PurchaseFlowTests.withWorld(wallet: .server, serverOnSimulatedTime: true) { world in
            let app = try world.app(install: "phone", configuredWallet: .device)
            await #expect {
                try await app.launch()
            } throws: { error in
                guard case SDKError.walletMismatch(let why) = error else { return false }
                return why.contains("the server keeps the server wallet")
            }
            #expect(try await world.server.me(token: try #require(await app.credentials?.token)).wallet == "server")
        }
    }

    @Test("a server under a path keeps its prefix: https://example.com/coffer/ answers /v1/me at /coffer/v1/me")
    func pathPrefix() throws {
        for base in ["https://example.com/coffer/", "https://example.com/coffer"] {
            let client = ServerClient(baseURL: try #require(URL(string: base)))
            #expect(client.endpoint("/v1/me")?.absoluteString == "https://example.com/coffer/v1/me")
        }
        let root = ServerClient(baseURL: try #require(URL(string: "https://example.com")))
        #expect(root.endpoint("/v1/me?x=1")?.absoluteString == "https://example.com/v1/me?x=1")
    }
}
