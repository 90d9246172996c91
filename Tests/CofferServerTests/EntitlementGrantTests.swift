import CofferAPI
import CofferAdmin
import CofferCore
import CofferServer
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Support grants an entitlement for a time (`POST /v1/admin/entitlement-grants`): the customer has it in `GET /v1/me`
/// until it ends or support cancels it; audited, on the customer page, never a paid period.
@Suite("Entitlement grants", .timeLimit(.minutes(2)))
struct EntitlementGrantTests {
    typealias Fixture = ClientAPITests

    static func me(_ client: some TestClientProtocol, _ token: String) async throws -> MeResponse {
        try Fixture.decode(
            MeResponse.self,
            try await client.execute(uri: "/v1/me", method: .get, headers: [.authorization: "Bearer \(token)"]))
    }

    @Test("granted for 7 days: in GET /v1/me with its end, on the customer page, audited; cancelled, it ends now")
    func grantAndCancel() async throws {
        let setup = try Fixture.Setup(store: InMemoryStore())
        let signer = try await AdminAPITests.key(in: setup.cofferStore)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            #expect(try await Self.me(client, user.token).entitlements.isEmpty)
            let created = try await AdminAPITests.send(
                client, signer, .post, "/v1/admin/entitlement-grants",
                body: EntitlementGrantRequest(
                    supportId: user.supportId, entitlement: "adFree", days: 7, reason: "Ticket #9"))
            #expect(created.status == .created, "\(String(buffer: created.body))")
            let grant = try AdminJSON.decoder.decode(EntitlementGrantView.self, from: Data(buffer: created.body))
            #expect(grant.active && grant.entitlement == "adFree")
            #expect(grant.endsAt == grant.startsAt.addingTimeInterval(7 * 86_400))

            let me = try await Self.me(client, user.token)
            #expect(me.entitlements == ["adFree"])
            #expect(me.grantedEntitlements?.map(\.entitlement) == ["adFree"])
            #expect(me.grantedEntitlements?.first?.endsAt == grant.endsAt.formatted(.iso8601))

            let detail = try AdminJSON.decoder.decode(
                UserDetail.self,
                from: Data(
                    buffer: try await AdminAPITests.send(client, signer, .get, "/v1/admin/users/\(user.supportId)").body
                ))
            #expect(detail.entitlementGrants.map(\.id) == [grant.id])
            #expect(detail.timeline.contains { $0.summary.contains("granted adFree for 7 days") })
            #expect(
                try await setup.cofferStore.auditEvents(
                    environment: .sandbox, query: AuditQuery(subject: user.supportId, action: "entitlement"), limit: 5
                ).map(\.action) == ["entitlement.grant"])

            let cancelled = try await AdminAPITests.send(
                client, signer, .post, "/v1/admin/entitlement-grants/\(grant.id.uuidString)/cancel")
            #expect(cancelled.status == .ok)
            #expect(try await Self.me(client, user.token).entitlements.isEmpty)
            #expect(try await Self.me(client, user.token).grantedEntitlements == [])
            #expect(
                try await setup.cofferStore.auditEvents(
                    environment: .sandbox, query: AuditQuery(subject: user.supportId, action: "entitlement"), limit: 5
                ).map(\.action) == ["entitlement.cancel", "entitlement.grant"])
        }
    }

    @Test("what is refused: an entitlement the catalog lacks, days out of range, no reason, no such grant")
    func refusals() async throws {
        let setup = try Fixture.Setup(store: InMemoryStore())
        let signer = try await AdminAPITests.key(in: setup.cofferStore)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            for (request, words) in [
                (EntitlementGrantRequest(supportId: user.supportId, entitlement: "gold", days: 7, reason: "x"), "gold"),
                (
                    EntitlementGrantRequest(supportId: user.supportId, entitlement: "adFree", days: 0, reason: "x"),
                    "1 to"
                ),
                (
                    EntitlementGrantRequest(supportId: user.supportId, entitlement: "adFree", days: 3_651, reason: "x"),
                    "1 to"
                ),
                (
                    EntitlementGrantRequest(supportId: user.supportId, entitlement: "adFree", days: 7, reason: " "),
                    "reason"
                ),
            ] {
                let response = try await AdminAPITests.send(
                    client, signer, .post, "/v1/admin/entitlement-grants", body: request)
                #expect(response.status == .badRequest, "\(request)")
                #expect(try Fixture.decode(ErrorResponse.self, response).error.message.contains(words))
            }
            #expect(try await Self.me(client, user.token).entitlements.isEmpty)
            let missing = try await AdminAPITests.send(
                client, signer, .post, "/v1/admin/entitlement-grants/\(UUID().uuidString)/cancel")
            #expect(missing.status == .notFound)
            // A support key grants for at most 90 days; an owner's key longer.
            let key = NewAdminKey(name: "support", at: AdminAPITests.now, role: .support, grantLimit: 100)
            try await setup.cofferStore.createAdminKey(key.record)
            let support = try AdminRequestSigner(keyId: key.record.id, privateKeyPEM: key.privateKeyPEM)
            let long = EntitlementGrantRequest(
                supportId: user.supportId, entitlement: "adFree", days: 91, reason: "Ticket #91")
            let refused = try await AdminAPITests.send(
                client, support, .post, "/v1/admin/entitlement-grants", body: long)
            #expect(refused.status == .forbidden)
            #expect(try Fixture.decode(ErrorResponse.self, refused).error.message.contains("at most 90 days"))
            var short = long
            short.days = 90
            #expect(
                try await AdminAPITests.send(client, support, .post, "/v1/admin/entitlement-grants", body: short)
                    .status == .created)
            // Only the grant made: nothing refused changed anything.
            #expect(try await Self.me(client, user.token).grantedEntitlements?.count == 1)
        }
    }

    @Test("from the customer page: granted, listed with its end, cancelled")
    func panel() async throws {
        try await PanelTests.signedIn(InMemoryStore()) { client, user, browser in
            let page = try await browser.get(client, "/admin/users/\(user.supportId)")
            #expect(String(buffer: page.body).contains(#"id="entitlement-grant-form""#))
            let csrf = try PanelTests.Browser.csrf(page)
            let granted = try await browser.post(
                client, "/admin/users/\(user.supportId)/entitlement-grants",
                [("csrf", csrf), ("entitlement", "premium"), ("days", "30"), ("reason", "Ticket #30")])
            #expect(granted.headers[.location]?.hasSuffix("?notice=entitlement-granted") == true)
            let listed = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(listed.contains("granted premium for 30 days"))
            let id = try #require(listed.firstMatch(of: /cancel-entitlement-([0-9a-f-]{36})/)).1
            let cancelled = try await browser.post(
                client, "/admin/entitlement-grants/\(id)/cancel", [("csrf", csrf), ("supportId", user.supportId)])
            #expect(cancelled.headers[.location]?.hasSuffix("?notice=cancelled") == true)
            let after = String(buffer: try await browser.get(client, "/admin/users/\(user.supportId)").body)
            #expect(after.contains(">cancelled<") && !after.contains("cancel-entitlement-"))
            // Another customer's grant, cancelled from this one's page, is refused there, with why.
            let other = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let forged = try await browser.post(
                client, "/admin/entitlement-grants/\(id)/cancel", [("csrf", csrf), ("supportId", other.supportId)])
            #expect(forged.status == .notFound)
            #expect(String(buffer: forged.body).contains("of \(other.supportId)"))
            // Days out of range come back with why.
            let refused = try await browser.post(
                client, "/admin/users/\(user.supportId)/entitlement-grants",
                [("csrf", csrf), ("entitlement", "premium"), ("days", "0"), ("reason", "Ticket #30")])
            #expect(String(buffer: refused.body).contains("1 to 3650 days"))
        }
    }
}
