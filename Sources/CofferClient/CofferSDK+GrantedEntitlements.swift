import CofferAPI
import CofferCore
import Foundation

/// Entitlements support granted the customer for a time (`GET /v1/me`'s `grantedEntitlements`): kept on the device
/// with their ends, so the gate stays open until then, offline too, and closes at the end without the server.
extension CofferSDK {
    /// The state's key of the kept grants.
    static let grantedEntitlementsKey = "grantedEntitlements"

    /// Keeps what the server says support granted for a time (a server before them says nothing: kept as it was).
    func keepGrantedEntitlements(_ me: MeResponse) throws {
        guard let granted = me.grantedEntitlements else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try state.set(Self.grantedEntitlementsKey, String(decoding: try encoder.encode(granted), as: UTF8.self))
    }

    /// Asks the server for the grants now (support just granted or cancelled one); out of reach, the kept ones stay.
    func refreshGrantedEntitlements() async {
        guard let me = try? await signedIn({ try await server.me(token: $0) }) else { return }
        try? keepGrantedEntitlements(me)
    }

    /// The kept grants that have not ended, as the entitlement rules take them.
    func grantedEntitlements() throws -> [(entitlement: String, endsAt: Date)] {
        guard let text = try state.value(Self.grantedEntitlementsKey),
            let granted = try? JSONDecoder().decode([GrantedEntitlement].self, from: Data(text.utf8))
        else { return [] }
        return granted.compactMap { grant in
            (try? Date(grant.endsAt, strategy: .iso8601)).map { (entitlement: grant.entitlement, endsAt: $0) }
        }
    }
}
