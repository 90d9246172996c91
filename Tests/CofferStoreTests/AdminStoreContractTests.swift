import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// The ``AdminStore`` contract every engine keeps (``StoreEngine``): admins, sessions, keys, seen signatures, roles, two-factor and the audit log.
@Suite("AdminStore contract")
struct AdminStoreContractTests {
    @Test("admins: unique names, password change ends the admin's sessions only", arguments: StoreEngine.allCases)
    func admins(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let ada = Admin(name: "ada", passwordHash: "$2b$12$first", createdAt: Make.start)
        let bob = Admin(name: "bob", passwordHash: "$2b$12$bob", createdAt: Make.start)
        try await store.createAdmin(ada)
        try await store.createAdmin(bob)
        await #expect(throws: StoreError.alreadyExists("admin ada")) {
            try await store.createAdmin(Admin(name: "ada", passwordHash: "x", createdAt: Make.start))
        }
        #expect(try await store.admin(name: "ada") == ada)
        #expect(try await store.admin(name: "nobody") == nil)
        #expect(try await store.admins().map(\.name) == ["ada", "bob"])

        let expires = Make.start.addingTimeInterval(3_600)
        let adaSession = AdminSession(
            tokenHash: "t-ada", adminId: ada.id, adminName: "ada", csrfToken: "c1", environment: .sandbox,
            createdAt: Make.start, expiresAt: expires)
        let bobSession = AdminSession(
            tokenHash: "t-bob", adminId: bob.id, adminName: "bob", csrfToken: "c2", environment: .production,
            createdAt: Make.start, expiresAt: expires)
        try await store.createSession(adaSession)
        try await store.createSession(bobSession)
        #expect(try await store.session(tokenHash: "t-ada") == adaSession)

        let changed = Make.start.addingTimeInterval(60)
        #expect(try await store.setAdminPassword(name: "ada", passwordHash: "$2b$12$second", at: changed))
        #expect(try await !store.setAdminPassword(name: "nobody", passwordHash: "x", at: changed))
        let after = try #require(try await store.admin(name: "ada"))
        #expect(after.passwordHash == "$2b$12$second" && after.passwordChangedAt == changed)
        #expect(try await store.session(tokenHash: "t-ada") == nil)
        #expect(try await store.session(tokenHash: "t-bob") == bobSession)
    }

    @Test("sessions switch environment, end, and expire", arguments: StoreEngine.allCases)
    func sessions(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let ada = Admin(name: "ada", passwordHash: "h", createdAt: Make.start)
        try await store.createAdmin(ada)
        func session(_ token: String, expiring offset: TimeInterval) -> AdminSession {
            AdminSession(
                tokenHash: token, adminId: ada.id, adminName: "ada", csrfToken: "csrf-\(token)",
                environment: .sandbox, createdAt: Make.start, expiresAt: Make.start.addingTimeInterval(offset))
        }
        try await store.createSession(session("old", expiring: 10))
        try await store.createSession(session("new", expiring: 1_000))
        await #expect(throws: StoreError.self) { try await store.createSession(session("new", expiring: 5)) }
        try await store.setSessionEnvironment(tokenHash: "new", environment: .production)
        #expect(try await store.session(tokenHash: "new")?.environment == .production)
        #expect(try await store.deleteSessions(expiredBefore: Make.start.addingTimeInterval(100)) == 1)
        #expect(try await store.session(tokenHash: "old") == nil)
        try await store.deleteSession(tokenHash: "new")
        #expect(try await store.session(tokenHash: "new") == nil)
    }

    @Test("signing keys: unique ids, listed oldest first, revoked once", arguments: StoreEngine.allCases)
    func keys(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let first = AdminKey(id: "k1", name: "laptop", publicKeyPEM: "PEM1", createdAt: Make.start)
        let second = AdminKey(
            id: "k2", name: "script", publicKeyPEM: "PEM2", createdAt: Make.start.addingTimeInterval(1))
        try await store.createAdminKey(second)
        try await store.createAdminKey(first)
        await #expect(throws: StoreError.alreadyExists("key k1")) { try await store.createAdminKey(first) }
        #expect(try await store.adminKeys() == [first, second])
        let revoked = Make.start.addingTimeInterval(30)
        #expect(try await store.revokeAdminKey(id: "k1", at: revoked))
        #expect(try await !store.revokeAdminKey(id: "k1", at: revoked))
        #expect(try await !store.revokeAdminKey(id: "nope", at: revoked))
        #expect(try await store.adminKey(id: "k1")?.revokedAt == revoked)
        #expect(try await store.adminKey(id: "k2")?.revokedAt == nil)
        #expect(try await store.adminKey(id: "nope") == nil)
    }

    @Test("a signature is accepted once until it is forgotten", arguments: StoreEngine.allCases)
    func signatures(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let early = Make.start
        #expect(try await store.recordSignature("sig-a", at: early, forgetBefore: early.addingTimeInterval(-600)))
        #expect(try await !store.recordSignature("sig-a", at: early, forgetBefore: early.addingTimeInterval(-600)))
        #expect(try await store.recordSignature("sig-b", at: early, forgetBefore: early.addingTimeInterval(-600)))
        // Ten minutes on, sig-a is forgotten (its date is outside the window, so it is refused by that).
        let later = early.addingTimeInterval(601)
        #expect(try await store.recordSignature("sig-a", at: later, forgetBefore: later.addingTimeInterval(-600)))
    }

    @Test("an admin's time zone is kept", arguments: StoreEngine.allCases)
    func timeZone(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        try await store.createAdmin(Admin(name: "ada", passwordHash: "h", createdAt: Make.start))
        #expect(try await store.admin(name: "ada")?.timeZone == nil)
        #expect(try await store.setAdminTimeZone(name: "ada", timeZone: "Europe/Paris"))
        #expect(try await store.admin(name: "ada")?.timeZone == "Europe/Paris")
        #expect(try await store.setAdminTimeZone(name: "ada", timeZone: nil))
        #expect(try await store.admin(name: "ada")?.timeZone == nil)
        #expect(try await !store.setAdminTimeZone(name: "nobody", timeZone: "UTC"))
    }

    @Test(
        "roles, grant limits and two-factor are kept; an admin changes in one step; a pending session is completed once",
        arguments: StoreEngine.allCases)
    func rolesAndTwoFactor(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let sam = Admin(
            name: "sam", passwordHash: "h", createdAt: Make.start, role: .support, grantLimit: 50_000,
            twoFactorSecret: "ABCDEFGHIJKLMNOPQRST", twoFactorLastStep: 7, recoveryCodeHashes: ["a1", "b2"])
        try await store.createAdmin(sam)
        #expect(try await store.admin(name: "sam") == sam)
        try await store.createAdmin(Admin(name: "ada", passwordHash: "h", createdAt: Make.start))
        #expect(try await store.admin(name: "ada")?.role == .owner)

        // A used step is refused; a later one is kept; a recovery code is used up once.
        #expect(try await store.updateAdmin(name: "sam") { $0.using(step: 7) } == nil)
        #expect(try await store.updateAdmin(name: "sam") { $0.using(step: 8) }?.twoFactorLastStep == 8)
        #expect(try await store.updateAdmin(name: "sam") { $0.using(recoveryCodeHash: "b2") } != nil)
        #expect(try await store.updateAdmin(name: "sam") { $0.using(recoveryCodeHash: "b2") } == nil)
        #expect(try await store.updateAdmin(name: "nobody") { $0 } == nil)
        let promoted = try await store.updateAdmin(name: "sam") { admin in
            var changed = admin
            changed.role = .owner
            changed.grantLimit = nil
            changed.twoFactorSecret = nil
            changed.recoveryCodeHashes = []
            // The name and password are not the change's to make.
            changed.passwordHash = "other"
            return changed
        }
        let stored = try #require(try await store.admin(name: "sam"))
        #expect(promoted?.role == .owner && stored.role == .owner && stored.grantLimit == nil)
        #expect(stored.twoFactorSecret == nil && stored.recoveryCodeHashes.isEmpty && stored.twoFactorLastStep == 8)
        #expect(stored.passwordHash == "h")

        let pending = AdminSession(
            tokenHash: "t-sam", adminId: sam.id, adminName: "sam", csrfToken: "c", environment: .sandbox,
            createdAt: Make.start, expiresAt: Make.start.addingTimeInterval(300), twoFactorPending: true)
        try await store.createSession(pending)
        #expect(try await store.session(tokenHash: "t-sam") == pending)
        for token in ["t-sam-2", "t-sam-3"] {
            var other = pending
            other.tokenHash = token
            try await store.createSession(other)
        }
        let ada = try #require(try await store.admin(name: "ada"))
        try await store.createSession(
            AdminSession(
                tokenHash: "t-ada", adminId: ada.id, adminName: "ada", csrfToken: "c", environment: .sandbox,
                createdAt: Make.start, expiresAt: Make.start.addingTimeInterval(300)))
        #expect(try await store.deleteSessions(adminId: sam.id, except: "t-sam-2") == 2)
        #expect(try await store.session(tokenHash: "t-sam-2") != nil)
        #expect(try await store.session(tokenHash: "t-sam") == nil)
        #expect(try await store.session(tokenHash: "t-ada") != nil)
        #expect(try await store.deleteSessions(adminId: sam.id, except: nil) == 1)
    }

    @Test(
        "the audit log keeps who, what, before and after, newest first, per environment",
        arguments: StoreEngine.allCases)
    func audit(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let first = AuditEvent(
            environment: .sandbox, actor: "support", action: "grant.create", subject: "_aaaaaaaaaaa1", before: nil,
            after: #"{"credits":5}"#, at: Make.start)
        let second = AuditEvent(
            environment: .sandbox, actor: "admin", action: "balance.set", subject: "_aaaaaaaaaaa1", before: "10",
            after: "20",
            at: Make.start.addingTimeInterval(1))
        let elsewhere = AuditEvent(environment: .production, actor: "admin", action: "x", subject: "y", at: Make.start)
        for event in [first, second, elsewhere] { try await store.recordAudit(event) }
        #expect(try await store.auditEvents(environment: .sandbox, subject: nil, limit: 10) == [second, first])
        #expect(try await store.auditEvents(environment: .sandbox, subject: nil, limit: 1) == [second])
        #expect(try await store.auditEvents(environment: .production, subject: nil, limit: 10) == [elsewhere])
        #expect(
            try await store.auditEvents(environment: .sandbox, subject: "_aaaaaaaaaaa1", limit: 10) == [second, first])
        #expect(try await store.auditEvents(environment: .sandbox, subject: "y", limit: 10).isEmpty)
    }

    @Test("an audit entry's id is written once: a second write of it is refused", arguments: StoreEngine.allCases)
    func auditOnce(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let event = AuditEvent(
            environment: .sandbox, actor: "ada", action: "grant.create", subject: "_aaaaaaaaaaa1", at: Make.start)
        try await store.recordAudit(event)
        await #expect(throws: StoreError.alreadyExists("audit \(event.id)")) { try await store.recordAudit(event) }
        #expect(
            try await store.auditEvents(environment: .sandbox, query: AuditQuery(), limit: 10).map(\.id) == [event.id])
    }

    @Test(
        "the audit log filters by admin, customer and action family; no character of a filter is a pattern",
        arguments: StoreEngine.allCases)
    func auditQuery(engine: StoreEngine) async throws {
        let store = try await engine.makeStore()
        let events = [
            ("ada from 127.0.0.1", "grant.create", "_aaaaaaaaaaa1"),
            ("ada from 10.0.0.2", "grant.cancel", "_aaaaaaaaaaa1"),
            ("adam from 127.0.0.1", "balance.set", "_bbbbbbbbbbb2"), ("cli:root", "grants.delete-all", "grants"),
            ("k_1%", "grant.create", "_bbbbbbbbbbb2"),
        ]
        for (offset, (actor, action, subject)) in events.enumerated() {
            try await store.recordAudit(
                AuditEvent(
                    environment: .sandbox, actor: actor, action: action, subject: subject,
                    at: Make.start.addingTimeInterval(Double(offset))))
        }
        try await store.recordAudit(
            AuditEvent(
                environment: .production, actor: "ada from 127.0.0.1", action: "grant.create", subject: "x",
                at: Make.start))
        func actions(_ query: AuditQuery) async throws -> [String] {
            try await store.auditEvents(environment: .sandbox, query: query, limit: 10).map(\.action)
        }
        #expect(try await actions(AuditQuery()).count == 5)
        #expect(try await actions(AuditQuery(admin: "ada")) == ["grant.cancel", "grant.create"])
        #expect(try await actions(AuditQuery(admin: "adam")) == ["balance.set"])
        #expect(try await actions(AuditQuery(admin: "cli:root")) == ["grants.delete-all"])
        #expect(try await actions(AuditQuery(admin: "k_1%")) == ["grant.create"])
        #expect(try await actions(AuditQuery(admin: "k%")).isEmpty)
        #expect(try await actions(AuditQuery(admin: "ad")).isEmpty)
        #expect(try await actions(AuditQuery(action: "grant")) == ["grant.create", "grant.cancel", "grant.create"])
        #expect(try await actions(AuditQuery(action: "grants")) == ["grants.delete-all"])
        #expect(try await actions(AuditQuery(action: "grant.create")) == ["grant.create", "grant.create"])
        #expect(try await actions(AuditQuery(action: "gr%")).isEmpty)
        #expect(
            try await actions(AuditQuery(subject: "_aaaaaaaaaaa1", admin: "ada", action: "grant.cancel"))
                == ["grant.cancel"])
        #expect(
            try await store.auditEvents(environment: .sandbox, query: AuditQuery(admin: "ada"), limit: 1).count == 1)
    }
}
