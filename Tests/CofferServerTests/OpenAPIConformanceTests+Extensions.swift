import CofferAPI
import CofferAdmin
import CofferServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

extension OpenAPIConformanceTests {
    /// The subscription extension routes answer as documented, with the simulator as Apple and without a key.
    static func extensions(_ api: DocumentedAPI, setup: Setup, signer: AdminRequestSigner) async throws {
        let at = setup.clock.now()
        let monthly = "com.example.pro.monthly"
        try await setup.app.test(.router) { client in
            let user = try await NotificationTests.createUser(client)
            try await api.admin(
                client, signer, .post, "/v1/admin/users/\(user.supportId)/extend",
                body: ExtendSubscriptionRequest(days: 3, reasonCode: 1), at: at, expect: .serviceUnavailable)
        }
        try await RecoveryTests.withAppleAPI(setup) { apple in
            try await setup.application(api: apple).test(.router) { client in
                let (user, _) = try await SubscriptionExtensionTests.subscriber(setup, client)
                let idle = try await NotificationTests.createUser(client)
                try await api.admin(
                    client, signer, .post, "/v1/admin/users/\(user.supportId)/extend",
                    body: ExtendSubscriptionRequest(days: 3, reasonCode: 1, reason: "Ticket #3"), at: at, expect: .ok)
                try await api.admin(
                    client, signer, .post, "/v1/admin/users/\(idle.supportId)/extend",
                    body: ExtendSubscriptionRequest(days: 3, reasonCode: 1), at: at, expect: .badRequest)
                try await api.admin(
                    client, signer, .post, "/v1/admin/users/\(user.supportId)/extend",
                    body: ExtendSubscriptionRequest(days: 91, reasonCode: 1), valid: false, at: at, expect: .badRequest)
                try await api.admin(
                    client, signer, .post, "/v1/admin/subscriptions/extend",
                    body: MassExtensionRequest(productId: monthly, days: 2, reasonCode: 3, reason: "Outage"), at: at,
                    expect: .accepted)
                try await api.admin(
                    client, signer, .post, "/v1/admin/subscriptions/extend",
                    body: MassExtensionRequest(productId: "com.example.credits", days: 2, reasonCode: 3), at: at,
                    expect: .badRequest)
                try await api.admin(client, signer, .get, "/v1/admin/subscriptions/extensions", at: at, expect: .ok)

                // Entitlements for a time.
                let granted = try await api.admin(
                    client, signer, .post, "/v1/admin/entitlement-grants",
                    body: EntitlementGrantRequest(
                        supportId: idle.supportId, entitlement: "premium", days: 3, reason: "Ticket #3"), at: at,
                    expect: .created)
                let grant = try AdminJSON.decoder.decode(EntitlementGrantView.self, from: Data(buffer: granted.body))
                try await api.admin(
                    client, signer, .post, "/v1/admin/entitlement-grants",
                    body: EntitlementGrantRequest(supportId: idle.supportId, entitlement: "gold", days: 3, reason: "x"),
                    at: at, expect: .badRequest)
                try await api.admin(
                    client, signer, .post, "/v1/admin/entitlement-grants/\(grant.id.uuidString)/cancel", at: at,
                    expect: .ok)
                try await api.admin(
                    client, signer, .post, "/v1/admin/entitlement-grants/\(UUID().uuidString)/cancel", at: at,
                    expect: .notFound)
            }
        }
    }
}
