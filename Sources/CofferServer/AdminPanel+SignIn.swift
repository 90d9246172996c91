import CofferAdmin
import CofferCore
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension AdminPanel {
    func loginPage(
        _ request: Request, _ context: CofferRequestContext, error: String? = nil, name: String = "",
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        if let open = try await session(request) {
            // "Start again" from the code page ends the half-open session; any other visit goes on.
            if open.twoFactorPending, request.uri.queryParameters.get("restart") == "1" {
                try await store.deleteSession(tokenHash: open.tokenHash)
            } else if error == nil {
                return Self.redirect("/admin")
            }
        }
        let token = Secrets.random()
        var response = page(
            "login",
            [
                "title": "Sign in", "loginCsrf": token, "name": name, "binding": bindingNote,
                "error": error,
            ], environment: api.configuration.environment, status: status)
        response.setCookie(
            Cookie(
                name: Self.loginCookie, value: token, maxAge: 3_600, path: "/admin/login",
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
        return response
    }

    var bindingNote: String {
        configuration.allowRemote
            ? "This panel accepts connections from any address (panel.remote is on): serve it only behind TLS."
            : "This panel answers only on this machine: requests from other addresses are refused. "
                + "Set panel.remote to open it to the network."
    }

    func signIn(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let form = try await Self.form(request)
        guard let expected = request.cookies[Self.loginCookie]?.value,
            Secrets.same(form["csrf"] ?? "", expected)
        else {
            return try await loginPage(
                request, context, error: "The sign-in form expired. Please try again.", status: .forbidden)
        }
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        let password = form["password"] ?? ""
        let address = context.clientAddress ?? "local"
        guard name.utf8.count <= 200, password.utf8.count <= 1_024 else {
            return try await loginPage(
                request, context, error: "Wrong name or password.", status: .unauthorized)
        }
        let attempt: PanelAttempt
        switch try await reserveAttempt(account: name, address: address) {
        case .success(let reserved): attempt = reserved
        case .failure(let refusal):
            var response = try await loginPage(
                request, context, error: refusal.message, name: name, status: .tooManyRequests)
            response.headers[.retryAfter] = String(refusal.retryAfter)
            return response
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
            context.logger.notice("panel sign-in failed for \(name) from \(address)")
            return try await loginPage(
                request, context, error: "Wrong name or password.", name: name, status: .unauthorized)
        }
        guard admin.isEnabled else {
            context.logger.notice("panel sign-in refused for \(name) from \(address): disabled")
            return try await loginPage(
                request, context, error: "This admin is disabled. An owner can enable it again.", name: name,
                status: .forbidden)
        }
        // With two-factor sign-in the session opens only the code page, for five minutes, until the code is given.
        let pending = admin.hasTwoFactor
        let seconds = pending ? Self.codeSeconds : configuration.sessionHours * 3_600
        let token = Secrets.random()
        let started = now
        try await store.createSession(
            AdminSession(
                tokenHash: Secrets.hash(token), adminId: admin.id, adminName: admin.name, csrfToken: Secrets.random(),
                environment: api.configuration.environment, createdAt: started,
                expiresAt: started.addingTimeInterval(TimeInterval(seconds)), twoFactorPending: pending))
        _ = try? await store.deleteSessions(expiredBefore: started)
        context.logger.info("panel sign-in: \(admin.name) from \(address)\(pending ? ", code next" : "")")
        var response = Self.redirect(pending ? "/admin/login/code" : "/admin")
        response.setCookie(sessionCookie(token, maxAge: seconds))
        response.setCookie(
            Cookie(
                name: Self.loginCookie, value: "", maxAge: 0, path: "/admin/login",
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
        return response
    }

    /// How long the code page waits for the code after a right password.
    static let codeSeconds = 300
    /// Wrong codes a half-open session may take before the password is asked again.
    static let codeTries = 3

    /// Why a sign-in attempt may not be checked now, and when to try again.
    struct ThrottleRefusal: Error {
        var message: String
        var retryAfter: Int
    }

    /// A reserved password or code check: the throttle's reservation, and what the store counts it against.
    struct PanelAttempt: Sendable {
        var reservation: LoginThrottle.Attempt
        var secret: AccountGuard.Secret
    }

    /// Ends a reserved check: the throttle's slot, and in the store a failure counted (shared by every instance)
    /// or, for a right password, that address's failures for the account forgotten.
    func finish(_ attempt: PanelAttempt, succeeded: Bool) async {
        await throttle.finish(attempt.reservation, succeeded: succeeded)
        do {
            if !succeeded {
                _ = try await store.recordFailure(
                    attempt.secret.key, at: now, since: now.addingTimeInterval(-AccountGuard.window))
            } else if case .password = attempt.secret {
                try await store.clearFailures(attempt.secret.key)
            }
        } catch {
            api.dependencies.logger.error("cannot count a sign-in failure: \(error)")
        }
    }

    /// Reserves a password or code check for `account` (`2fa:NAME` for a code) from `address`: refused while the
    /// store counts too many failures for it (every instance's), then by this instance's throttle.
    func reserveAttempt(account: String, address: String) async throws
        -> Result<PanelAttempt, ThrottleRefusal>
    {
        let secret: AccountGuard.Secret =
            account.hasPrefix("2fa:")
            ? .code(account: String(account.dropFirst(4)))
            : .password(account: account, address: RateLimiter.key(address))
        let counted = try await store.failures(secret.key, since: now.addingTimeInterval(-AccountGuard.window))
        if counted >= secret.limit {
            let what = if case .code = secret { "wrong codes for this account" } else { "failed sign-ins" }
            return .failure(
                ThrottleRefusal(
                    message:
                        "Too many \(what) in the last hour. Try again later; an owner sees this on the Admins page.",
                    retryAfter: 300))
        }
        var decision = await throttle.begin(account: account, address: RateLimiter.key(address), now: now)
        // All checks busy: wait up to 2 seconds for one, so a flood elsewhere does not turn support away.
        for _ in 0..<20 where decision == .busy {
            try await Task.sleep(for: .milliseconds(100))
            decision = await throttle.begin(account: account, address: RateLimiter.key(address), now: now)
        }
        switch decision {
        case .proceed(let reserved): return .success(PanelAttempt(reservation: reserved, secret: secret))
        case .wait(let wait):
            let seconds = Int(wait.rounded(.up))
            let when = seconds < 120 ? "\(seconds) seconds" : "\((seconds + 59) / 60) minutes"
            return .failure(
                ThrottleRefusal(
                    message: "Too many failed sign-ins. Try again in \(when).", retryAfter: max(1, seconds)))
        case .busy:
            return .failure(
                ThrottleRefusal(message: "Too many sign-ins at once. Try again in a moment.", retryAfter: 1))
        }
    }

    /// `GET /admin/login/code`: the second step of a sign-in with two-factor on.
    func codePage(
        _ request: Request, _ context: CofferRequestContext, error: String? = nil, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        guard let session = try await session(request), session.twoFactorPending else {
            return Self.redirect("/admin/login")
        }
        return page(
            "login-code",
            ["title": "Two-factor sign-in", "codeCsrf": session.csrfToken, "name": session.adminName, "error": error],
            environment: api.configuration.environment, status: status)
    }

    /// `POST /admin/login/code`: a current code of the admin's app (used once) or a recovery code (used up); the
    /// same throttle as passwords.
    func checkCode(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        guard let session = try await session(request), session.twoFactorPending else {
            return Self.redirect("/admin/login")
        }
        let form = try await Self.form(request)
        guard Secrets.same(form["csrf"] ?? "", session.csrfToken) else {
            return try await codePage(
                request, context, error: "The form expired. Please try again.", status: .forbidden)
        }
        let address = context.clientAddress ?? "local"
        let attempt: PanelAttempt
        // Codes count apart from passwords (a right password must not clear the count of wrong codes).
        switch try await reserveAttempt(account: "2fa:" + session.adminName, address: address) {
        case .success(let reserved): attempt = reserved
        case .failure(let refusal):
            var response = try await codePage(request, context, error: refusal.message, status: .tooManyRequests)
            response.headers[.retryAfter] = String(refusal.retryAfter)
            return response
        }
        let valid: Bool
        do {
            valid = try await service.checkSecondFactor(name: session.adminName, form["code"] ?? "")
        } catch {
            await finish(attempt, succeeded: false)
            throw error
        }
        await finish(attempt, succeeded: valid)
        guard valid else {
            context.logger.notice("panel sign-in code refused for \(session.adminName) from \(address)")
            // Three wrong codes end the half-open session: the password is asked again (bcrypt, throttled).
            if codeFailures.failed(session.tokenHash) >= Self.codeTries {
                try await store.deleteSession(tokenHash: session.tokenHash)
                return try await loginPage(
                    request, context, error: "Too many wrong codes: sign in again.", status: .unauthorized)
            }
            return try await codePage(
                request, context, error: "That code is not right, or was used already. Try the next one.",
                status: .unauthorized)
        }
        codeFailures.forget(session.tokenHash)
        // A new token for the signed-in session: the half-open one's ends here.
        try await store.deleteSession(tokenHash: session.tokenHash)
        let seconds = configuration.sessionHours * 3_600
        let token = Secrets.random()
        try await store.createSession(
            AdminSession(
                tokenHash: Secrets.hash(token), adminId: session.adminId, adminName: session.adminName,
                csrfToken: Secrets.random(), environment: session.environment, createdAt: now,
                expiresAt: now.addingTimeInterval(TimeInterval(seconds))))
        context.logger.info("panel sign-in: \(session.adminName) from \(address), code given")
        var response = Self.redirect("/admin")
        response.setCookie(sessionCookie(token, maxAge: seconds))
        return response
    }

    func signOut(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, _) = try await checkedForm(request, context)
        try await store.deleteSession(tokenHash: session.tokenHash)
        var response = Self.redirect("/admin/login")
        response.setCookie(sessionCookie("", maxAge: 0))
        return response
    }

    func sessionCookie(_ value: String, maxAge: Int) -> Cookie {
        Cookie(
            name: cookieName, value: value, maxAge: maxAge, path: configuration.secureCookies ? "/" : "/admin",
            secure: configuration.secureCookies, httpOnly: true, sameSite: .strict)
    }

    /// The unexpired session a request's cookie names.
    func session(_ request: Request) async throws -> AdminSession? {
        guard let token = request.cookies[cookieName]?.value, !token.isEmpty else { return nil }
        guard let session = try await store.session(tokenHash: Secrets.hash(token)) else { return nil }
        guard session.expiresAt > now else {
            try await store.deleteSession(tokenHash: session.tokenHash)
            return nil
        }
        return session
    }
}
