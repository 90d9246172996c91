import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird

/// Signing in (`/admin/login`, the password then a two-factor code) and out, and the session cookie.
struct SignInController: Sendable {
    let panel: AdminPanel

    static let loginCookie = "coffer-login"
    var configuration: PanelConfiguration { panel.configuration }
    var cookieName: String { configuration.secureCookies ? "__Host-coffer-session" : "coffer-session" }

    /// The sign-in pages, relative to `/admin/login`.
    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get { request, context in try await loginPage(request, context) }
        routes.post { request, context in try await signIn(request, context) }
        routes.get("code") { request, context in try await codePage(request, context) }
        routes.post("code") { request, context in try await checkCode(request, context) }
        return routes
    }

    /// Signing out, behind the session, relative to `/admin`.
    var signedInRoutes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.post("logout") { request, context in try await signOut(request, context) }
        return routes
    }

    func loginPage(
        _ request: Request, _ context: CofferRequestContext, failure: PanelFailure? = nil, name: String = ""
    ) async throws -> Response {
        if let open = try await session(request) {
            // "Start again" from the code page ends the half-open session; any other visit goes on.
            if open.twoFactorPending, request.uri.queryParameters.get("restart") == "1" {
                try await panel.signIn.end(open)
            } else if failure == nil {
                return AdminPanel.redirect("/admin")
            }
        }
        let token = Secrets.random()
        var response = panel.render(
            LoginPage(loginCsrf: token, name: name, remote: configuration.allowRemote), context, failure: failure)
        response.setCookie(
            Cookie(
                name: Self.loginCookie, value: token, maxAge: 3_600, path: "/admin/login",
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
        return response
    }

    func signIn(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let form = try await AdminPanel.form(request)
        guard let expected = request.cookies[Self.loginCookie]?.value,
            Secrets.same(form["csrf"] ?? "", expected)
        else {
            return try await loginPage(
                request, context,
                failure: PanelFailure("The sign-in form expired. Please try again.", status: .forbidden))
        }
        // A name past any admin's length is neither echoed nor logged.
        let typed = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        let name = typed.utf8.count <= 200 ? typed : ""
        let address = context.clientAddress ?? "local"
        let opened: AdminSignIn.Opened
        switch try await panel.signIn.signIn(
            name: typed, password: form["password"] ?? "", addressKey: RateLimiter.key(address))
        {
        case .success(let done): opened = done
        case .failure(let refusal):
            context.logger.notice("panel sign-in refused for \(name) from \(address): \(refusal.reason)")
            return try await refused(refusal, name: name, request, context)
        }
        let pending = opened.codeNext
        context.logger.info("panel sign-in: \(opened.session.adminName) from \(address)\(pending ? ", code next" : "")")
        var response = AdminPanel.redirect(pending ? "/admin/login/code" : "/admin")
        response.setCookie(sessionCookie(opened.token, maxAge: opened.seconds))
        response.setCookie(
            Cookie(
                name: Self.loginCookie, value: "", maxAge: 0, path: "/admin/login",
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
        return response
    }

    /// The status a refused sign-in answers with: 401 for a wrong password or code, 403 for a disabled admin,
    /// 429 when throttled.
    static func status(_ reason: AdminSignIn.Refusal.Reason) -> HTTPResponse.Status {
        switch reason {
        case .throttled: .tooManyRequests
        case .disabled: .forbidden
        case .wrongPassword, .wrongCode, .tooManyCodes: .unauthorized
        }
    }

    /// The sign-in page again, saying why, with `Retry-After` when throttled.
    private func refused(
        _ refusal: AdminSignIn.Refusal, name: String, _ request: Request, _ context: CofferRequestContext
    ) async throws -> Response {
        var response = try await loginPage(
            request, context, failure: PanelFailure(refusal.message, status: Self.status(refusal.reason)), name: name)
        if let retryAfter = refusal.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// `GET /admin/login/code`: the second step of a sign-in with two-factor on.
    func codePage(_ request: Request, _ context: CofferRequestContext, failure: PanelFailure? = nil) async throws
        -> Response
    {
        guard let session = try await session(request), session.twoFactorPending else {
            return AdminPanel.redirect("/admin/login")
        }
        return panel.render(CodePage(codeCsrf: session.csrfToken, name: session.adminName), context, failure: failure)
    }

    /// `POST /admin/login/code`: a current code of the admin's app (used once) or a recovery code (used up); the
    /// same throttle as passwords.
    func checkCode(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        guard let session = try await session(request), session.twoFactorPending else {
            return AdminPanel.redirect("/admin/login")
        }
        let form = try await AdminPanel.form(request)
        guard Secrets.same(form["csrf"] ?? "", session.csrfToken) else {
            return try await codePage(
                request, context, failure: PanelFailure("The form expired. Please try again.", status: .forbidden))
        }
        let address = context.clientAddress ?? "local"
        let opened: AdminSignIn.Opened
        switch try await panel.signIn.checkCode(
            form["code"] ?? "", session: session, addressKey: RateLimiter.key(address))
        {
        case .success(let done): opened = done
        case .failure(let refusal):
            context.logger.notice(
                "panel sign-in code refused for \(session.adminName) from \(address): \(refusal.reason)")
            let failure = PanelFailure(refusal.message, status: Self.status(refusal.reason))
            // Too many codes ended the half-open session: the password is asked again (bcrypt, throttled).
            guard refusal.reason != .tooManyCodes else {
                return try await loginPage(request, context, failure: failure)
            }
            var response = try await codePage(request, context, failure: failure)
            if let retryAfter = refusal.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }
        context.logger.info("panel sign-in: \(session.adminName) from \(address), code given")
        var response = AdminPanel.redirect("/admin")
        response.setCookie(sessionCookie(opened.token, maxAge: opened.seconds))
        return response
    }

    func signOut(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, _) = try await panel.checkedForm(request, context)
        try await panel.signIn.end(session)
        var response = AdminPanel.redirect("/admin/login")
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
        return try await panel.signIn.session(token: token)
    }
}
