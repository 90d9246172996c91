import CofferAdmin
import CofferCore
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// How the admin panel is offered.
public struct PanelConfiguration: Sendable {
    /// Whether the panel answers requests from other machines; off, it answers loopback addresses only.
    public var allowRemote = false
    /// Whether session cookies are `Secure` with the `__Host-` prefix (set this behind TLS).
    public var secureCookies = false
    /// Hours a session lasts.
    public var sessionHours = 8
    /// The public host name the panel is reached by when ``allowRemote`` is on (`support.example.com`); other
    /// Host names than this and loopback names are refused, so DNS rebinding cannot reach the panel.
    public var publicHost: String?
    /// Requests to the sign-in page per client address.
    public var signInLimit = RateLimit(burst: 30, perSecond: 0.2)

    /// The defaults: loopback only, plain cookies, 8-hour sessions.
    public init() {}
}

/// The admin panel at `/admin`: server-rendered pages over ``AdminService``, behind a sign-in with sessions in
/// HttpOnly SameSite=Strict cookies and a CSRF token on every form.
struct AdminPanel: Sendable {
    let api: ClientAPI
    let service: AdminService
    let renderer: PanelRenderer
    let hasher: PasswordHasher
    let throttle: LoginThrottle
    let configuration: PanelConfiguration

    var store: any CofferStore { api.dependencies.store }
    var now: Date { api.dependencies.now() }
    var cookieName: String { configuration.secureCookies ? "__Host-coffer-session" : "coffer-session" }
    static let loginCookie = "coffer-login"
    /// A bcrypt hash of nothing anyone knows, checked for unknown names so they take as long as known ones.
    static let decoyHash = "$2b$12$ZrNwFzbn4UAzJh1J6bqzEe0cYp7xLbXgE0dWv2Y3mKcS9q8mZ9Sta"

    func addRoutes(to router: Router<CofferRequestContext>) {
        let local = LoopbackOnlyMiddleware(
            allowRemote: configuration.allowRemote,
            hosts: PanelHosts(publicHost: configuration.allowRemote ? configuration.publicHost : nil))
        let open = router.group("admin/login").add(middleware: local)
            .add(
                middleware: RateLimitMiddleware(
                    limiter: RateLimiter(limit: configuration.signInLimit), what: "sign-in requests"))
        open.get { request, context in try await loginPage(request, context) }
        open.post { request, context in try await signIn(request, context) }
        let panel = router.group("admin").add(middleware: local).add(middleware: SessionMiddleware(panel: self))
        panel.get { _, context in try await dashboard(context) }
        panel.get("users") { request, context in try await users(request, context) }
        panel.get("users/:supportId") { request, context in try await user(request, context) }
        panel.post("users/:supportId/balance") { request, context in try await setBalance(request, context) }
        panel.get("grants") { request, context in try await grants(request, context) }
        panel.post("grants") { request, context in try await createGrant(request, context) }
        panel.get("grants/delete-all") { _, context in try await confirmDeleteAll(context) }
        panel.post("grants/delete-all") { request, context in try await deleteAll(request, context) }
        panel.get("environment") { request, context in try await confirmEnvironment(request, context) }
        panel.post("environment") { request, context in try await switchEnvironment(request, context) }
        panel.get("audit") { _, context in try await audit(context) }
        panel.post("logout") { request, context in try await signOut(request, context) }
    }

    // MARK: Signing in and out

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

    // MARK: Pages

    func dashboard(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let figures = try await service.dashboard(environment: session.environment)
        return page(
            "dashboard",
            [
                "title": "Dashboard", "onDashboard": true,
                "figures": [
                    "users": figures.users, "pendingGrants": figures.pendingGrants,
                    "claimedGrants": figures.claimedGrants, "purchases": figures.purchases,
                    "refunds": figures.refunds, "usersInDeficit": figures.usersInDeficit,
                    "outstandingDeficit": figures.outstandingDeficit,
                ],
                "chart": DashboardChart.svg(figures.days),
            ], session: session)
    }

    func users(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let query = request.uri.queryParameters.get("q") ?? ""
        let pageNumber: Int
        let result: UserSearchResult
        do {
            pageNumber = try AdminService.page(request.uri.queryParameters.get("page"))
            result = try await service.searchUsers(environment: session.environment, query: query, page: pageNumber)
        } catch let error as AdminError {
            return page(
                "users", ["title": "Users", "onUsers": true, "query": query, "error": error.description],
                session: session, status: .badRequest)
        }
        let link = { (number: Int) in
            "/admin/users?page=\(number)" + (query.isEmpty ? "" : "&q=" + URLText.escape(query))
        }
        let matched: String? =
            switch result.matchedBy {
            case "transaction-id": "Found by transaction id."
            case "order-id": "Found by order id (looked up with Apple)."
            case "nothing": "Nothing matches \(query): try a Support ID prefix, a transaction id or an order id."
            default: nil
            }
        return page(
            "users",
            [
                "title": "Users", "onUsers": true, "query": query, "matched": matched,
                "users": result.users.map { user in
                    [
                        "supportId": user.supportId, "created": Self.time(user.createdAt), "balance": user.balance,
                        "deficit": user.deficit, "backupValue": user.backup.map { String($0.value) } ?? "–",
                        "backedUp": user.backup.map { Self.time($0.lastUpdated) } ?? "–",
                    ] as [String: Any]
                },
                "previous": (pageNumber > 1 ? link(pageNumber - 1) : nil),
                "next": (result.hasMore ? link(pageNumber + 1) : nil),
            ], session: session)
    }

    func user(_ request: Request, _ context: CofferRequestContext, supportId: String? = nil, error: String? = nil)
        async throws -> Response
    {
        let session = try context.requireSession()
        let supportId = try supportId ?? context.parameters.require("supportId")
        let detail: UserDetail
        do {
            detail = try await service.user(environment: session.environment, supportId: supportId)
        } catch let failure as AdminError {
            return message(
                "No such user", failure.description, link: "/admin/users", linkText: "Back to users",
                session: session, status: failure.status)
        }
        let backup = detail.user.backup
        let backupNote =
            backup.map { "backup, written by \($0.writer) \($0.writerName) at \(Self.time($0.lastUpdated))" }
            ?? "no backup from the device yet"
        let balanceNote =
            detail.walletMode == "server"
            ? "The server owns this balance: setting it adds an adjustment to the ledger."
            : "The app owns this balance: setting it writes an admin backup, which the app accepts on its next sync."
        return page(
            "user",
            [
                "title": detail.user.supportId, "onUsers": true, "walletMode": detail.walletMode,
                "user": [
                    "supportId": detail.user.supportId, "balance": detail.user.balance,
                    "deficit": detail.user.deficit,
                ],
                "backupValue": backup.map { String($0.value) } ?? "–", "backupNote": backupNote,
                "entitlementCount": detail.entitlements.count,
                "entitlements": (detail.entitlements.isEmpty ? nil : detail.entitlements.joined(separator: ", ")),
                "balanceNote": balanceNote, "error": error,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "timeline": detail.timeline.map { item in
                    [
                        "at": Self.time(item.at), "kind": item.kind.rawValue, "summary": item.summary,
                        "credits": item.credits.map { $0 > 0 ? "+\($0)" : String($0) } ?? "",
                        "balanceAfter": item.balanceAfter.map(String.init) ?? "",
                    ] as [String: Any]
                },
            ], session: session, status: error == nil ? .ok : .badRequest)
    }

    func setBalance(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let supportId = try context.parameters.require("supportId")
        guard let balance = Int64(form["balance"]?.trimmingCharacters(in: .whitespaces) ?? "") else {
            return try await user(request, context, error: "The balance must be a whole number.")
        }
        do {
            _ = try await service.setBalance(
                environment: session.environment, supportId: supportId, balance: balance, reason: form["reason"] ?? "",
                actor: context.adminActor)
        } catch let error as AdminError {
            return try await user(request, context, error: error.description)
        }
        return Self.redirect("/admin/users/\(URLText.escape(supportId))?notice=balance")
    }

    func grants(_ request: Request, _ context: CofferRequestContext, error: String? = nil) async throws -> Response {
        let session = try context.requireSession()
        let status = request.uri.queryParameters.get("status").flatMap { GrantStatus(rawValue: String($0)) }
        let grants = try await service.grants(environment: session.environment, status: status)
        return page(
            "grants",
            [
                "title": "Grants", "onGrants": true, "allTab": status == nil, "pendingTab": status == .pending,
                "claimedTab": status == .claimed, "error": error,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "grants": grants.map { grant in
                    [
                        "created": Self.time(grant.createdAt), "supportId": grant.supportId, "credits": grant.credits,
                        "status": grant.status.rawValue, "createdBy": grant.createdBy, "reason": grant.reason,
                    ] as [String: Any]
                },
            ], session: session, status: error == nil ? .ok : .badRequest)
    }

    func createGrant(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let supportId = (form["supportId"] ?? "").trimmingCharacters(in: .whitespaces)
        let toUser = form["back"] == "user"
        func refuse(_ text: String) async throws -> Response {
            if toUser { return try await user(request, context, supportId: supportId, error: text) }
            return try await grants(request, context, error: text)
        }
        guard let credits = Int64(form["credits"]?.trimmingCharacters(in: .whitespaces) ?? "") else {
            return try await refuse("Credits must be a whole number.")
        }
        let grant: GrantView
        do {
            grant = try await service.createGrant(
                environment: session.environment, supportId: supportId, credits: credits, reason: form["reason"] ?? "",
                actor: context.adminActor)
        } catch let error as AdminError {
            return try await refuse(error.description)
        }
        return Self.redirect(
            toUser
                ? "/admin/users/\(URLText.escape(grant.supportId))?notice=granted"
                : "/admin/grants?status=pending&notice=granted")
    }

    func confirmDeleteAll(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        guard session.environment == .sandbox else {
            return message(
                "Not in Production", "Grants can be deleted in bulk in Sandbox only.", link: "/admin/grants",
                linkText: "Back to grants", session: session, status: .forbidden)
        }
        return page(
            "confirm",
            [
                "title": "Delete all grants", "onGrants": true, "heading": "Delete every Sandbox grant?",
                "explanation":
                    "This removes all Sandbox grants, pending and claimed (test data). Credits already claimed "
                    + "stay in the ledger. Production is not touched.",
                "action": "/admin/grants/delete-all", "button": "Delete all Sandbox grants",
                "cancel": "/admin/grants", "fields": [["name": "confirm", "value": "yes"]],
            ], session: session)
    }

    func deleteAll(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        guard form["confirm"] == "yes" else { return try await confirmDeleteAll(context) }
        do {
            _ = try await service.deleteAllGrants(environment: session.environment, actor: context.adminActor)
        } catch let error as AdminError {
            return message(
                "Not deleted", error.description, link: "/admin/grants", linkText: "Back to grants",
                session: session, status: error.status)
        }
        return Self.redirect("/admin/grants?notice=deleted")
    }

    func confirmEnvironment(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        guard request.uri.queryParameters.get("to") == "Production" else { return Self.redirect("/admin") }
        return page(
            "confirm",
            [
                "title": "Switch to Production", "heading": "Switch to Production?",
                "explanation":
                    "Production holds your real customers' purchases and balances. Every page will show Production "
                    + "data, and grants and balance changes will reach real customers.",
                "action": "/admin/environment", "button": "Switch to Production", "cancel": "/admin",
                "fields": [["name": "environment", "value": "Production"], ["name": "confirm", "value": "yes"]],
            ], session: session)
    }

    func switchEnvironment(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        guard let environment = CofferCore.Environment(rawValue: form["environment"] ?? "") else {
            return Self.redirect("/admin")
        }
        if environment == .production, form["confirm"] != "yes" {
            return Self.redirect("/admin/environment?to=Production")
        }
        try await store.setSessionEnvironment(tokenHash: session.tokenHash, environment: environment)
        return Self.redirect("/admin")
    }

    func audit(_ context: CofferRequestContext) async throws -> Response {
        let session = try context.requireSession()
        let events = try await service.auditLog(environment: session.environment)
        return page(
            "audit",
            [
                "title": "Audit log", "onAudit": true,
                "events": events.map { event in
                    [
                        "at": Self.time(event.at), "actor": event.actor, "action": event.action,
                        "subject": event.subject, "before": event.before ?? "", "after": event.after ?? "",
                    ] as [String: Any]
                },
            ], session: session)
    }

    // MARK: Helpers

    /// The session and form of a POST, refused (403, nothing changed) without the session's CSRF token.
    func checkedForm(_ request: Request, _ context: CofferRequestContext) async throws
        -> (AdminSession, [String: String])
    {
        let session = try context.requireSession()
        let form = try await Self.form(request)
        guard Secrets.same(form["csrf"] ?? "", session.csrfToken) else { throw PanelRefusal.csrf }
        return (session, form)
    }

    func page(_ template: String, _ values: [String: Any?], session: AdminSession, status: HTTPResponse.Status = .ok)
        -> Response
    {
        var values = values
        values["adminName"] = session.adminName
        values["csrf"] = session.csrfToken
        return page(template, values, environment: session.environment, status: status)
    }

    /// Renders a page; `nil` values are left out, so their sections do not show.
    func page(
        _ template: String, _ values: [String: Any?], environment: CofferCore.Environment,
        status: HTTPResponse.Status
    ) -> Response {
        var values = values.compactMapValues { $0 }
        values["environment"] = environment.rawValue
        values["isProduction"] = environment == .production
        values["isSandbox"] = environment == .sandbox
        return Self.html(renderer.render(template, values), status: status)
    }

    func message(
        _ heading: String, _ text: String, link: String, linkText: String, session: AdminSession,
        status: HTTPResponse.Status
    ) -> Response {
        page(
            "message", ["title": heading, "heading": heading, "message": text, "link": link, "linkText": linkText],
            session: session, status: status)
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func redirect(_ location: String) -> Response {
        var headers = securityHeaders
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    /// No scripts, no framing, no caching of pages with customer data.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'",
        HTTPField.Name("X-Frame-Options")!: "DENY", HTTPField.Name("Referrer-Policy")!: "same-origin",
        .cacheControl: "no-store", HTTPField.Name("X-Content-Type-Options")!: "nosniff",
    ]

    static func notice(_ code: String?) -> String? {
        switch code {
        case "granted": "Grant created. The app picks it up on its next launch, foreground or refresh."
        case "balance": "Balance set."
        case "deleted": "All Sandbox grants deleted."
        default: nil
        }
    }

    static func time(_ date: Date) -> String {
        date.formatted(
            .iso8601.year().month().day().dateSeparator(.dash).dateTimeSeparator(.space).time(
                includingFractionalSeconds: false
            ).timeSeparator(.colon))
    }

    /// The fields of a URL-encoded form body (the first of a repeated name).
    static func form(_ request: Request) async throws -> [String: String] {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: 64 * 1024)
        } catch {
            throw PanelRefusal.tooLarge
        }
        var fields: [String: String] = [:]
        for pair in String(buffer: body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in
                text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            let name = decode(parts[0])
            if fields[name] == nil { fields[name] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return fields
    }
}

/// Why the panel refused a request before doing anything.
enum PanelRefusal: Error {
    case csrf
    case tooLarge
}

extension AdminError {
    var status: HTTPResponse.Status {
        switch self {
        case .notFound: .notFound
        case .invalid: .badRequest
        case .forbidden: .forbidden
        case .unavailable: .serviceUnavailable
        }
    }
}

extension CofferRequestContext {
    func requireSession() throws -> AdminSession {
        guard let adminSession else { throw PanelRefusal.csrf }
        return adminSession
    }
}

/// Sends requests without a valid session to the sign-in page, and answers CSRF failures with a page that says
/// nothing was changed.
struct SessionMiddleware: RouterMiddleware {
    typealias Context = CofferRequestContext
    let panel: AdminPanel

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let session = try await panel.session(request) else { return AdminPanel.redirect("/admin/login") }
        var context = context
        context.adminSession = session
        // The audit log names the admin and the real client address (behind trusted proxies, the forwarded one).
        context.admin = "\(session.adminName) from \(context.clientAddress ?? "this machine")"
        do {
            return try await next(request, context)
        } catch PanelRefusal.csrf {
            return panel.message(
                "Not done",
                "This form is out of date or did not come from this panel, so nothing was changed. "
                    + "Go back, reload the page and try again.", link: "/admin", linkText: "Dashboard",
                session: session, status: .forbidden)
        } catch PanelRefusal.tooLarge {
            return panel.message(
                "Not done", "The form was too large.", link: "/admin", linkText: "Dashboard", session: session,
                status: .contentTooLarge)
        }
    }
}

/// Refuses the panel to other machines unless `panel.remote` is on (judged by the real client address, so a
/// reverse proxy on this machine does not make every visitor local), and to Host names other than loopback
/// names and the configured public host (so a page whose name was rebound to 127.0.0.1 cannot reach it).
struct LoopbackOnlyMiddleware: RouterMiddleware {
    typealias Context = CofferRequestContext
    let allowRemote: Bool
    let hosts: PanelHosts

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        if !allowRemote, let address = context.clientAddress, !AddressRange.isLoopback(address) {
            return AdminPanel.html(
                "<!doctype html><p>The Coffer panel answers only on its own machine.</p>", status: .forbidden)
        }
        guard hosts.allows(request.head.authority) else {
            return AdminPanel.html(
                "<!doctype html><p>The Coffer panel does not answer to this Host name: it answers to localhost "
                    + "names, and to panel.host when panel.remote is on.</p>",
                status: .misdirectedRequest)
        }
        return try await next(request, context)
    }
}
