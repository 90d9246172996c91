import CofferAPI
import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// The third security round's limits: a support admin's grants count over a rolling 24 hours in the store, and
/// admin API keys carry a role and a grant limit as admins do.
extension SecurityTests {
    @Test(
        "a support key grants up to its limit in total over a rolling 24 hours, and does nothing only an owner may",
        arguments: ServerEngine.allCases)
    func supportKeys(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        let support = NewAdminKey(name: "help desk", at: AdminAPITests.now, role: .support, grantLimit: 1_000)
        try await store.createAdminKey(support.record)
        let signer = try AdminRequestSigner(keyId: support.record.id, privateKeyPEM: support.privateKeyPEM)
        // A key made before roles (no role given) stays an owner's.
        #expect(NewAdminKey(name: "old laptop", at: AdminAPITests.now).record.role == .owner)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            func grant(_ credits: Int64) async throws -> TestResponse {
                try await AdminAPITests.send(
                    client, signer, .post, "/v1/admin/grants",
                    body: GrantRequest(supportId: user.supportId, credits: credits, reason: "Ticket #20"))
            }
            // Each grant is under the limit; together they may not pass it.
            #expect(try await grant(600).status == .created)
            #expect(try await grant(400).status == .created)
            let over = try await grant(1)
            #expect(over.status == .forbidden)
            #expect(String(buffer: over.body).contains("last 24 hours"))
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).count == 2)
            // What only an owner may do: refused before anything is done.
            let balance = try await AdminAPITests.send(
                client, signer, .post, "/v1/admin/users/\(user.supportId)/balance",
                body: BalanceRequest(balance: 5, reason: "Ticket #21"))
            #expect(balance.status == .forbidden)
            let deleted = try await AdminAPITests.send(
                client, signer, .post, "/v1/admin/users/\(user.supportId)/delete")
            #expect(deleted.status == .forbidden)
            #expect(
                try await store.user(supportId: try #require(SupportID(user.supportId)), environment: .sandbox)?
                    .deletedAt == nil)
        }
        // The store counts the key's grants of the last day, whatever instance made them.
        #expect(
            try await store.grantedCredits(
                environment: .sandbox, holder: support.record.holder, since: .distantPast) == 1_000)
        #expect(
            try await store.grantedCredits(
                environment: .sandbox, holder: support.record.holder, since: Date.distantFuture) == 0)
        #expect(try await store.grantedCredits(environment: .sandbox, holder: "help", since: .distantPast) == 0)
    }
}

extension SecurityTests {
    @Test(
        "a revoked token stops at once on its instance and within 5 seconds on every other",
        arguments: ServerEngine.allCases)
    func revocationAcrossInstances(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let clock = Mutex(ClientAPITests.start.addingTimeInterval(3_600))
        let first = try Fixture.Setup(store: store, now: { clock.withLock { $0 } })
        let second = try Fixture.Setup(store: store, now: { clock.withLock { $0 } })
        try await first.app.test(.router) { one in
            try await second.app.test(.router) { other in
                let user = try Fixture.decode(
                    CreateUserResponse.self, try await one.execute(uri: "/v1/users", method: .post))
                // The other instance has seen the token (and remembers it).
                #expect(try await AccountTests.me(user.token, other).status == .ok)
                let revoked = try await one.execute(
                    uri: "/v1/me/token", method: .delete, headers: Fixture.bearer(user.token))
                #expect(revoked.status == .noContent)
                #expect(try await AccountTests.me(user.token, one).status == .unauthorized)
                clock.withLock { $0 = $0.addingTimeInterval(ClientService.tokenCacheLifetime) }
                #expect(try await AccountTests.me(user.token, other).status == .unauthorized)
            }
        }
    }
}

extension SecurityTests {
    @Test(
        "what a customer can write is bounded: 10 device tokens per Apple account, milestones only once earned",
        arguments: ServerEngine.allCases)
    func perAccountBounds(engine: ServerEngine) async throws {
        let setup = try NotificationTests.Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            var tokens: [String] = []
            for _ in 0..<12 {
                // A device a second, as people register them.
                _ = try await setup.apple.advanceClock(by: 1)
                let registered = try ClientAPITests.decode(
                    CreateUserResponse.self,
                    try await AccountTests.register(try await setup.apple.signedAppTransaction(account: "eve"), client))
                tokens.append(registered.token)
            }
            // The two oldest devices are signed out; the newest ten go on.
            for (index, token) in tokens.enumerated() {
                let status = try await AccountTests.me(token, client).status
                #expect(status == (index < 2 ? .unauthorized : .ok), "device \(index)")
            }
            // A milestone the server's rules do not say was earned is refused and not recorded.
            let milestone = try await client.execute(
                uri: "/v1/me/milestones", method: .post, headers: ClientAPITests.bearer(tokens[11]),
                body: try ClientAPITests.body(MilestoneRequest(name: "loyalty:pro")))
            #expect(milestone.status == .unprocessableContent)
            #expect(try AdminAPITests.errorCode(milestone) == "milestone-not-earned")
            let made = try await client.execute(
                uri: "/v1/me/milestones", method: .post, headers: ClientAPITests.bearer(tokens[11]),
                body: try ClientAPITests.body(MilestoneRequest(name: "anything-else")))
            #expect(made.status == .unprocessableContent)
        }
    }
}
