import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `POST /v1/users` with Apple's signed AppTransaction: one customer per Apple account, a token per device.
@Suite("Apple accounts", .timeLimit(.minutes(1)))
struct AccountTests {
    typealias Setup = NotificationTests.Setup

    static func register(_ signed: String, _ client: some TestClientProtocol) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/users", method: .post,
            body: try ClientAPITests.body(CreateUserRequest(signedAppTransaction: signed)))
    }

    static func me(_ token: String, _ client: some TestClientProtocol) async throws -> TestResponse {
        try await client.execute(uri: "/v1/me", method: .get, headers: ClientAPITests.bearer(token))
    }

    @Test(
        "an Apple account is one customer: 201 first, 200 from other devices with the same ids; each device's token alone",
        arguments: ServerEngine.allCases)
    func oneCustomerPerAccount(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        try await setup.app.test(.router) { client in
            let phone = try await Self.register(try await setup.apple.signedAppTransaction(account: "alice"), client)
            #expect(phone.status == .created)
            let first = try ClientAPITests.decode(CreateUserResponse.self, phone)
            let pad = try await Self.register(try await setup.apple.signedAppTransaction(account: "alice"), client)
            #expect(pad.status == .ok)
            let second = try ClientAPITests.decode(CreateUserResponse.self, pad)
            #expect(second.supportId == first.supportId && second.appAccountToken == first.appAccountToken)
            #expect(second.token != first.token)
            let bob = try ClientAPITests.decode(
                CreateUserResponse.self,
                try await Self.register(try await setup.apple.signedAppTransaction(account: "bob"), client))
            #expect(bob.supportId != first.supportId)
            #expect(try await setup.store.userCount(environment: .sandbox) == 2)

            // A purchase on the phone is the pad's too: one ledger.
            let bought = try await setup.apple.purchase(
                account: "alice", productId: "com.example.credits", appAccountToken: first.appAccountToken)
            let id = try #require(bought.transactionIds.first)
            let signed = try await setup.apple.signedTransaction(id: id)
            #expect(try await NotificationTests.present(signed, as: first, with: client).outcome == .delivered)
            #expect(try await NotificationTests.present(signed, as: second, with: client).outcome == .duplicate)
            let seen = try ClientAPITests.decode(MeResponse.self, try await Self.me(second.token, client))
            #expect(seen.balance == 100 && seen.supportId == first.supportId)

            // The pad signs out: its token stops, the phone's stays.
            let out = try await client.execute(
                uri: "/v1/me/token", method: .delete, headers: ClientAPITests.bearer(second.token))
            #expect(out.status == .noContent)
            #expect(try await Self.me(second.token, client).status == .unauthorized)
            #expect(try await Self.me(first.token, client).status == .ok)
            let again = try await client.execute(
                uri: "/v1/me/token", method: .delete, headers: ClientAPITests.bearer(second.token))
            #expect(again.status == .unauthorized)
        }
    }

    @Test(
        "a forged, foreign, malformed, stale or Production AppTransaction is refused 422 and creates nothing",
        arguments: ServerEngine.allCases)
    func refused(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore())
        let start = setup.clock.now()
        // Another authority's signature, another app's data, a Production app transaction at a Sandbox server.
        let forger = try SimulatorPKI(
            validFrom: start.addingTimeInterval(-86_400), leafValidUntil: start.addingTimeInterval(86_400))
        let forged = SimulatedAppStore(
            catalog: setup.catalog, configuration: .init(bundleId: NotificationTests.bundleId, appAppleId: 1_234),
            signer: try forger.signer(), clock: setup.clock)
        let foreign = SimulatedAppStore(
            catalog: setup.catalog, configuration: .init(bundleId: "com.other.app", appAppleId: 1_234),
            signer: try setup.pki.signer(), clock: setup.clock)
        let production = SimulatedAppStore(
            catalog: setup.catalog,
            configuration: .init(bundleId: NotificationTests.bundleId, appAppleId: 1_234, environment: .production),
            signer: try setup.pki.signer(), clock: setup.clock)
        try await setup.app.test(.router) { client in
            let cases: [(String, String)] = [
                (try await forged.signedAppTransaction(account: "mallory"), "INVALID_CHAIN"),
                (try await foreign.signedAppTransaction(account: "mallory"), "INVALID_APP_IDENTIFIER"),
                (try await production.signedAppTransaction(account: "mallory"), "INVALID_ENVIRONMENT"),
                ("not.a.jws", "VERIFICATION_FAILURE"),
            ]
            for (signed, code) in cases {
                let response = try await Self.register(signed, client)
                #expect(response.status == .unprocessableContent, "\(code)")
                #expect(try AdminAPITests.errorCode(response) == code)
            }
            // A copy of a real one works for a day (the setting), then is stale: the SDK asks for a fresh one.
            let copied = try await setup.apple.signedAppTransaction(account: "alice")
            _ = try await setup.apple.advanceClock(by: TimeInterval(setup.configuration.appTransactionMaxAge) + 1)
            let stale = try await Self.register(copied, client)
            #expect(stale.status == .unprocessableContent)
            #expect(try AdminAPITests.errorCode(stale) == "stale-app-transaction")
            let wrongType = try await client.execute(
                uri: "/v1/users", method: .post, body: ByteBuffer(string: #"{"signedAppTransaction":5}"#)
            )
            #expect(wrongType.status == .badRequest)
            #expect(try await setup.store.userCount(environment: .sandbox) == 0)
            #expect(try await setup.store.userCount(environment: .production) == 0)

            // No body and `{}` still make anonymous users (systems without appTransactionId).
            #expect(try await client.execute(uri: "/v1/users", method: .post).status == .created)
            let empty = try await client.execute(uri: "/v1/users", method: .post, body: ByteBuffer(string: "{}"))
            #expect(empty.status == .created)
            #expect(try await setup.store.userCount(environment: .sandbox) == 2)
        }
    }

    @Test(
        "on a Production server a reviewer's sandbox AppTransaction is a Sandbox account of its own",
        arguments: ServerEngine.allCases)
    func reviewerAccount(engine: ServerEngine) async throws {
        let setup = try Setup(
            store: try await engine.makeStore(), configuration: Setup.defaultConfiguration(), reviewers: ["reviewer"])
        try await setup.app.test(.router) { client in
            let customer = try await Self.register(try await setup.apple.signedAppTransaction(account: "alice"), client)
            let reviewer = try await Self.register(
                try await setup.apple.signedAppTransaction(account: "reviewer"), client)
            #expect(customer.status == .created && reviewer.status == .created)
            let users = try await setup.store.users(
                environment: .production, supportIdPrefix: nil, limit: 10, offset: 0)
            #expect(Set(users.compactMap(\.appleAccount?.environment)) == [.production, .sandbox])
        }
    }

    @Test(
        "support merges an anonymous install into the account: once, audited; its app then acts as the account",
        arguments: ServerEngine.allCases)
    func merge(engine: ServerEngine) async throws {
        let setup = try Setup(store: try await engine.makeStore(), wallet: .server)
        let signer = try await AdminAPITests.key(in: setup.store)
        try await setup.app.test(.router) { client in
            func admin(_ body: MergeRequest) async throws -> TestResponse {
                try await AdminAPITests.send(
                    client, signer, .post, "/v1/admin/users/merge", body: body, at: setup.clock.now())
            }
            // An install from before Apple accounts bought 100 credits; the account bought 100 too.
            let old = try ClientAPITests.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let account = try ClientAPITests.decode(
                CreateUserResponse.self,
                try await Self.register(try await setup.apple.signedAppTransaction(account: "alice"), client))
            for user in [old, account] {
                let id = try #require(
                    try await setup.apple.purchase(
                        account: "alice", productId: "com.example.credits", appAccountToken: user.appAccountToken
                    ).transactionIds.first)
                _ = try await NotificationTests.present(
                    try await setup.apple.signedTransaction(id: id), as: user, with: client)
            }
            let oldUser = try #require(
                try await setup.store.user(appAccountToken: old.appAccountToken, environment: .sandbox))
            let oldReceipts = try await setup.store.receipts(owner: oldUser.id, environment: .sandbox)
            let oldPurchase = try #require(oldReceipts.first?.transaction.transactionId)

            // Refusals change nothing: the account into the install, a customer into itself, nobody.
            for (body, status) in [
                (
                    MergeRequest(from: account.supportId, into: old.supportId, overrideReason: "Ticket #7"),
                    HTTPResponse.Status.badRequest
                ),
                (MergeRequest(from: old.supportId, into: old.supportId, overrideReason: "Ticket #7"), .badRequest),
                (MergeRequest(from: "_000000000000", into: account.supportId, overrideReason: "Ticket #7"), .notFound),
                // The customer's word is needed: no code and no override, a code made up, both at once.
                (MergeRequest(from: old.supportId, into: account.supportId), .badRequest),
                (MergeRequest(from: old.supportId, into: account.supportId, code: "ABCD-EFGH"), .badRequest),
                (
                    MergeRequest(from: old.supportId, into: account.supportId, code: "ABCD-EFGH", overrideReason: "x"),
                    .badRequest
                ),
                // The account owner's code, made up or not a code at all.
                (
                    MergeRequest(
                        from: old.supportId, into: account.supportId, overrideReason: "x", intoCode: "ABCD-EFGH"),
                    .badRequest
                ),
                (
                    MergeRequest(from: old.supportId, into: account.supportId, overrideReason: "x", intoCode: "1"),
                    .badRequest
                ),
            ] {
                #expect(try await admin(body).status == status, "\(body)")
            }
            #expect(try await Self.balance(old.token, client) == 100)

            // The old install shows its merge code; the customer reads it to support, who types it in.
            let code = try ClientAPITests.decode(
                MergeCodeResponse.self,
                try await client.execute(
                    uri: "/v1/me/merge-code", method: .post, headers: ClientAPITests.bearer(old.token)))
            #expect(code.code.count == 9 && code.expiresAt == setup.clock.now().addingTimeInterval(15 * 60))
            // And an install of the account shows one, so the old install may sign in as the account.
            let intoCode = try ClientAPITests.decode(
                MergeCodeResponse.self,
                try await client.execute(
                    uri: "/v1/me/merge-code", method: .post, headers: ClientAPITests.bearer(account.token)))
            let merged = try await admin(
                MergeRequest(
                    from: old.supportId, into: account.supportId, code: code.code.lowercased(),
                    intoCode: intoCode.code))
            #expect(merged.status == .ok)
            let answer = try AdminAPITests.decode(MergeResponse.self, merged)
            #expect(answer.movedBalance == 100 && answer.balance == 200 && answer.receipts == 1)
            #expect(answer.tokensMoved == 1 && answer.tokensEnded == 0)
            #expect(
                try await admin(MergeRequest(from: old.supportId, into: account.supportId, code: code.code)).status
                    == .badRequest)
            // Support's changes go to the account now, not the merged install.
            let grant = try await AdminAPITests.send(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: old.supportId, credits: 5, reason: "late ticket"), at: setup.clock.now())
            #expect(grant.status == .badRequest)
            // The account's story holds the install's history.
            let detail = try AdminAPITests.decode(
                UserDetail.self,
                try await AdminAPITests.send(
                    client, signer, .get, "/v1/admin/users/\(account.supportId)", at: setup.clock.now()))
            #expect(
                detail.timeline.contains {
                    $0.kind == .purchase && $0.summary.hasPrefix("\(old.supportId) (merged here)")
                })
            #expect(detail.timeline.contains { $0.kind == .merge })

            // The old install's token is the account's now; a purchase it makes with its old appAccountToken is
            // the account's, and a refund of what it bought before is taken from the account.
            let me = try ClientAPITests.decode(MeResponse.self, try await Self.me(old.token, client))
            #expect(me.supportId == account.supportId && me.balance == 200)
            let later = try #require(
                try await setup.apple.purchase(
                    account: "alice", productId: "com.example.credits", appAccountToken: old.appAccountToken
                ).transactionIds.first)
            #expect(
                try await NotificationTests.present(
                    try await setup.apple.signedTransaction(id: later), as: old, with: client
                ).outcome == .delivered)
            #expect(try await Self.balance(account.token, client) == 300)
            try await setup.apple.refund(transactionId: oldPurchase)
            let sent = await setup.apple.sentNotifications().count
            _ = try await setup.deliver(after: sent - 1, with: client)
            #expect(try await Self.balance(account.token, client) == 200)

            let audit = try await setup.store.auditEvents(environment: .sandbox, subject: nil, limit: 10)
            #expect(
                audit.filter { $0.action == "user.merge" }.map(\.subject).sorted()
                    == [old.supportId, account.supportId].sorted())
        }
    }

    static func balance(_ token: String, _ client: some TestClientProtocol) async throws -> Int64 {
        try ClientAPITests.decode(MeResponse.self, try await me(token, client)).balance
    }
}
