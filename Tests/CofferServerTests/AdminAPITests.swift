import CofferAPI
import CofferAdmin
import CofferCore
import CofferServer
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The admin API: the support workflow over signed requests, and every way a request is refused.
@Suite("Admin API", .timeLimit(.minutes(1)))
struct AdminAPITests {
    typealias Fixture = ClientAPITests

    /// The server's clock in the fixture.
    static let now = Fixture.start.addingTimeInterval(3_600)

    /// A key stored on the server, and its signer.
    static func key(in store: any CofferStore, name: String = "support laptop") async throws -> AdminRequestSigner {
        let key = NewAdminKey(name: name, at: now)
        try await store.createAdminKey(key.record)
        return try AdminRequestSigner(keyId: key.record.id, privateKeyPEM: key.privateKeyPEM)
    }

    /// Sends a request signed by `signer` at `date`.
    static func send(
        _ client: some TestClientProtocol, _ signer: AdminRequestSigner, _ method: HTTPRequest.Method, _ uri: String,
        body: (some Encodable)? = String?.none, at date: Date = now
    ) async throws -> TestResponse {
        let bytes = try body.map { try JSONEncoder().encode($0) } ?? Data()
        // Writes name their environment, as the CLI does.
        var uri = uri
        if method != .get, !uri.contains("environment=") {
            uri += (uri.contains("?") ? "&" : "?") + "environment=Sandbox"
        }
        var headers = HTTPFields()
        for header in try signer.headers(method: method.rawValue, host: "localhost", body: bytes, path: uri, at: date) {
            headers[HTTPField.Name(header.name)!] = header.value
        }
        return try await client.execute(
            uri: uri, method: method, headers: headers, body: bytes.isEmpty ? nil : ByteBuffer(data: bytes))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        try AdminJSON.decoder.decode(T.self, from: Data(buffer: response.body))
    }

    static func errorCode(_ response: TestResponse) throws -> String? {
        let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    @Test(
        "a support ticket: find the customer, grant with a reason, the app claims it, set the balance, all audited",
        arguments: ServerEngine.allCases)
    func supportTicket(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        let signer = try await Self.key(in: store)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            _ = try await client.execute(uri: "/v1/users", method: .post)
            let bought = try await setup.store.purchase(
                account: "alice", productId: "com.example.credits", quantity: 2, appAccountToken: user.appAccountToken)
            let transactionId = try #require(bought.transactionIds.first)
            let delivered = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Fixture.bearer(user.token),
                body: try Fixture.body(
                    TransactionRequest(signedTransaction: try await setup.store.signedTransaction(id: transactionId))))
            #expect(delivered.status == .ok)

            // Found by Support ID prefix (any case, underscore optional) and by transaction id.
            let prefix = String(user.supportId.dropFirst().prefix(6)).uppercased()
            let byPrefix = try Self.decode(
                UserSearchResult.self, try await Self.send(client, signer, .get, "/v1/admin/users?search=\(prefix)"))
            #expect(byPrefix.users.map(\.supportId) == [user.supportId])
            #expect(byPrefix.matchedBy == .supportId)
            let byTransaction = try Self.decode(
                UserSearchResult.self,
                try await Self.send(client, signer, .get, "/v1/admin/users?search=\(transactionId)"))
            #expect(byTransaction.users.map(\.supportId) == [user.supportId])
            #expect(byTransaction.matchedBy == .transactionId)
            let everyone = try Self.decode(
                UserSearchResult.self, try await Self.send(client, signer, .get, "/v1/admin/users"))
            #expect(everyone.users.count == 2)

            // Grant with a reason: pending until the app claims it through the client API.
            let created = try await Self.send(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: user.supportId, credits: 400_000, reason: "Ticket #42"))
            #expect(created.status == .created)
            let grant = try Self.decode(GrantView.self, created)
            #expect(grant.status == .pending && grant.createdBy.hasPrefix("support laptop (key "))
            let pending = try Self.decode(
                [GrantView].self, try await Self.send(client, signer, .get, "/v1/admin/grants?status=pending"))
            #expect(pending.map(\.id) == [grant.id])
            let claim = try await client.execute(
                uri: "/v1/me/grants/\(grant.id)/claim", method: .post, headers: Fixture.bearer(user.token))
            #expect(try Fixture.decode(ClaimResponse.self, claim).balance == 400_200)
            let claimed = try Self.decode(
                [GrantView].self, try await Self.send(client, signer, .get, "/v1/admin/grants?status=claimed"))
            #expect(claimed.map(\.id) == [grant.id])

            // Set the balance against one support saw before the claim: 409, and nothing changes.
            let stale = try await Self.send(
                client, signer, .post, "/v1/admin/users/\(user.supportId)/balance",
                body: BalanceRequest(balance: 1_000, reason: "Ticket #43", expected: 200))
            #expect(stale.status == .conflict)
            #expect(String(buffer: stale.body).contains(#""code":"balance-changed""#))
            #expect(String(buffer: stale.body).contains("it is 400,200 now, not 200"))
            // Against the balance there now: a ledger adjustment in the server wallet.
            let set = try Self.decode(
                BalanceChange.self,
                try await Self.send(
                    client, signer, .post, "/v1/admin/users/\(user.supportId)/balance",
                    body: BalanceRequest(balance: 1_000, reason: "Ticket #43", expected: 400_200)))
            #expect(set == BalanceChange(supportId: user.supportId, before: 400_200, after: 1_000, via: .ledger))
            let me = try Fixture.decode(
                MeResponse.self,
                try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(user.token)))
            #expect(me.balance == 1_000)

            // The user's timeline tells the whole story, newest first.
            let detail = try Self.decode(
                UserDetail.self, try await Self.send(client, signer, .get, "/v1/admin/users/\(user.supportId)"))
            #expect(detail.user.balance == 1_000)
            #expect(detail.walletMode == .server)
            #expect(Set(detail.timeline.map(\.kind)) == [.purchase, .grantCreated, .grantClaimed, .adjustment])
            #expect(detail.timeline.first { $0.kind == .purchase }?.credits == 200)
            #expect(detail.timeline.first { $0.kind == .adjustment }?.balanceAfter == 1_000)

            // The audit log has who, what, before and after.
            let audit = try Self.decode(
                [AuditEvent].self, try await Self.send(client, signer, .get, "/v1/admin/audit"))
            #expect(audit.map(\.action) == ["balance.set", "grant.create"])
            #expect(audit.allSatisfy { $0.actor.hasPrefix("support laptop (key ") && $0.subject == user.supportId })
            #expect(audit[0].before == #"{"balance":400200}"#)
            #expect(audit[0].after == #"{"balance":1000,"reason":"Ticket #43","via":"ledger"}"#)

            // The dashboard counts it all.
            let figures = try Self.decode(
                DashboardFigures.self, try await Self.send(client, signer, .get, "/v1/admin/dashboard"))
            #expect(figures.users == 2 && figures.purchases == 1 && figures.claimedGrants == 1)
            #expect(figures.days.count == 30 && figures.days.last?.purchases == 1)
        }
    }

    @Test(
        "unsigned, unknown-key, wrongly signed, tampered, stale, replayed and revoked requests are refused",
        arguments: ServerEngine.allCases)
    func refusals(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store)
        let signer = try await Self.key(in: store)
        let stranger = try AdminRequestSigner(
            keyId: signer.keyId, privateKeyPEM: NewAdminKey(name: "x", at: Self.now).privateKeyPEM)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let grant = GrantRequest(supportId: user.supportId, credits: 5, reason: "Ticket #1")
            func expectRefused(_ response: TestResponse, _ code: String) throws {
                #expect(response.status == .unauthorized)
                #expect(try Self.errorCode(response) == code)
            }
            try expectRefused(
                try await client.execute(
                    uri: "/v1/admin/grants", method: .post, body: ByteBuffer(data: try JSONEncoder().encode(grant))),
                "unsigned")
            let unknown = try AdminRequestSigner(
                keyId: "000000000000000000000000", privateKeyPEM: NewAdminKey(name: "y", at: Self.now).privateKeyPEM)
            try expectRefused(try await Self.send(client, unknown, .get, "/v1/admin/users"), "unknown-key")
            try expectRefused(
                try await Self.send(client, stranger, .post, "/v1/admin/grants", body: grant), "bad-signature")

            // A genuine signature moved to another body or another query no longer matches.
            let bytes = try JSONEncoder().encode(grant)
            func signed(host: String = "localhost", path: String = "/v1/admin/grants?environment=Sandbox") throws
                -> HTTPFields
            {
                var fields = HTTPFields()
                for header in try signer.headers(method: "POST", host: host, body: bytes, path: path, at: Self.now) {
                    fields[HTTPField.Name(header.name)!] = header.value
                }
                return fields
            }
            let headers = try signed()
            var richer = grant
            richer.credits = 5_000_000
            try expectRefused(
                try await client.execute(
                    uri: "/v1/admin/grants?environment=Sandbox", method: .post, headers: headers,
                    body: ByteBuffer(data: try JSONEncoder().encode(richer))),
                "bad-signature")
            try expectRefused(
                try await client.execute(
                    uri: "/v1/admin/grants?environment=Production", method: .post, headers: headers,
                    body: ByteBuffer(data: bytes)),
                "bad-signature")

            // Nor to another method, or to another server (the Host it was signed for).
            try expectRefused(
                try await client.execute(
                    uri: "/v1/admin/grants?environment=Sandbox", method: .get, headers: headers,
                    body: ByteBuffer(data: bytes)),
                "bad-signature")
            let elsewhere = try signed(host: "support.example.com")
            try expectRefused(
                try await client.execute(
                    uri: "/v1/admin/grants?environment=Sandbox", method: .post, headers: elsewhere,
                    body: ByteBuffer(data: bytes)),
                "bad-signature")
            // A write that does not name its environment is refused, however well signed.
            let unnamed = try signed(path: "/v1/admin/grants")
            let noEnvironment = try await client.execute(
                uri: "/v1/admin/grants", method: .post, headers: unnamed, body: ByteBuffer(data: bytes))
            #expect(noEnvironment.status == .badRequest)
            #expect(try Self.errorCode(noEnvironment) == "environment-required")

            // Dated outside five minutes, either way.
            try expectRefused(
                try await Self.send(
                    client, signer, .get, "/v1/admin/users", at: Self.now.addingTimeInterval(-301)),
                "stale")
            try expectRefused(
                try await Self.send(client, signer, .get, "/v1/admin/users", at: Self.now.addingTimeInterval(301)),
                "stale")
            var badDate = headers
            badDate[HTTPField.Name(AdminRequestSignature.dateHeader)!] = "yesterday"
            try expectRefused(
                try await client.execute(
                    uri: "/v1/admin/grants?environment=Sandbox", method: .post, headers: badDate,
                    body: ByteBuffer(data: bytes)),
                "bad-date")

            // Accepted once; the same signed request again is a replay.
            let first = try await client.execute(
                uri: "/v1/admin/grants?environment=Sandbox", method: .post, headers: headers,
                body: ByteBuffer(data: bytes))
            #expect(first.status == .created)
            try expectRefused(
                try await client.execute(
                    uri: "/v1/admin/grants?environment=Sandbox", method: .post, headers: headers,
                    body: ByteBuffer(data: bytes)),
                "replayed")

            #expect(try await store.revokeAdminKey(id: signer.keyId, at: Self.now))
            try expectRefused(try await Self.send(client, signer, .get, "/v1/admin/users"), "revoked-key")

            // Of all those attempts, only the one accepted request changed anything.
            let grants = try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10)
            #expect(grants.map(\.credits) == [5])
            #expect(try await store.auditEvents(environment: .sandbox, subject: nil, limit: 10).count == 1)
        }
    }

    @Test(
        "bad input is refused with a clear error and changes nothing; Sandbox-only cleanup; device-wallet balance",
        arguments: ServerEngine.allCases)
    func inputAndEnvironments(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store)
        let signer = try await Self.key(in: store)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let zero = try await Self.send(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: user.supportId, credits: 0, reason: "x"))
            #expect(zero.status == .badRequest)
            let noReason = try await Self.send(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: user.supportId, credits: 5, reason: "  "))
            #expect(noReason.status == .badRequest)
            let nobody = try await Self.send(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: "_000000000000", credits: 5, reason: "x"))
            #expect(nobody.status == .notFound)
            let notAnId = try await Self.send(
                client, signer, .get, "/v1/admin/users/robert%27%29%3B%20DROP%20TABLE%20users%3B--")
            #expect(notAnId.status == .badRequest || notAnId.status == .notFound)
            let bogus = try await Self.send(client, signer, .get, "/v1/admin/users?environment=Bogus")
            #expect(bogus.status == .badRequest)
            let malformed = try await Self.send(
                client, signer, .post, "/v1/admin/grants", body: ["supportId": user.supportId])
            #expect(malformed.status == .badRequest)
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).isEmpty)

            // Production sees nothing of Sandbox, and its grants cannot be bulk-deleted.
            let production = try Self.decode(
                UserSearchResult.self,
                try await Self.send(client, signer, .get, "/v1/admin/users?environment=Production"))
            #expect(production.users.isEmpty)
            let forbidden = try await Self.send(
                client, signer, .post, "/v1/admin/grants/delete-all?environment=Production")
            #expect(forbidden.status == .forbidden)

            // Device wallet: the backed-up balance support saw is checked too (none yet: 0).
            let stale = try await Self.send(
                client, signer, .post, "/v1/admin/users/\(user.supportId)/balance",
                body: BalanceRequest(balance: 750, reason: "Ticket #7", expected: 10))
            #expect(stale.status == .conflict && String(buffer: stale.body).contains("balance-changed"))
            // Setting the balance writes an admin backup the app accepts.
            let set = try Self.decode(
                BalanceChange.self,
                try await Self.send(
                    client, signer, .post, "/v1/admin/users/\(user.supportId)/balance",
                    body: BalanceRequest(balance: 750, reason: "Ticket #7")))
            #expect(set == BalanceChange(supportId: user.supportId, before: 0, after: 750, via: .backup))
            let backup = try Fixture.decode(
                BackupBody.self,
                try await client.execute(uri: "/v1/me/backup", method: .get, headers: Fixture.bearer(user.token)))
            #expect(backup.value == 750 && backup.writer == "admin")

            _ = try await Self.send(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: user.supportId, credits: 5, reason: "test"))
            let deleted = try Self.decode(
                DeletedGrants.self, try await Self.send(client, signer, .post, "/v1/admin/grants/delete-all"))
            #expect(deleted.deleted == 1)
            let audit = try Self.decode([AuditEvent].self, try await Self.send(client, signer, .get, "/v1/admin/audit"))
            #expect(audit.map(\.action) == ["grants.delete-all", "grant.create", "balance.set"])
        }
    }

    @Test(
        "the app's Verify Purchases report reaches support; a data request deletes the customer once, audited",
        arguments: ServerEngine.allCases)
    func verifyReportAndDeletion(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let setup = try Fixture.Setup(store: store, wallet: .server)
        let signer = try await Self.key(in: store)
        try await setup.app.test(.router) { client in
            let user = try Fixture.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let bought = try await setup.store.purchase(
                account: "alice", productId: "com.example.credits", quantity: 1, appAccountToken: user.appAccountToken)
            let transactionId = try #require(bought.transactionIds.first)
            let delivered = try await client.execute(
                uri: "/v1/transactions", method: .post, headers: Fixture.bearer(user.token),
                body: try Fixture.body(
                    TransactionRequest(signedTransaction: try await setup.store.signedTransaction(id: transactionId))))
            #expect(delivered.status == .ok)

            func report(_ items: [VerifyReportItem]) async throws -> TestResponse {
                try await client.execute(
                    uri: "/v1/me/verify-report", method: .put, headers: Fixture.bearer(user.token),
                    body: try Fixture.body(VerifyReportRequest(items: items)))
            }
            let good = VerifyReportItem(
                transactionId: transactionId, productId: "com.example.credits", finished: true, verified: true,
                verdict: "alreadyRecorded")
            var lost = good
            lost.transactionId = "2000000999"
            lost.verdict = "couldNotBeVerified"
            let saved = try await report([good, lost])
            #expect(saved.status == .ok)
            #expect(try Fixture.decode(VerifyReportResponse.self, saved).items == 2)
            var bad = good
            bad.verdict = "maybe"
            #expect(try await report([bad]).status == .badRequest)
            bad = good
            bad.transactionId = "2000 0001"
            #expect(try await report([bad]).status == .badRequest)
            #expect(try await report(Array(repeating: good, count: 501)).status == .badRequest)
            let unsigned = try await client.execute(
                uri: "/v1/me/verify-report", method: .put,
                body: try Fixture.body(VerifyReportRequest(items: [good])))
            #expect(unsigned.status == .unauthorized)

            let detail = try Self.decode(
                UserDetail.self, try await Self.send(client, signer, .get, "/v1/admin/users/\(user.supportId)"))
            let verify = try #require(detail.verifyReport)
            #expect(verify.items.map(\.verdict) == [.alreadyRecorded, .couldNotBeVerified])
            #expect(verify.summary == "2 transactions: 1 could not be verified, 1 already recorded")
            #expect(detail.purchases.map(\.transactionId) == [transactionId])
            #expect(detail.purchases.first?.priceText != nil)

            // The data request: the closing entry, the token refused at once, nothing more given, once.
            let deleted = try await Self.send(client, signer, .post, "/v1/admin/users/\(user.supportId)/delete")
            #expect(deleted.status == .ok)
            let done = try Self.decode(DeletionView.self, deleted)
            #expect(done.supportId == user.supportId && done.closedBalance == 100 && done.users == 1)
            let me = try await client.execute(uri: "/v1/me", method: .get, headers: Fixture.bearer(user.token))
            #expect(me.status == .unauthorized)
            let grant = try await Self.send(
                client, signer, .post, "/v1/admin/grants",
                body: GrantRequest(supportId: user.supportId, credits: 5, reason: "after deletion"))
            #expect(grant.status == .badRequest)
            let again = try await Self.send(client, signer, .post, "/v1/admin/users/\(user.supportId)/delete")
            #expect(again.status == .badRequest)
            let after = try Self.decode(
                UserDetail.self, try await Self.send(client, signer, .get, "/v1/admin/users/\(user.supportId)"))
            #expect(after.user.deletedAt == Self.now && after.user.balance == 0 && after.verifyReport == nil)
            #expect(after.purchases.map(\.transactionId) == [transactionId])
            let audit = try Self.decode(
                [AuditEvent].self, try await Self.send(client, signer, .get, "/v1/admin/audit"))
            #expect(audit.map(\.action) == ["customer.delete"])
            #expect(audit.first?.after?.contains(#""closedBalance":100"#) == true)
        }
    }

    @Test("the CLI reads an older server's figures and customer detail, without the fields added since")
    func olderServer() throws {
        let figures = Data(
            (#"{"users":1,"pendingGrants":0,"claimedGrants":0,"purchases":2,"refunds":0,"usersInDeficit":0,"#
                + #""outstandingDeficit":0,"days":[],"otherEnvironmentPurchases":0}"#).utf8)
        let read = try AdminJSON.decoder.decode(DashboardFigures.self, from: figures)
        #expect(read.purchases == 2 && read.revenue.isEmpty && read.loyaltyLifetimes.isEmpty)
        let detail = Data(
            (#"{"user":{"supportId":"_aaaaaaaaaaa1","createdAt":"2026-01-01T00:00:00Z","balance":5,"deficit":0},"#
                + #""environment":"Sandbox","walletMode":"device","entitlements":[],"grants":[],"timeline":[]}"#).utf8)
        let user = try AdminJSON.decoder.decode(UserDetail.self, from: detail)
        #expect(user.user.balance == 5 && user.purchases.isEmpty && user.subscriptions.isEmpty)
        #expect(user.verifyReport == nil)
    }

    @Test("a customer's order id (from Apple's receipt email) finds them through Look Up Order ID")
    func orderId() async throws {
        let setup = try NotificationTests.Setup(store: InMemoryStore())
        let user = try await setup.createUser()
        let ids = try await setup.apple.purchase(
            account: "olga", productId: "com.example.credits", quantity: 2, appAccountToken: user.appAccountToken
        ).transactionIds
        let first = try #require(ids.first)
        let orderId = try #require(await setup.apple.orderId(of: first))
        let signer = try await Self.key(in: setup.store)
        try await RecoveryTests.withAppleAPI(setup) { api in
            let app = try setup.application(api: api)
            try await app.test(.router) { client in
                #expect(try await setup.deliver(after: 0, with: client) == ["applied"])
                let now = setup.clock.now()
                let found = try Self.decode(
                    UserSearchResult.self,
                    try await Self.send(client, signer, .get, "/v1/admin/users?search=\(orderId)", at: now))
                #expect(found.matchedBy == .orderId)
                #expect(found.users.map(\.supportId) == [user.supportId])
                let unknown = try Self.decode(
                    UserSearchResult.self,
                    try await Self.send(client, signer, .get, "/v1/admin/users?search=MNOSUCHORD", at: now))
                #expect(unknown.users.isEmpty)
                let elsewhere = try await Self.send(
                    client, signer, .get, "/v1/admin/users?search=\(orderId)&environment=Production", at: now)
                #expect(elsewhere.status == .badRequest)
            }
        }
    }
}
