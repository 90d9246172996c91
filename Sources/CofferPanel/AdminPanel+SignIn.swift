import CofferAdmin
import CofferCore
import CofferHTTP
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
                try await signIn.end(open)
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
            ], environment: environment, status: status)
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
        // A name past any admin's length is neither echoed nor logged.
        let typed = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        let name = typed.utf8.count <= 200 ? typed : ""
        let address = context.clientAddress ?? "local"
        let opened: AdminSignIn.Opened
        switch try await signIn.signIn(
            name: typed, password: form["password"] ?? "", addressKey: RateLimiter.key(address))
        {
        case .success(let done): opened = done
        case .failure(let refusal):
            context.logger.notice("panel sign-in refused for \(name) from \(address): \(refusal.reason)")
            return try await refused(refusal, name: name, request, context)
        }
        let pending = opened.codeNext
        context.logger.info("panel sign-in: \(opened.session.adminName) from \(address)\(pending ? ", code next" : "")")
        var response = Self.redirect(pending ? "/admin/login/code" : "/admin")
        response.setCookie(sessionCookie(opened.token, maxAge: opened.seconds))
        response.setCookie(
            Cookie(
                name: Self.loginCookie, value: "", maxAge: 0, path: "/admin/login",
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
        return response
    }

    /// The sign-in page again, saying why: 401 for a wrong password, 403 for a disabled admin, 429 with
    /// `Retry-After` when throttled.
    private func refused(
        _ refusal: AdminSignIn.Refusal, name: String, _ request: Request, _ context: CofferRequestContext
    ) async throws -> Response {
        let status: HTTPResponse.Status =
            switch refusal.reason {
            case .throttled: .tooManyRequests
            case .disabled: .forbidden
            case .wrongPassword, .wrongCode, .tooManyCodes: .unauthorized
            }
        var response = try await loginPage(request, context, error: refusal.message, name: name, status: status)
        if let retryAfter = refusal.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
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
            environment: environment, status: status)
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
        let opened: AdminSignIn.Opened
        switch try await signIn.checkCode(form["code"] ?? "", session: session, addressKey: RateLimiter.key(address)) {
        case .success(let done): opened = done
        case .failure(let refusal):
            context.logger.notice(
                "panel sign-in code refused for \(session.adminName) from \(address): \(refusal.reason)")
            switch refusal.reason {
            case .tooManyCodes:
                // The half-open session ended: the password is asked again (bcrypt, throttled).
                return try await loginPage(request, context, error: refusal.message, status: .unauthorized)
            case .throttled:
                var response = try await codePage(request, context, error: refusal.message, status: .tooManyRequests)
                if let retryAfter = refusal.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
                return response
            case .wrongCode, .wrongPassword, .disabled:
                return try await codePage(request, context, error: refusal.message, status: .unauthorized)
            }
        }
        context.logger.info("panel sign-in: \(session.adminName) from \(address), code given")
        var response = Self.redirect("/admin")
        response.setCookie(sessionCookie(opened.token, maxAge: opened.seconds))
        return response
    }

    func signOut(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, _) = try await checkedForm(request, context)
        try await signIn.end(session)
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
        guard let token = request.cookies[cookieName]?.value else { return nil }
        return try await signIn.session(token: token)
    }
}
