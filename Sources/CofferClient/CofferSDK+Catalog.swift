import CofferAPI
import CofferCore
import Foundation

extension CofferSDK {
    static let catalogKey = "catalog.json"
    static let catalogTag = "catalog.etag"

    /// The server's catalog as the last launch took it, `nil` before the server was first reached.
    static func keptCatalog(_ state: SDKState) -> Catalog? {
        guard let text = try? state.value(catalogKey), !text.isEmpty else { return nil }
        return try? Catalog(json: Data(text.utf8))
    }

    /// Takes the server's catalog (`GET /v1/catalog`) when it changed since the last launch, and keeps it for an
    /// offline one. A server from before the route leaves the catalog as it is.
    ///
    /// - Throws: ``ServerClientError/transport(_:)`` when the server is out of reach (the kept catalog stays).
    func refreshCatalog() async throws {
        let tag = (try? state.value(Self.catalogTag)).flatMap { $0.isEmpty ? nil : $0 }
        // A Result, not a typed catch pattern: Swift 6.3's SILGen crashes on one here.
        let result: Result<(catalog: Catalog, etag: String?)?, ServerClientError>
        do {
            result = .success(try await server.catalog(etag: Self.keptCatalog(state) == nil ? nil : tag))
        } catch {
            result = .failure(error)
        }
        let answer: (catalog: Catalog, etag: String?)
        switch result {
        case .success(let fresh?): answer = fresh
        case .success(nil), .failure(.refused(404, _, _)): return
        case .failure(let error): throw error
        }
        catalog = answer.catalog
        try state.set(Self.catalogKey, String(decoding: answer.catalog.json(), as: UTF8.self))
        try state.set(Self.catalogTag, answer.etag ?? "")
        publish(.wallet)
    }

    /// Stops an app configured for the other wallet than the server keeps (`GET /v1/me`'s `wallet`), once per
    /// process: the device wallet's app on a server wallet's server would keep a balance nobody reads.
    ///
    /// - Throws: ``SDKError/walletMismatch(_:)``; ``ServerClientError/transport(_:)`` when the server is out of
    ///   reach (asked again on the next launch).
    func checkWallet() async throws {
        guard !walletChecked else { return }
        let me: MeResponse
        do {
            me = try await signedIn { try await server.me(token: $0) }
        } catch ServerClientError.refused(404, _, _) {
            walletChecked = true  // a server that does not say
            return
        }
        try keepGrantedEntitlements(me)
        if let wallet = me.wallet, wallet != configuration.wallet.rawValue {
            throw SDKError.walletMismatch(
                "the server keeps the \(wallet) wallet, and this app is configured for the "
                    + "\(configuration.wallet.rawValue) wallet: set SDKConfiguration's wallet to .\(wallet)")
        }
        walletChecked = true
    }
}
