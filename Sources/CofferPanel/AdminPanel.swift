import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// The admin panel at `/admin`: server-rendered pages over ``AdminService``, behind a sign-in with sessions in
/// HttpOnly SameSite=Strict cookies and a CSRF token on every form.
public struct AdminPanel: Sendable {
    let dependencies: ServerDependencies
    /// The server's environment (a session starts in it; Production's support may look at Sandbox).
    let environment: AppStoreEnvironment
    let service: AdminService
    let renderer: PanelRenderer
    let signIn: AdminSignIn
    let configuration: PanelConfiguration

    var now: Date { dependencies.now() }
    var hasher: PasswordHasher { dependencies.passwordHasher }

    /// Creates the panel over support's use cases.
    ///
    /// - Parameters:
    ///   - dependencies: The server's clock, password hasher, metrics and App Store Server API client.
    ///   - environment: The server's environment.
    ///   - service: Support's operations.
    ///   - renderer: The pages' templates.
    ///   - signIn: Signing in and the sessions.
    ///   - configuration: The panel's settings.
    public init(
        dependencies: ServerDependencies, environment: AppStoreEnvironment, service: AdminService,
        renderer: PanelRenderer, signIn: AdminSignIn, configuration: PanelConfiguration
    ) {
        self.dependencies = dependencies
        self.environment = environment
        self.service = service
        self.renderer = renderer
        self.signIn = signIn
        self.configuration = configuration
    }
    var cookieName: String { configuration.secureCookies ? "__Host-coffer-session" : "coffer-session" }
    static let loginCookie = "coffer-login"

    /// The panel's routes: the sign-in pages, then the pages behind a session, each answered by a handler in
    /// `AdminPanel+SignIn.swift` or `AdminPanel+Pages.swift`.
    public var routes: RouteCollection<CofferRequestContext> {
        let router = RouteCollection(context: CofferRequestContext.self)
        let local = LoopbackOnlyMiddleware(
            allowRemote: configuration.allowRemote,
            hosts: PanelHosts(publicHost: configuration.allowRemote ? configuration.publicHost : nil))
        let open = router.group("admin/login").add(middleware: local)
            .add(
                middleware: RateLimitMiddleware(
                    limiter: RateLimiter(limit: configuration.signInLimit), what: "sign-in requests"))
        open.get { request, context in try await loginPage(request, context) }
        open.post { request, context in try await signIn(request, context) }
        open.get("code") { request, context in try await codePage(request, context) }
        open.post("code") { request, context in try await checkCode(request, context) }
        let panel = router.group("admin").add(middleware: local).add(middleware: SessionMiddleware(panel: self))
        panel.get { _, context in try await dashboard(context) }
        panel.get("users") { request, context in try await users(request, context) }
        panel.get("users/:supportId") { request, context in try await user(request, context) }
        panel.post("users/:supportId/balance") { request, context in try await setBalance(request, context) }
        panel.post("users/:supportId/merge") { request, context in try await merge(request, context) }
        panel.post("users/:supportId/delete") { request, context in try await deleteCustomer(request, context) }
        panel.get("grants") { request, context in try await grants(request, context) }
        panel.post("grants") { request, context in try await createGrant(request, context) }
        panel.post("grants/:id/cancel") { request, context in try await cancelGrant(request, context) }
        panel.get("grants/delete-all") { _, context in try await confirmDeleteAll(context) }
        panel.post("grants/delete-all") { request, context in try await deleteAll(request, context) }
        panel.get("environment") { request, context in try await confirmEnvironment(request, context) }
        panel.post("environment") { request, context in try await switchEnvironment(request, context) }
        panel.get("audit") { request, context in try await audit(request, context) }
        panel.get("audit.csv") { request, context in try await auditCSV(request, context) }
        panel.get("users/:supportId/export.json") { request, context in
            try await exportUser(request, context, format: "json")
        }
        panel.get("users/:supportId/export.csv") { request, context in
            try await exportUser(request, context, format: "csv")
        }
        panel.get("settings") { request, context in try await settings(request, context) }
        panel.post("settings") { request, context in try await saveSettings(request, context) }
        panel.post("settings/two-factor/begin") { request, context in try await beginTwoFactor(request, context) }
        panel.post("settings/two-factor") { request, context in try await enableTwoFactor(request, context) }
        panel.post("settings/two-factor/off") { request, context in try await disableTwoFactor(request, context) }
        panel.get("admins") { request, context in try await admins(request, context) }
        panel.post("admins") { request, context in try await createAdmin(request, context) }
        panel.post("admins/:name/role") { request, context in try await setRole(request, context) }
        panel.post("admins/:name/disable") { request, context in try await setDisabled(request, context, true) }
        panel.post("admins/:name/enable") { request, context in try await setDisabled(request, context, false) }
        panel.post("admins/:name/two-factor-reset") { request, context in
            try await resetTwoFactor(request, context)
        }
        panel.post("logout") { request, context in try await signOut(request, context) }
        return router
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

    func page(
        _ template: String, _ values: [String: Any?], context: CofferRequestContext, status: HTTPResponse.Status = .ok
    ) -> Response {
        var values = values
        guard let session = context.adminSession else {
            return page(template, values, environment: environment, status: status)
        }
        values["adminName"] = session.adminName
        values["csrf"] = session.csrfToken
        values["isOwner"] = context.panelAdmin?.role == .owner
        return page(template, values, environment: session.environment, status: status)
    }

    /// The customers the session's view shows: on a Production server, its Sandbox view is the Sandbox-marked
    /// customers (App Review, TestFlight, sandbox testers) kept among the Production ones.
    func scope(_ session: AdminSession) -> CustomerScope {
        CustomerScope(view: session.environment, server: environment)
    }

    /// Renders a page; `nil` values are left out, so their sections do not show.
    func page(
        _ template: String, _ values: [String: Any?], environment: CofferCore.AppStoreEnvironment,
        status: HTTPResponse.Status
    ) -> Response {
        var values = values.compactMapValues { $0 }
        values["environment"] = environment.rawValue
        values["isProduction"] = environment == .production
        values["isSandbox"] = environment == .sandbox
        return Self.html(renderer.render(template, values), status: status)
    }

    func message(
        _ heading: String, _ text: String, link: String, linkText: String, context: CofferRequestContext,
        status: HTTPResponse.Status
    ) -> Response {
        page(
            "message", ["title": heading, "heading": heading, "message": text, "link": link, "linkText": linkText],
            context: context, status: status)
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A file to download: `type`, named `filename`, with the panel's headers.
    static func download(_ text: String, type: String, filename: String) -> Response {
        var headers = securityHeaders
        headers[.contentType] = type
        headers[.contentDisposition] = "attachment; filename=\"\(filename)\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
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
        case "cancelled": "Grant cancelled. The app will not get it."
        case "settings": "Settings saved."
        case "two-factor-off": "Two-factor sign-in is off."
        case "role": "Role saved."
        case "disabled": "Admin disabled: they cannot sign in, and their sessions have ended."
        case "enabled": "Admin enabled: they can sign in again."
        case "two-factor-reset": "Two-factor sign-in reset: they sign in with their password and can turn it on again."
        case "customer-deleted": "Customer deleted at their request."
        case "merged":
            "Merged: the anonymous customer's balance, purchases, grants and history are this customer's now."
        default: nil
        }
    }

    /// A time as the pages show it: UTC, with the signed-in admin's time zone beside it.
    static func time(_ date: Date, _ context: CofferRequestContext) -> String {
        PanelText.time(date, in: context.adminTimeZone)
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
    /// The page or action is an owner's; the signed-in admin is support.
    case ownerOnly
}

extension AdminError {
    /// The status the panel's page answers with: the same as the API's (``ErrorAnswer``).
    var status: HTTPResponse.Status { ServiceError(self).status }
}

extension CofferRequestContext {
    func requireSession() throws -> AdminSession {
        guard let adminSession else { throw PanelRefusal.csrf }
        return adminSession
    }

    /// The session of an owner; a support admin's request is refused (403) before anything is done.
    func requireOwner() throws -> AdminSession {
        let session = try requireSession()
        guard panelAdmin?.role == .owner else { throw PanelRefusal.ownerOnly }
        return session
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
        // The password was right but the code is still to come: only the code page opens.
        guard !session.twoFactorPending else { return AdminPanel.redirect("/admin/login/code") }
        // A disabled admin's sessions end with the change; one opened while it was made ends here.
        guard let admin = try await panel.signIn.admin(of: session) else { return AdminPanel.redirect("/admin/login") }
        var context = context
        context.adminSession = session
        // The admin as stored now: a role an owner changed applies to the next request.
        context.panelAdmin = admin
        context.adminTimeZone = admin.timeZone.flatMap(PanelText.timeZone)
        // The audit log names the admin and the real client address (behind trusted proxies, the forwarded one).
        context.admin = "\(session.adminName) from \(context.clientAddress ?? "this machine")"
        do {
            return try await next(request, context)
        } catch PanelRefusal.csrf {
            return panel.message(
                "Not done",
                "This form is out of date or did not come from this panel, so nothing was changed. "
                    + "Go back, reload the page and try again.", link: "/admin", linkText: "Dashboard",
                context: context, status: .forbidden)
        } catch PanelRefusal.ownerOnly {
            return panel.message(
                "Not done", "Only an owner can do this, so nothing was changed. Ask an owner of this Coffer.",
                link: "/admin", linkText: "Dashboard", context: context, status: .forbidden)
        } catch PanelRefusal.tooLarge {
            return panel.message(
                "Not done", "The form was too large.", link: "/admin", linkText: "Dashboard", context: context,
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
