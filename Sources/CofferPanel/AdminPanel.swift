import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The admin panel at `/admin`: server-rendered pages over ``AdminService``, behind a sign-in with sessions in
/// HttpOnly SameSite=Strict cookies and a CSRF token on every form.
///
/// Each page is a controller in `Controllers/` with the routes it answers; this type composes them and gives
/// them what every page shares: the rendering of a typed page model in its frame, the one mapping of a refusal
/// to a page, forms and redirects.
public struct AdminPanel: Sendable {
    let dependencies: ServerDependencies
    /// The server's environment (a session starts in it; Production's support may look at Sandbox).
    let environment: AppStoreEnvironment
    let service: AdminService
    let renderer: PanelRenderer
    let signIn: AdminSignIn
    let configuration: PanelConfiguration

    var now: Date { dependencies.now() }

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

    /// The panel's routes: the sign-in pages, open and throttled, then every page behind a session.
    public var routes: RouteCollection<CofferRequestContext> {
        let router = RouteCollection(context: CofferRequestContext.self)
        let local = LoopbackOnlyMiddleware(
            allowRemote: configuration.allowRemote,
            hosts: PanelHosts(publicHost: configuration.allowRemote ? configuration.publicHost : nil))
        let signInPages = SignInController(panel: self)
        router.group("admin/login").add(middleware: local)
            .add(
                middleware: RateLimitMiddleware(
                    limiter: RateLimiter(limit: configuration.signInLimit), what: "sign-in requests")
            )
            .addRoutes(signInPages.routes)
        let signedIn = router.group("admin").add(middleware: local).add(middleware: SessionMiddleware(panel: self))
        let controllers: [any PanelController] = [
            DashboardController(panel: self), CustomersController(panel: self), CustomerChangesController(panel: self),
            GrantsController(panel: self), AuditController(panel: self), SettingsController(panel: self),
            AdminsController(panel: self), EnvironmentController(panel: self), ExtensionsController(panel: self),
            WebhooksController(panel: self),
        ]
        for controller in controllers { signedIn.addRoutes(controller.routes) }
        signedIn.addRoutes(signInPages.signedInRoutes)
        return router
    }

    // MARK: Pages

    /// `page` in its frame: the signed-in admin's environment (the server's before sign-in), the navigation, a
    /// notice, and the failure that sent support back to it (whose status the page answers with).
    func render(
        _ page: some PanelPage, _ context: CofferRequestContext, notice: PanelNotice? = nil,
        failure: PanelFailure? = nil, status: HTTPResponse.Status? = nil
    ) -> Response {
        let session = context.adminSession
        let frame = PanelFrame(
            environment: session?.environment ?? environment, session: session,
            isOwner: context.panelAdmin?.role == .owner, section: page.section, notice: notice,
            error: failure?.message)
        let html = renderer.render(FramedPage(page: page, frame: frame))
        return Self.html(html, status: status ?? failure?.status ?? .ok)
    }

    /// Runs an action; a refusal of a use case, a rule or the panel's own checks (``PanelFailure``) is shown by
    /// `show`, the page support came from. This is the one place a refusal becomes a page.
    func attempt(
        _ action: () async throws -> Response, otherwise show: (PanelFailure) async throws -> Response
    ) async throws -> Response {
        do {
            return try await action()
        } catch {
            guard let failure = PanelFailure(error) else { throw error }
            return try await show(failure)
        }
    }

    /// The session and form of a POST, refused (403, nothing changed) without the session's CSRF token.
    func checkedForm(_ request: Request, _ context: CofferRequestContext) async throws
        -> (AdminSession, [String: String])
    {
        let session = try context.requireSession()
        let form = try await Self.form(request)
        guard Secrets.same(form["csrf"] ?? "", session.csrfToken) else { throw PanelRefusal.csrf }
        return (session, form)
    }

    /// The customers the session's view shows: on a Production server, its Sandbox view is the Sandbox-marked
    /// customers (App Review, TestFlight, sandbox testers) kept among the Production ones.
    func scope(_ session: AdminSession) -> CustomerScope {
        CustomerScope(view: session.environment, server: environment)
    }

    /// A time as the pages show it: UTC, with the signed-in admin's time zone beside it.
    static func time(_ date: Date, _ context: CofferRequestContext) -> String {
        PanelText.time(date, in: context.adminTimeZone)
    }

    // MARK: Answers

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

/// A page's routes, added behind the panel's session.
protocol PanelController: Sendable {
    /// The routes, relative to `/admin`.
    var routes: RouteCollection<CofferRequestContext> { get }
}

extension AdminPanel {
    /// How the pages of `context` show a time: UTC with the signed-in admin's time zone beside it.
    func times(_ context: CofferRequestContext) -> (Date) -> String {
        { Self.time($0, context) }
    }
}
