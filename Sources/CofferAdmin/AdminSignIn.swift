import CofferCore
import CofferStore
import Foundation
import Synchronization

/// Signing in to the panel, as a use case with no HTTP in it: the password checked against bcrypt (a decoy hash
/// for unknown names, so they take as long), the failures that protect an account counted in the store for every
/// instance (``AccountGuard``) and this instance's throttle (``LoginThrottle``), two-factor codes, and the sessions
/// that follow. The panel turns its answers into pages and cookies.
public final class AdminSignIn: Sendable {
    /// How long the code page waits for the code after a right password, in seconds.
    public static let codeSeconds = 300
    /// Wrong codes a half-open session may take before the password is asked again.
    public static let codeTries = 3
    /// A bcrypt hash of nothing anyone knows, checked for unknown names so they take as long as known ones.
    static let decoyHash = "$2b$12$ZrNwFzbn4UAzJh1J6bqzEe0cYp7xLbXgE0dWv2Y3mKcS9q8mZ9Sta"

    /// A session opened: its token (for the cookie; only its hash is stored) and how long it lasts.
    public struct Opened: Sendable {
        /// The session's secret token.
        public var token: String
        /// The session as stored.
        public var session: AdminSession
        /// How long it lasts, in seconds.
        public var seconds: Int
        /// Whether only the code page opens until the admin's two-factor code is given.
        public var codeNext: Bool { session.twoFactorPending }
    }

    /// Why a sign-in step was refused; nothing was opened.
    public struct Refusal: Error, Sendable, Equatable {
        /// What went wrong.
        public enum Reason: Sendable, Equatable {
            /// The name or the password is wrong (which one is not said).
            case wrongPassword
            /// The admin is disabled.
            case disabled
            /// Too many failures or checks: try again after ``Refusal/retryAfter`` seconds.
            case throttled
            /// The code is wrong or was used already.
            case wrongCode
            /// Too many wrong codes for this session: it ended, and the password is asked again.
            case tooManyCodes
        }

        /// What went wrong.
        public var reason: Reason
        /// What the admin reads.
        public var message: String
        /// Seconds to wait, when throttled.
        public var retryAfter: Int?
    }

    private let store: any CofferStore
    private let service: AdminService
    private let hasher: PasswordHasher
    private let throttle: LoginThrottle
    private let sessionHours: Int
    private let environment: AppStoreEnvironment
    private let now: @Sendable () -> Date
    private let timerClock: any TimerClock
    private let failureLog: @Sendable (String) -> Void
    /// Wrong codes per half-open session, on this instance.
    private let codeFailures = Mutex<[String: Int]>([:])

    /// Creates the use case.
    ///
    /// - Parameters:
    ///   - store: Where admins, sessions and failures are kept.
    ///   - service: Support's operations (for the two-factor code check).
    ///   - hasher: The password hasher.
    ///   - throttle: This instance's sign-in throttle.
    ///   - sessionHours: How long a signed-in session lasts.
    ///   - environment: The environment a new session starts in (the server's).
    ///   - now: The clock.
    ///   - timerClock: The clock a busy throttle's short waits are kept on.
    ///   - failureLog: Told when a failure could not be counted (the database away).
    public init(
        store: any CofferStore, service: AdminService, hasher: PasswordHasher, throttle: LoginThrottle,
        sessionHours: Int, environment: AppStoreEnvironment, now: @escaping @Sendable () -> Date = { Date() },
        timerClock: any TimerClock = SystemTimerClock(), failureLog: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.timerClock = timerClock
        self.store = store
        self.service = service
        self.hasher = hasher
        self.throttle = throttle
        self.sessionHours = sessionHours
        self.environment = environment
        self.now = now
        self.failureLog = failureLog
    }

    /// The first step: a name and a password from `address` (`addressKey` is what the throttle counts it by: the
    /// address, or its /64 for IPv6). A right password opens a session; with two-factor on, one that opens only
    /// the code page for ``codeSeconds``.
    public func signIn(name: String, password: String, addressKey: String) async throws -> Result<Opened, Refusal> {
        guard name.utf8.count <= 200, password.utf8.count <= 1_024 else {
            return .failure(Refusal(reason: .wrongPassword, message: "Wrong name or password."))
        }
        let attempt: Attempt
        switch try await reserve(.password(account: name, address: addressKey), account: name, addressKey: addressKey)
        {
        case .success(let reserved): attempt = reserved
        case .failure(let refusal): return .failure(refusal)
        }
        let admin: Admin?
        let valid: Bool
        do {
            admin = try await store.admin(name: name)
            valid = await hasher.verify(password, hash: admin?.passwordHash ?? Self.decoyHash)
        } catch {
            await finish(attempt, succeeded: false)
            throw error
        }
        await finish(attempt, succeeded: admin != nil && valid)
        guard let admin, valid else {
            return .failure(Refusal(reason: .wrongPassword, message: "Wrong name or password."))
        }
        guard admin.isEnabled else {
            return .failure(
                Refusal(reason: .disabled, message: "This admin is disabled. An owner can enable it again."))
        }
        let pending = admin.hasTwoFactor
        let opened = try await open(
            adminId: admin.id, adminName: admin.name, environment: environment, pending: pending)
        _ = try? await store.deleteSessions(expiredBefore: opened.session.createdAt)
        return .success(opened)
    }

    /// The second step, with two-factor on: a current code of the admin's app (used once) or a recovery code
    /// (used up), under the same throttle as passwords but counted apart from them. A right code ends the
    /// half-open session and opens a signed-in one; ``codeTries`` wrong ones end it.
    public func checkCode(_ code: String, session: AdminSession, addressKey: String) async throws
        -> Result<Opened, Refusal>
    {
        // Only a half-open session still within its five minutes takes a code.
        guard session.twoFactorPending, session.expiresAt > now() else {
            return .failure(Refusal(reason: .tooManyCodes, message: "The sign-in expired: sign in again."))
        }
        let account = "2fa:" + session.adminName
        let attempt: Attempt
        switch try await reserve(.code(account: session.adminName), account: account, addressKey: addressKey) {
        case .success(let reserved): attempt = reserved
        case .failure(let refusal): return .failure(refusal)
        }
        let valid: Bool
        do {
            valid = try await service.checkSecondFactor(name: session.adminName, code)
        } catch {
            await finish(attempt, succeeded: false)
            throw error
        }
        await finish(attempt, succeeded: valid)
        guard valid else {
            if failedCode(session.tokenHash) >= Self.codeTries {
                try await store.deleteSession(tokenHash: session.tokenHash)
                return .failure(Refusal(reason: .tooManyCodes, message: "Too many wrong codes: sign in again."))
            }
            return .failure(
                Refusal(
                    reason: .wrongCode, message: "That code is not right, or was used already. Try the next one."))
        }
        codeFailures.withLock { _ = $0.removeValue(forKey: session.tokenHash) }
        // A new token for the signed-in session: the half-open one's ends here.
        try await store.deleteSession(tokenHash: session.tokenHash)
        return .success(
            try await open(
                adminId: session.adminId, adminName: session.adminName, environment: session.environment,
                pending: false))
    }

    /// Turns the admin's own two-factor sign-in off with a current code (or a recovery code), checked under the
    /// same throttle as sign-in codes: a stolen session cannot try every code.
    ///
    /// - Returns: `nil` when it is off; the refusal when the throttle says to wait.
    /// - Throws: ``AdminError`` for a wrong code (counted as a failure).
    public func turnOffTwoFactor(
        of session: AdminSession, code: String, addressKey: String, environment: AppStoreEnvironment, actor: String
    ) async throws -> Refusal? {
        let attempt: Attempt
        switch try await reserve(
            .code(account: session.adminName), account: "2fa:" + session.adminName, addressKey: addressKey)
        {
        case .success(let reserved): attempt = reserved
        case .failure(let refusal): return refusal
        }
        do {
            try await service.disableTwoFactor(
                environment: environment, name: session.adminName, code: code, actor: actor)
        } catch {
            await finish(attempt, succeeded: false)
            throw error
        }
        await finish(attempt, succeeded: true)
        return nil
    }

    /// The unexpired session `token` names; an expired one is removed.
    public func session(token: String) async throws -> AdminSession? {
        guard !token.isEmpty, let session = try await store.session(tokenHash: Secrets.hash(token)) else {
            return nil
        }
        guard session.expiresAt > now() else {
            try await store.deleteSession(tokenHash: session.tokenHash)
            return nil
        }
        return session
    }

    /// The admin a signed-in session acts for, as stored now (a role an owner changed applies at once); `nil`, and
    /// the session ended, when the admin was disabled, removed or made again under the name.
    public func admin(of session: AdminSession) async throws -> Admin? {
        guard let admin = try await store.admin(name: session.adminName), admin.isEnabled,
            admin.id == session.adminId
        else {
            try await store.deleteSession(tokenHash: session.tokenHash)
            return nil
        }
        return admin
    }

    /// Ends a session (signing out, or starting a sign-in again from the code page).
    public func end(_ session: AdminSession) async throws {
        try await store.deleteSession(tokenHash: session.tokenHash)
    }

    /// Ends every session of the admin but `session` (two-factor turned on: every session from now on gave a
    /// code).
    public func endOtherSessions(than session: AdminSession) async throws {
        _ = try await store.deleteSessions(adminId: session.adminId, except: session.tokenHash)
    }

    /// Ends every session of the admin named `name` (an owner reset their two-factor sign-in).
    public func endSessions(ofAdmin name: String) async throws {
        if let admin = try await store.admin(name: name) {
            _ = try await store.deleteSessions(adminId: admin.id, except: nil)
        }
    }

    /// Wrong two-factor codes counted for each of `names` in ``AccountGuard/window`` (every instance's count),
    /// leaving out those with none.
    public func guessedCodes(of names: [String]) async throws -> [String: Int] {
        var guessed: [String: Int] = [:]
        for name in names {
            let key = AccountGuard.Secret.code(account: name).key
            let count = try await store.failures(key, since: now().addingTimeInterval(-AccountGuard.window))
            if count > 0 { guessed[name] = count }
        }
        return guessed
    }

    /// Switches the environment a session sees.
    public func switchEnvironment(of session: AdminSession, to environment: AppStoreEnvironment) async throws {
        try await store.setSessionEnvironment(tokenHash: session.tokenHash, environment: environment)
    }

    /// Sets the time zone the panel shows an admin's times in (`nil`: UTC alone).
    public func setTimeZone(of name: String, to identifier: String?) async throws {
        _ = try await store.setAdminTimeZone(name: name, timeZone: identifier)
    }

    // MARK: Helpers

    /// A reserved password or code check: the throttle's reservation, and what the store counts it against.
    private struct Attempt: Sendable {
        var reservation: LoginThrottle.Attempt
        var secret: AccountGuard.Secret
    }

    private func open(adminId: UUID, adminName: String, environment: AppStoreEnvironment, pending: Bool)
        async throws -> Opened
    {
        let seconds = pending ? Self.codeSeconds : sessionHours * 3_600
        let token = Secrets.random()
        let started = now()
        let session = AdminSession(
            tokenHash: Secrets.hash(token), adminId: adminId, adminName: adminName, csrfToken: Secrets.random(),
            environment: environment, createdAt: started, expiresAt: started.addingTimeInterval(TimeInterval(seconds)),
            twoFactorPending: pending)
        try await store.createSession(session)
        return Opened(token: token, session: session, seconds: seconds)
    }

    /// Counts a wrong code for a half-open session; its count so far. Half-open sessions last five minutes: a
    /// full table is mostly stale, and starting over only gives back a few tries.
    private func failedCode(_ session: String) -> Int {
        codeFailures.withLock { counts in
            if counts.count > 10_000 { counts.removeAll() }
            counts[session, default: 0] += 1
            return counts[session] ?? 0
        }
    }

    /// Reserves a check of `secret`: refused while the store counts too many failures for it (every instance's),
    /// then by this instance's throttle; all checks busy, it waits up to 2 seconds for one, so a flood elsewhere
    /// does not turn support away.
    private func reserve(_ secret: AccountGuard.Secret, account: String, addressKey: String) async throws
        -> Result<Attempt, Refusal>
    {
        let counted = try await store.failures(secret.key, since: now().addingTimeInterval(-AccountGuard.window))
        if counted >= secret.limit {
            let what = if case .code = secret { "wrong codes for this account" } else { "failed sign-ins" }
            return .failure(
                Refusal(
                    reason: .throttled,
                    message:
                        "Too many \(what) in the last hour. Try again later; an owner sees this on the Admins page.",
                    retryAfter: 300))
        }
        var decision = await throttle.begin(account: account, address: addressKey, now: now())
        for _ in 0..<20 where decision == .busy {
            try await timerClock.sleep(for: .milliseconds(100))
            decision = await throttle.begin(account: account, address: addressKey, now: now())
        }
        switch decision {
        case .proceed(let reserved): return .success(Attempt(reservation: reserved, secret: secret))
        case .wait(let wait):
            let seconds = Int(wait.rounded(.up))
            let when = seconds < 120 ? "\(seconds) seconds" : "\((seconds + 59) / 60) minutes"
            return .failure(
                Refusal(
                    reason: .throttled, message: "Too many failed sign-ins. Try again in \(when).",
                    retryAfter: max(1, seconds)))
        case .busy:
            return .failure(
                Refusal(reason: .throttled, message: "Too many sign-ins at once. Try again in a moment.", retryAfter: 1)
            )
        }
    }

    /// Ends a reserved check: the throttle's slot, and in the store a failure counted (shared by every instance)
    /// or, for a right password, that address's failures for the account forgotten.
    private func finish(_ attempt: Attempt, succeeded: Bool) async {
        await throttle.finish(attempt.reservation, succeeded: succeeded)
        let at = now()
        do {
            if !succeeded {
                _ = try await store.recordFailure(
                    attempt.secret.key, at: at, since: at.addingTimeInterval(-AccountGuard.window))
            } else if case .password = attempt.secret {
                try await store.clearFailures(attempt.secret.key)
            }
        } catch {
            failureLog("cannot count a sign-in failure: \(error)")
        }
    }
}
