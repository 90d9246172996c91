import CofferAPI
import CofferAdmin
import CofferCore
import CofferServer
import CofferStore
import CofferTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Support's grant asked again after a lost answer: one grant, one audit entry, never a second credit.
@Suite("Grants asked again", .timeLimit(.minutes(1)))
struct GrantRetryTests {
    @Test("the database goes away after the grant is written and before its audit entry: asked again, one of each")
    func lostAnswer() async throws {
        let base = InMemoryStore()
        let store = CountingStore(base: base)
        let user = User(
            environment: .sandbox, supportId: try #require(SupportID("_9a47e7e7e701")), tokenHash: "h",
            createdAt: AdminAPITests.now)
        try await base.createUser(user)
        let service = AdminService(
            store: store, catalog: try Catalog(products: []), walletMode: .server, now: { AdminAPITests.now })
        let id = UUID()
        store.faults.arm(.loseCommit)
        await #expect(throws: StoreError.self) {
            _ = try await service.createGrant(
                environment: .sandbox, supportId: "_9a47e7e7e701", credits: 50, reason: "Ticket #1", actor: "ada",
                id: id)
        }
        #expect(store.faults.disarm().committed == ["createGrant"])
        let again = try await service.createGrant(
            environment: .sandbox, supportId: "_9a47e7e7e701", credits: 50, reason: "Ticket #1", actor: "ada", id: id)
        let third = try await service.createGrant(
            environment: .sandbox, supportId: "_9a47e7e7e701", credits: 50, reason: "Ticket #1", actor: "ada", id: id)
        #expect(again.id == id && third.id == id)
        #expect(try await base.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).map(\.id) == [id])
        let audited = try await base.auditEvents(environment: .sandbox, query: AuditQuery(), limit: 10)
        #expect(audited.filter { $0.action == "grant.create" }.map(\.id) == [id])
        // The same id for another grant is refused; nothing is made.
        await #expect(throws: AdminError.self) {
            _ = try await service.createGrant(
                environment: .sandbox, supportId: "_9a47e7e7e701", credits: 5_000, reason: "Ticket #1", actor: "ada",
                id: id)
        }
        #expect(try await base.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).count == 1)
    }

    @Test("a grant id that another audit entry holds still leaves the grant audited, once")
    func auditIdTaken() async throws {
        let store = InMemoryStore()
        let user = User(
            environment: .sandbox, supportId: try #require(SupportID("_9a47e7e7e702")), tokenHash: "h",
            createdAt: AdminAPITests.now)
        try await store.createUser(user)
        let taken = AuditEvent(
            environment: .sandbox, actor: "ada", action: "balance.set", subject: "_9a47e7e7e702", at: AdminAPITests.now)
        try await store.recordAudit(taken)
        let service = AdminService(
            store: store, catalog: try Catalog(products: []), walletMode: .server, now: { AdminAPITests.now })
        for _ in 0..<2 {
            let grant = try await service.createGrant(
                environment: .sandbox, supportId: "_9a47e7e7e702", credits: 9, reason: "Ticket #3", actor: "ada",
                id: taken.id)
            #expect(grant.id == taken.id)
        }
        let audited = try await store.auditEvents(environment: .sandbox, query: AuditQuery(), limit: 10)
        let grants = audited.filter { $0.action == "grant.create" }
        #expect(grants.count == 1)
        #expect(grants.first?.after?.lowercased().contains(taken.id.uuidString.lowercased()) == true)
        #expect(audited.contains { $0.id == taken.id && $0.action == "balance.set" })
    }

    @Test("the admin API: POST /v1/admin/grants with an id twice makes one grant; a bad id is refused")
    func adminAPI() async throws {
        let store = InMemoryStore()
        let setup = try ClientAPITests.Setup(store: store, wallet: .server)
        let signer = try await AdminAPITests.key(in: store)
        try await setup.app.test(.router) { client in
            let user = try ClientAPITests.decode(
                CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
            let id = UUID().uuidString.lowercased()
            let request = GrantRequest(supportId: user.supportId, credits: 70, reason: "Ticket #2", id: id)
            for _ in 0..<2 {
                let answer = try await AdminAPITests.send(client, signer, .post, "/v1/admin/grants", body: request)
                #expect(answer.status == .created)
                #expect(try AdminAPITests.decode(GrantView.self, answer).id.uuidString.lowercased() == id)
            }
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).count == 1)
            let bad = GrantRequest(supportId: user.supportId, credits: 70, reason: "Ticket #2", id: "not-a-uuid")
            let refused = try await AdminAPITests.send(client, signer, .post, "/v1/admin/grants", body: bad)
            #expect(refused.status == .badRequest)
            #expect(try await store.grants(environment: .sandbox, recipient: nil, status: nil, limit: 10).count == 1)
        }
    }
}
