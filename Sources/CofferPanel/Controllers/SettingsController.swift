import CofferAdmin
import CofferHTTP
import CofferService
import Hummingbird

/// `/admin/settings`: the signed-in admin's own settings (the time zone beside UTC) and two-factor sign-in.
struct SettingsController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("settings") { request, context in try await settings(request, context) }
        routes.post("settings") { request, context in try await save(request, context) }
        routes.post("settings/two-factor/begin") { request, context in try await beginTwoFactor(request, context) }
        routes.post("settings/two-factor") { request, context in try await enableTwoFactor(request, context) }
        routes.post("settings/two-factor/off") { request, context in try await disableTwoFactor(request, context) }
        return routes
    }

    /// `GET /admin/settings`; also the page a refused change comes back to.
    func settings(_ request: Request, _ context: CofferRequestContext, failure: PanelFailure? = nil) async throws
        -> Response
    {
        _ = try context.requireSession()
        let current = context.adminTimeZone?.identifier ?? "UTC"
        let admin = context.panelAdmin
        var page = SettingsPage(
            zones: PanelText.timeZones.map { SettingsPage.Zone(name: $0, selected: $0 == current) },
            example: PanelText.time(panel.now, in: context.adminTimeZone), twoFactorOn: admin?.hasTwoFactor == true,
            recoveryCodesLeft: admin?.recoveryCodeHashes.count ?? 0, role: admin?.role.rawValue ?? "",
            grantLimit: admin?.grantCeiling.map(PanelText.credits))
        if admin?.role == .owner, let session = context.adminSession {
            page.isOwner = true
            let time = panel.times(context)
            page.webhooks = try await panel.service.webhookEndpoints(environment: panel.scope(session).environment)
                .map { WebhookEndpointRow($0, time: time) }
        }
        return panel.render(
            page, context, notice: PanelNotice(query: request.uri.queryParameters.get("notice")), failure: failure)
    }

    /// `POST /admin/settings`.
    func save(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        let name = form["timeZone"] ?? ""
        guard let zone = PanelText.timeZone(name) else {
            return try await settings(
                request, context, failure: PanelFailure("\(name) is not a time zone this server knows."))
        }
        let stored = zone.identifier == "UTC" || zone.identifier == "GMT" ? nil : zone.identifier
        try await panel.signIn.setTimeZone(of: session.adminName, to: stored)
        return AdminPanel.redirect("/admin/settings?notice=settings")
    }

    /// `POST /admin/settings/two-factor/begin`: a new secret to put in an authenticator app, and a field for the
    /// code it then shows. Nothing is stored until that code is given.
    func beginTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, _) = try await panel.checkedForm(request, context)
        return panel.render(TwoFactorPage(secret: TwoFactor.newSecret(), admin: session.adminName), context)
    }

    /// `POST /admin/settings/two-factor`: the code from the app turns two-factor on and shows the recovery codes
    /// once.
    func enableTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        let secret = form["secret"] ?? ""
        return try await panel.attempt {
            let codes = try await panel.service.enableTwoFactor(
                environment: panel.scope(session).environment, name: session.adminName, secret: secret,
                code: form["code"] ?? "", actor: context.adminActor)
            // Sessions signed in with the password alone end: from now on every one has given a code.
            try await panel.signIn.endOtherSessions(than: session)
            return panel.render(TwoFactorPage(codes: codes), context, notice: .twoFactorOn)
        } otherwise: { failure in
            panel.render(
                TwoFactorPage(secret: secret.isEmpty ? TwoFactor.newSecret() : secret, admin: session.adminName),
                context, failure: failure)
        }
    }

    /// `POST /admin/settings/two-factor/off`: with a current code (or a recovery code).
    func disableTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        return try await panel.attempt {
            // The code is checked under the sign-in throttle: a stolen session cannot try every code.
            if let refusal = try await panel.signIn.turnOffTwoFactor(
                of: session, code: form["code"] ?? "", addressKey: RateLimiter.key(context.clientAddress ?? "local"),
                environment: panel.scope(session).environment, actor: context.adminActor)
            {
                throw PanelFailure(refusal.message)
            }
            return AdminPanel.redirect("/admin/settings?notice=two-factor-off")
        } otherwise: { failure in
            try await settings(request, context, failure: failure)
        }
    }
}
