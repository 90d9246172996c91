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
        if error == nil, try await session(request) != nil { return Self.redirect("/admin") }
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
        let attempt: LoginThrottle.Attempt
        var decision = await throttle.begin(account: name, address: RateLimiter.key(address), now: now)
        // All password checks busy: wait up to 2 seconds for one, so a flood elsewhere does not turn support away.
        for _ in 0..<20 where decision == .busy {
            try await Task.sleep(for: .milliseconds(100))
            decision = await throttle.begin(account: name, address: RateLimiter.key(address), now: now)
        }
        switch decision {
        case .proceed(let reserved):
            attempt = reserved
        case .wait(let wait):
            let seconds = Int(wait.rounded(.up))
            let when = seconds < 120 ? "\(seconds) seconds" : "\((seconds + 59) / 60) minutes"
            var response = try await loginPage(
                request, context, error: "Too many failed sign-ins. Try again in \(when).", name: name,
                status: .tooManyRequests)
            response.headers[.retryAfter] = String(max(1, seconds))
            return response
        case .busy:
            var response = try await loginPage(
                request, context, error: "Too many sign-ins at once. Try again in a moment.", name: name,
                status: .tooManyRequests)
            response.headers[.retryAfter] = "1"
            return response
        }
        let admin: Admin?
        let valid: Bool
        do {
            admin = try await store.admin(name: name)
            valid = await hasher.verify(password, hash: admin?.passwordHash ?? Self.decoyHash)
        } catch {
            await throttle.finish(attempt, succeeded: false)
            throw error
        }
        await throttle.finish(attempt, succeeded: admin != nil && valid)
        guard let admin, valid else {
            context.logger.notice("panel sign-in failed for \(name) from \(address)")
            return try await loginPage(
                request, context, error: "Wrong name or password.", name: name, status: .unauthorized)
        }
        let token = Secrets.random()
        let started = now
        try await store.createSession(
            AdminSession(
                tokenHash: Secrets.hash(token), adminId: admin.id, adminName: admin.name, csrfToken: Secrets.random(),
                environment: api.configuration.environment, createdAt: started,
                expiresAt: started.addingTimeInterval(TimeInterval(configuration.sessionHours * 3_600))))
        _ = try? await store.deleteSessions(expiredBefore: started)
        context.logger.info("panel sign-in: \(admin.name) from \(address)")
        var response = Self.redirect("/admin")
        response.setCookie(sessionCookie(token, maxAge: configuration.sessionHours * 3_600))
        response.setCookie(
            Cookie(
                name: Self.loginCookie, value: "", maxAge: 0, path: "/admin/login",
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
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
