import CofferAPI
import CofferAdmin
import CofferCore
import CofferStore
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The third security round's attacks by admins who left: an owner takes them off, and their sessions end at once.
extension SecurityTests {
    @Test(
        "a disabled admin cannot sign in and their sessions end at once; the last owner cannot be disabled",
        arguments: ServerEngine.allCases)
    func disabledAdmins(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        try await PanelTests.admin(in: store)
        let hasher = PasswordHasher(cost: 4)
        try await store.createAdmin(
            Admin(
                name: "sam", passwordHash: await hasher.hash(PanelTests.password), createdAt: AdminAPITests.now,
                role: .support, grantLimit: 100))
        let setup = try Fixture.Setup(store: store)
        let service = AdminService(store: store, catalog: try Catalog(products: []), walletMode: .device)
        try await setup.app.test(.router) { client in
            // Sam, who is leaving, is signed in.
            var sam = PanelTests.Browser()
            #expect(try await sam.signIn(client, name: "sam").status == .seeOther)
            #expect(try await sam.get(client, "/admin").status == .ok)
            // Ada, the owner, takes Sam off on the Admins page.
            var ada = PanelTests.Browser()
            _ = try await ada.signIn(client)
            let page = try await ada.get(client, "/admin/admins")
            #expect(String(buffer: page.body).contains(#"id="disable-sam""#))
            #expect(!String(buffer: page.body).contains(#"id="disable-ada""#), "nobody disables themself")
            let csrf = try PanelTests.Browser.csrf(page)
            let disabled = try await ada.post(client, "/admin/admins/sam/disable", [("csrf", csrf)])
            #expect(disabled.headers[.location] == "/admin/admins?notice=disabled")
            // Sam's open session ends at once, and the password no longer signs in.
            let after = try await sam.get(client, "/admin")
            #expect(after.status == .seeOther && after.headers[.location] == "/admin/login")
            let again = try await sam.signIn(client, name: "sam")
            #expect(again.status == .forbidden)
            #expect(String(buffer: again.body).contains("This admin is disabled"))
            // No session was opened: the panel still sends Sam to sign-in.
            #expect(try await sam.get(client, "/admin").headers[.location] == "/admin/login")
            let listed = String(buffer: try await ada.get(client, "/admin/admins").body)
            #expect(listed.contains(#"id="disabled-sam""#))

            // Ada is the only owner left who is not disabled: she cannot be disabled, by the CLI's way either.
            await #expect(throws: AdminError.self) {
                _ = try await service.setDisabled(environment: .sandbox, name: "ada", disabled: true, actor: "test")
            }
            #expect(try await store.admin(name: "ada")?.isEnabled == true)
            #expect(try await ada.get(client, "/admin").status == .ok)
            // Enabled again, Sam signs in.
            let enabled = try await ada.post(client, "/admin/admins/sam/enable", [("csrf", csrf)])
            #expect(enabled.headers[.location] == "/admin/admins?notice=enabled")
            #expect(try await sam.signIn(client, name: "sam").status == .seeOther)
        }
        let audit = try await store.auditEvents(environment: .sandbox, query: AuditQuery(), limit: 50).map(\.action)
        #expect(audit.contains("admin.disable") && audit.contains("admin.enable"))
    }
}

extension SecurityTests {
    @Test(
        "wrong two-factor codes count in the store across instances: after 10 in an hour the account waits, and the owner sees it",
        arguments: ServerEngine.allCases)
    func sharedCodeFailures(engine: ServerEngine) async throws {
        let store = try await engine.makeStore()
        let hasher = PasswordHasher(cost: 4)
        let secret = TwoFactor.newSecret()
        try await store.createAdmin(
            Admin(
                name: "ada", passwordHash: await hasher.hash(PanelTests.password), createdAt: AdminAPITests.now,
                twoFactorSecret: secret))
        try await store.createAdmin(
            Admin(name: "bob", passwordHash: await hasher.hash(PanelTests.password), createdAt: AdminAPITests.now))
        // Two instances on one database, as behind a load balancer.
        let instances = [try Fixture.Setup(store: store), try Fixture.Setup(store: store)]
        let now = ClientAPITests.start.addingTimeInterval(3_600)
        for round in 0..<AccountGuard.codeLimit {
            try await instances[round % 2].app.test(.router) { client in
                var browser = PanelTests.Browser()
                #expect(try await browser.signIn(client).headers[.location] == "/admin/login/code")
                let csrf = try PanelTests.Browser.csrf(try await browser.get(client, "/admin/login/code"))
                let wrong = try await browser.post(client, "/admin/login/code", [("code", "000000"), ("csrf", csrf)])
                #expect(wrong.status == .unauthorized, "round \(round)")
            }
        }
        try await instances[0].app.test(.router) { client in
            // Even the right code waits now, on either instance.
            var browser = PanelTests.Browser()
            _ = try await browser.signIn(client)
            let csrf = try PanelTests.Browser.csrf(try await browser.get(client, "/admin/login/code"))
            let right = TwoFactor.code(secret: secret, step: TwoFactor.step(at: now))
            let refused = try await browser.post(client, "/admin/login/code", [("code", right), ("csrf", csrf)])
            #expect(refused.status == .tooManyRequests)
            #expect(String(buffer: refused.body).contains("Too many wrong codes for this account"))
            // The owner is told on the Admins page.
            var owner = PanelTests.Browser()
            _ = try await owner.signIn(client, name: "bob")
            let admins = String(buffer: try await owner.get(client, "/admin/admins").body)
            #expect(
                admins.contains(#"id="codes-ada""#) && admins.contains("10 wrong two-factor codes in the last hour"))
        }
        #expect(
            try await store.failures(
                AccountGuard.Secret.code(account: "ada").key, since: now.addingTimeInterval(-AccountGuard.window))
                == AccountGuard.codeLimit)
    }
}
