import CofferAdmin
import CofferCore
import CofferStore
import CofferTestSupport
import Foundation
import Testing

/// Signing in to the panel as a use case, on a clock the test moves: passwords, the failures counted in the store,
/// two-factor codes and the sessions that follow.
@Suite("Panel sign-in")
struct AdminSignInTests {
    struct Setup {
        let clock = TestClock()
        let store = InMemoryStore()
        let service: AdminService
        let signIn: AdminSignIn
        let password: String

        init() async throws {
            service = AdminService(
                store: store, catalog: try Catalog(products: []), walletMode: .server, now: clock.reading)
            signIn = AdminSignIn(
                store: store, service: service, hasher: PasswordHasher(cost: 4), throttle: LoginThrottle(),
                sessionHours: 8, environment: .sandbox, now: clock.reading)
            password = try await service.createAdmin(
                environment: .sandbox, name: "ada", role: .owner, grantLimit: nil, hasher: PasswordHasher(cost: 4),
                actor: "test"
            ).password
        }

        /// Failures the store counts for ada's password from 192.0.2.1 in the last hour.
        func passwordFailures() async throws -> Int {
            let key = AccountGuard.Secret.password(account: "ada", address: "192.0.2.1").key
            return try await store.failures(key, since: clock.now().addingTimeInterval(-AccountGuard.window))
        }
    }

    @Test("a right password opens a session for its hours; a wrong one is counted in the store, then forgotten")
    func password() async throws {
        let setup = try await Setup()
        let wrong = try await setup.signIn.signIn(name: "ada", password: "nope", addressKey: "192.0.2.1")
        #expect(throws: AdminSignIn.Refusal.self) { try wrong.get() }
        #expect(try await setup.passwordFailures() == 1)
        let unknown = try await setup.signIn.signIn(name: "bob", password: "nope", addressKey: "192.0.2.1")
        #expect((try? unknown.get()) == nil)

        let opened = try await setup.signIn.signIn(name: "ada", password: setup.password, addressKey: "192.0.2.1").get()
        #expect(!opened.codeNext && opened.seconds == 8 * 3_600)
        #expect(opened.session.expiresAt == setup.clock.now().addingTimeInterval(8 * 3_600))
        #expect(try await setup.passwordFailures() == 0)
        #expect(try await setup.signIn.session(token: opened.token) == opened.session)
        // Past its hours on the clock the session is gone, and removed from the store.
        setup.clock.advance(8 * 3_600 + 1)
        #expect(try await setup.signIn.session(token: opened.token) == nil)
        #expect(try await setup.store.session(tokenHash: opened.session.tokenHash) == nil)
    }

    @Test("a password tried for the name 2fa:ADMIN counts as a password, never against the admin's code tries")
    func codePrefixName() async throws {
        let setup = try await Setup()
        for _ in 0..<3 {
            let refused = try await setup.signIn.signIn(name: "2fa:ada", password: "nope", addressKey: "192.0.2.1")
            #expect((try? refused.get()) == nil)
        }
        #expect(try await setup.signIn.guessedCodes(of: ["ada"]).isEmpty)
        let key = AccountGuard.Secret.password(account: "2fa:ada", address: "192.0.2.1").key
        #expect(try await setup.store.failures(key, since: setup.clock.now().addingTimeInterval(-3_600)) == 3)
    }

    @Test("a signed-in session takes no code: only a half-open one within its five minutes")
    func codeOnlyWhenPending() async throws {
        let setup = try await Setup()
        let opened = try await setup.signIn.signIn(name: "ada", password: setup.password, addressKey: "192.0.2.1").get()
        let refused = try await setup.signIn.checkCode("000000", session: opened.session, addressKey: "192.0.2.1")
        #expect((try? refused.get()) == nil)
        #expect(try await setup.signIn.session(token: opened.token) == opened.session, "the session stays as it was")
    }

    @Test("a disabled admin is refused, and a session opened before ends at its next request")
    func disabled() async throws {
        let setup = try await Setup()
        let opened = try await setup.signIn.signIn(name: "ada", password: setup.password, addressKey: "192.0.2.1").get()
        #expect(try await setup.signIn.admin(of: opened.session)?.name == "ada")
        _ = try await setup.service.createAdmin(
            environment: .sandbox, name: "zoe", role: .owner, grantLimit: nil, hasher: PasswordHasher(cost: 4),
            actor: "test")
        try await setup.service.setDisabled(environment: .sandbox, name: "ada", disabled: true, actor: "test")
        #expect(try await setup.signIn.admin(of: opened.session) == nil)
        #expect(try await setup.signIn.session(token: opened.token) == nil)
        let again = try await setup.signIn.signIn(name: "ada", password: setup.password, addressKey: "192.0.2.1")
        guard case .failure(let refusal) = again else {
            Issue.record("a disabled admin signed in")
            return
        }
        #expect(refusal.reason == .disabled && refusal.message.contains("disabled"))
    }

    @Test("with two-factor, the password opens only the code page for five minutes; three wrong codes end it")
    func twoFactor() async throws {
        let setup = try await Setup()
        let secret = TwoFactor.newSecret()
        _ = try await setup.service.enableTwoFactor(
            environment: .sandbox, name: "ada", secret: secret,
            code: TwoFactor.code(secret: secret, step: TwoFactor.step(at: setup.clock.now())), actor: "test")
        setup.clock.advance(60)

        let half = try await setup.signIn.signIn(name: "ada", password: setup.password, addressKey: "192.0.2.1").get()
        #expect(half.codeNext && half.seconds == AdminSignIn.codeSeconds)
        for attempt in 1...AdminSignIn.codeTries {
            let refused = try await setup.signIn.checkCode("000000", session: half.session, addressKey: "192.0.2.1")
            guard case .failure(let refusal) = refused else {
                Issue.record("a wrong code opened a session")
                return
            }
            #expect(refusal.reason == (attempt < AdminSignIn.codeTries ? .wrongCode : .tooManyCodes))
        }
        #expect(try await setup.signIn.session(token: half.token) == nil)

        setup.clock.advance(60)
        let next = try await setup.signIn.signIn(name: "ada", password: setup.password, addressKey: "192.0.2.1").get()
        let code = TwoFactor.code(secret: secret, step: TwoFactor.step(at: setup.clock.now()))
        let full = try await setup.signIn.checkCode(code, session: next.session, addressKey: "192.0.2.1").get()
        #expect(!full.codeNext && full.seconds == 8 * 3_600 && full.token != next.token)
        #expect(try await setup.signIn.session(token: next.token) == nil)
        #expect(try await setup.signIn.session(token: full.token)?.adminName == "ada")
        // The same code never works twice.
        let replayed = try await setup.signIn.signIn(name: "ada", password: setup.password, addressKey: "192.0.2.1")
        let reused = try await setup.signIn.checkCode(
            code, session: try replayed.get().session, addressKey: "192.0.2.1")
        #expect((try? reused.get()) == nil)
        #expect(try await setup.signIn.guessedCodes(of: ["ada"])["ada"] == AdminSignIn.codeTries + 1)
    }
}
