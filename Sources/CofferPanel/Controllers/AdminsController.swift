import CofferAdmin
import CofferHTTP
import CofferStore
import Hummingbird

/// `/admin/admins` (owners): the admins, a new one, roles and grant limits, disabling and two-factor resets.
struct AdminsController: PanelController {
    let panel: AdminPanel

    var routes: RouteCollection<CofferRequestContext> {
        let routes = RouteCollection(context: CofferRequestContext.self)
        routes.get("admins") { request, context in try await admins(request, context) }
        routes.post("admins") { request, context in try await create(request, context) }
        routes.post("admins/:name/role") { request, context in try await setRole(request, context) }
        routes.post("admins/:name/disable") { request, context in try await setDisabled(request, context, true) }
        routes.post("admins/:name/enable") { request, context in try await setDisabled(request, context, false) }
        routes.post("admins/:name/two-factor-reset") { request, context in try await resetTwoFactor(request, context) }
        return routes
    }

    /// `GET /admin/admins`: every admin, their role, grant limit and two-factor, and a form for a new one; also
    /// the page a change comes back to, refused or with the new admin's password.
    func admins(
        _ request: Request, _ context: CofferRequestContext, failure: PanelFailure? = nil,
        created: AdminsPage.Created? = nil
    ) async throws -> Response {
        _ = try context.requireOwner()
        let admins = try await panel.service.admins()
        // Two-factor codes guessed at (every instance's count): the owner is told, the account waits.
        let guessed = try await panel.signIn.guessedCodes(of: admins.filter(\.twoFactor).map(\.name))
        let page = AdminsPage(
            admins, guessed: guessed, signedIn: context.adminSession?.adminName, created: created,
            time: panel.times(context))
        return panel.render(
            page, context, notice: PanelNotice(query: request.uri.queryParameters.get("notice")), failure: failure)
    }

    /// Runs an owner's change to an admin; its refusal shows on the Admins page.
    private func change(
        _ request: Request, _ context: CofferRequestContext,
        _ action: (AdminSession, [String: String]) async throws -> Response
    ) async throws -> Response {
        let (session, form) = try await panel.checkedForm(request, context)
        _ = try context.requireOwner()
        return try await panel.attempt {
            try await action(session, form)
        } otherwise: { failure in
            try await admins(request, context, failure: failure)
        }
    }

    /// `POST /admin/admins`: a new admin with a generated password, shown once.
    func create(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try await change(request, context) { session, form in
            let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
            let role = AdminRole(rawValue: form["role"] ?? "") ?? .support
            let limitText = form["limit"] ?? ""
            let limit = limitText.isEmpty ? nil : PanelText.amount(limitText)
            if !limitText.isEmpty, limit == nil {
                throw AdminError.invalid("the grant limit must be a whole number, e.g. 50,000")
            }
            let (admin, password) = try await panel.service.createAdmin(
                environment: panel.scope(session).environment, name: name, role: role,
                grantLimit: role == .support ? limit : nil, hasher: panel.dependencies.passwordHasher,
                actor: context.adminActor)
            return try await admins(
                request, context,
                created: AdminsPage.Created(role: admin.role.rawValue, name: admin.name, password: password))
        }
    }

    /// `POST /admin/admins/{name}/role`: role and grant limit.
    func setRole(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try await change(request, context) { session, form in
            let name = try context.parameters.require("name")
            guard let role = AdminRole(rawValue: form["role"] ?? "") else {
                throw PanelFailure("A role is owner or support.")
            }
            let limit = PanelText.amount(form["limit"] ?? "")
            if role == .support, limit == nil {
                throw AdminError.invalid("a support admin needs a grant limit, a whole number such as 50,000")
            }
            _ = try await panel.service.setRole(
                environment: panel.scope(session).environment, name: name, role: role, grantLimit: limit,
                actor: context.adminActor)
            return AdminPanel.redirect("/admin/admins?notice=role")
        }
    }

    /// `POST /admin/admins/{name}/disable` and `.../enable`: an admin who leaves is taken off at once (their
    /// sessions end); the last owner cannot be, and nobody disables themself.
    func setDisabled(_ request: Request, _ context: CofferRequestContext, _ disabled: Bool) async throws -> Response {
        try await change(request, context) { session, _ in
            let name = try context.parameters.require("name")
            guard !disabled || name != session.adminName else {
                throw PanelFailure("You cannot disable yourself: ask another owner.")
            }
            _ = try await panel.service.setDisabled(
                environment: panel.scope(session).environment, name: name, disabled: disabled,
                actor: context.adminActor)
            return AdminPanel.redirect("/admin/admins?notice=\(disabled ? "disabled" : "enabled")")
        }
    }

    /// `POST /admin/admins/{name}/two-factor-reset`: for an admin who lost their phone and their recovery codes;
    /// they sign in with the password alone and turn it on again.
    func resetTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        try await change(request, context) { session, _ in
            let name = try context.parameters.require("name")
            guard name != session.adminName else {
                throw PanelFailure("Turn your own two-factor sign-in off in Settings, with a code.")
            }
            try await panel.service.disableTwoFactor(
                environment: panel.scope(session).environment, name: name, code: nil, actor: context.adminActor)
            // Whoever holds their sessions now signs in again.
            try await panel.signIn.endSessions(ofAdmin: name)
            return AdminPanel.redirect("/admin/admins?notice=two-factor-reset")
        }
    }
}
