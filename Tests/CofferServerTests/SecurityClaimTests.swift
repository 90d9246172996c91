import CofferAPI
import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The third security round's attacks on the move-in from CloudKit: a public record name, and a claim's token,
/// never reach the Apple account a customer was merged into.
extension SecurityTests {
    @Test(
        "a merged import's public record name claims nothing, and a claim's token ends with the merge, on every engine",
        arguments: ServerEngine.allCases)
    func claimsAndMerges(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        let admin = AdminService(store: store, catalog: try Catalog(products: []), walletMode: .server)
        let imported = try await admin.importCustomers(
            [
                CustomerImport(externalId: "_victim", balance: 9_000, grants: []),
                CustomerImport(externalId: "_claimed", balance: 50, grants: []),
            ], source: ClientService.cloudKitSource, environment: .sandbox, actor: "test")
        let victimImport = try #require(imported.customers.first { $0.externalId == "_victim" }?.supportId)
        let claimedImport = try #require(imported.customers.first { $0.externalId == "_claimed" }?.supportId)
        try await setup.app.test(.router) { client in
            // The victim's Apple account registers on their new phone.
            let victim = try Fixture.decode(
                CreateUserResponse.self,
                try await AccountTests.register(try await setup.store.signedAppTransaction(account: "victim"), client))
            // Support merges the imported customer into it, as the victim asked.
            let first = try await admin.mergeUsers(
                environment: .sandbox, from: victimImport, into: victim.supportId,
                consent: .override(reason: "Ticket #11: the victim's email"), actor: "test")
            #expect(first.tokensMoved == 0 && first.claimTokensEnded == 0, "no install held the import's token")
            // The attacker read the record name in the public database: no token, and no way to the account.
            let attack = try await CloudKitClaimTests.claim(client, "_victim", key: "attacker-chosen-key-01")
            #expect(attack.status == .conflict)
            #expect(String(buffer: attack.body).contains("already-claimed"))
            #expect(!String(buffer: attack.body).contains(victim.supportId))

            // Another way round: the attacker claimed an import first (no AppTransaction), and the customer's own
            // anonymous install signed up beside it. Support merges the claimed customer into the account.
            let stolen = try Fixture.decode(
                CreateUserResponse.self,
                try await CloudKitClaimTests.claim(client, "_claimed", key: "attacker-chosen-key-02"))
            let me = try await client.execute(
                uri: "/v1/me", method: .get, headers: Fixture.bearer(stolen.token))
            #expect(me.status == .ok)
            // Support merges in the panel: the confirmation says a claim issued the one device token.
            try await PanelTests.admin(in: store)
            var browser = PanelTests.Browser()
            _ = try await browser.signIn(client)
            let csrf = try PanelTests.Browser.csrf(try await browser.get(client, "/admin"))
            let confirmation = try await browser.post(
                client, "/admin/users/\(claimedImport)/merge",
                [("into", victim.supportId), ("overrideReason", "Ticket #12"), ("csrf", csrf)])
            #expect(
                String(buffer: confirmation.body).contains(
                    "It holds 1 device token, 1 issued by a CloudKit claim: it ends with the merge"))
            let merged = try await browser.post(
                client, "/admin/users/\(claimedImport)/merge",
                [("into", victim.supportId), ("overrideReason", "Ticket #12"), ("confirm", "yes"), ("csrf", csrf)])
            #expect(merged.status == .seeOther)
            let audit = try await store.auditEvents(environment: .sandbox, subject: claimedImport, limit: 10)
            #expect(audit.contains { $0.action == "user.merge" && ($0.after ?? "").contains(#""claimTokensEnded":1"#) })
            // The claim's token never moved: it signs in as nobody now, and the record name claims nothing again.
            let after = try await client.execute(
                uri: "/v1/me", method: .get, headers: Fixture.bearer(stolen.token))
            #expect(after.status == .unauthorized)
            let again = try await CloudKitClaimTests.claim(client, "_claimed", key: "attacker-chosen-key-02")
            #expect(again.status == .conflict)
            // The victim's own token still opens their account, with both balances.
            let account = try Fixture.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(victim.token)))
            #expect(account.supportId == victim.supportId && account.balance == 9_050)
        }
    }

    @Test(
        "an install moves with a merge only by the account owner's own code; merged into a stranger's Support ID it is signed out",
        arguments: ServerEngine.allCases)
    func mergeMovesOwnTokens(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        // Support's clock is the server's: the code is fresh.
        let admin = AdminService(
            store: store, catalog: try Catalog(products: []), walletMode: .server,
            now: { ClientAPITests.start.addingTimeInterval(3_600) })
        try await setup.app.test(.router) { client in
            func mergeCodeAnswer(_ token: String) async throws -> MergeCodeResponse {
                try Fixture.decode(
                    MergeCodeResponse.self,
                    try await client.execute(uri: "/v1/me/merge-code", method: .post, headers: Fixture.bearer(token)))
            }
            func mergeCode(_ token: String) async throws -> String { try await mergeCodeAnswer(token).code }
            func me(_ token: String) async throws -> TestResponse {
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(token))
            }
            let signer = try await AdminAPITests.key(in: store)
            func merge(_ body: MergeRequest) async throws -> TestResponse {
                try await AdminAPITests.send(
                    client, signer, .post, "/v1/admin/users/merge", body: body,
                    at: ClientAPITests.start.addingTimeInterval(3_600))
            }
            let victim = try Fixture.decode(
                CreateUserResponse.self,
                try await AccountTests.register(try await setup.store.signedAppTransaction(account: "victim"), client))
            // The attacker's own anonymous install shows its own code, and the attacker reads the victim's Support
            // ID to support as "my Apple account's".
            let attacker = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let counts = try await admin.tokenCounts(environment: .sandbox, supportId: attacker.supportId)
            #expect(counts == TokenCounts(devices: 1, claims: 0))
            #expect(
                PanelText.mergedTokens(counts, into: victim.supportId).contains(
                    "With a merge code from an install on \(victim.supportId)'s Apple account"))
            await #expect(throws: AdminError.self) {
                _ = try await admin.mergeUsers(
                    environment: .sandbox, from: attacker.supportId, into: victim.supportId,
                    consent: .code("ZZZZ-ZZZZ"), actor: "test")
            }
            // A made-up account code changes nothing, and uses up neither code.
            let attackerCode = try await mergeCode(attacker.token)
            let guessed = try await merge(
                MergeRequest(
                    from: attacker.supportId, into: victim.supportId, code: attackerCode, intoCode: "ABCD-EFGH"))
            #expect(guessed.status == .badRequest)
            #expect(try await me(attacker.token).status == .ok)
            let answer = try await merge(
                MergeRequest(from: attacker.supportId, into: victim.supportId, code: attackerCode))
            #expect(answer.status == .ok)
            let merged = try Fixture.decode(MergeResponse.self, answer)
            #expect(merged.tokensMoved == 0 && merged.tokensEnded == 1 && merged.claimTokensEnded == 0)
            // The attacker's install signs in as nobody: not as the victim.
            #expect(try await me(attacker.token).status == .unauthorized)
            #expect(try await store.user(tokenHash: Secrets.hash(attacker.token)) == nil)
            #expect(try Fixture.decode(MeResponse.self, try await me(victim.token)).supportId == victim.supportId)

            // An Apple account's code says what it is for, so the app can warn its customer.
            let accountCode = try Fixture.decode(
                MergeCodeResponse.self,
                try await client.execute(
                    uri: "/v1/me/merge-code", method: .post, headers: Fixture.bearer(victim.token)))
            #expect(accountCode.appleAccount)
            // The customer's own old install, with a code from an install on their Apple account: it moves.
            let old = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            #expect(!(try await mergeCodeAnswer(old.token)).appleAccount)
            let moved = try Fixture.decode(
                MergeResponse.self,
                try await merge(
                    MergeRequest(
                        from: old.supportId, into: victim.supportId, code: try await mergeCode(old.token),
                        intoCode: try await mergeCode(victim.token))))
            #expect(moved.tokensMoved == 1 && moved.tokensEnded == 0)
            #expect(try Fixture.decode(MeResponse.self, try await me(old.token)).supportId == victim.supportId)
        }
    }
}
