import CofferAPI
import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import Foundation
import HTTPTypes
import Hummingbird

/// The panel's pages for admins themselves: two-factor sign-in in Settings, and the owners' Admins page.
extension AdminPanel {
    /// `POST /admin/settings/two-factor/begin`: a new secret to put in an authenticator app, and a field for the
    /// code it then shows. Nothing is stored until that code is given.
    func beginTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, _) = try await checkedForm(request, context)
        return twoFactorSetup(secret: TwoFactor.newSecret(), admin: session.adminName, context: context)
    }

    func twoFactorSetup(
        secret: String, admin: String, context: CofferRequestContext, error: String? = nil,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        page(
            "two-factor",
            [
                "title": "Two-factor sign-in", "onSettings": true, "setup": true, "secret": secret,
                "typedKey": TwoFactor.typedKey(secret),
                "authenticatorURL": TwoFactor.authenticatorURL(secret: secret, admin: admin), "error": error,
            ], context: context, status: status)
    }

    /// `POST /admin/settings/two-factor`: the code from the app turns two-factor on and shows the recovery codes
    /// once.
    func enableTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        let secret = form["secret"] ?? ""
        let codes: [String]
        do {
            codes = try await service.enableTwoFactor(
                environment: scope(session).environment, name: session.adminName, secret: secret,
                code: form["code"] ?? "",
                actor: context.adminActor)
        } catch let error as AdminError {
            return twoFactorSetup(
                secret: secret.isEmpty ? TwoFactor.newSecret() : secret, admin: session.adminName, context: context,
                error: error.description, status: .badRequest)
        }
        // Sessions signed in with the password alone end: from now on every one has given a code.
        try await signIn.endOtherSessions(than: session)
        return page(
            "two-factor",
            [
                "title": "Two-factor sign-in", "onSettings": true, "codes": codes,
                "notice": "Two-factor sign-in is on: from now on, signing in asks for the code your app shows.",
            ], context: context)
    }

    /// `POST /admin/settings/two-factor/off`: with a current code (or a recovery code).
    func disableTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        // The code is checked under the sign-in throttle: a stolen session cannot try every code.
        do {
            if let refusal = try await signIn.turnOffTwoFactor(
                of: session, code: form["code"] ?? "", addressKey: RateLimiter.key(context.clientAddress ?? "local"),
                environment: scope(session).environment, actor: context.adminActor)
            {
                return try await settings(request, context, error: refusal.message)
            }
        } catch let error as AdminError {
            return try await settings(request, context, error: error.description)
        }
        return Self.redirect("/admin/settings?notice=two-factor-off")
    }

    /// `GET /admin/admins` (owners): every admin, their role, grant limit and two-factor, and a form for a new one.
    func admins(_ request: Request, _ context: CofferRequestContext, error: String? = nil, created: String? = nil)
        async throws -> Response
    {
        _ = try context.requireOwner()
        let admins = try await service.admins()
        // Two-factor codes guessed at (every instance's count): the owner is told, the account waits.
        let guessed = try await signIn.guessedCodes(of: admins.filter(\.twoFactor).map(\.name))
        return page(
            "admins",
            [
                "title": "Admins", "onAdmins": true, "error": error, "created": created,
                "notice": Self.notice(request.uri.queryParameters.get("notice")),
                "admins": admins.map { admin in
                    [
                        "name": admin.name, "path": URLText.escape(admin.name), "owner": admin.role == .owner,
                        "support": admin.role == .support,
                        "role": admin.role.rawValue,
                        "limit": admin.grantLimit.map { String($0) } ?? "",
                        "limitText": admin.role == .owner ? "no limit" : PanelText.credits(admin.grantLimit ?? 0),
                        "twoFactor": admin.twoFactor ? "on, \(admin.recoveryCodesLeft) recovery codes left" : "off",
                        "canReset": admin.twoFactor && admin.name != context.adminSession?.adminName,
                        "disabled": admin.disabledAt != nil,
                        "codeWarning": guessed[admin.name].map { count in
                            "\(count) wrong two-factor code\(count == 1 ? "" : "s") in the last hour"
                                + (count >= AccountGuard.codeLimit ? ": sign-ins with a code wait" : "")
                        } as Any,
                        "canDisable": admin.disabledAt == nil && admin.name != context.adminSession?.adminName,
                        "created": Self.time(admin.createdAt, context),
                    ] as [String: Any]
                },
            ], context: context, status: error == nil ? .ok : .badRequest)
    }

    /// `POST /admin/admins` (owners): a new admin with a generated password, shown once.
    func createAdmin(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        let role = AdminRole(rawValue: form["role"] ?? "") ?? .support
        let limit = (form["limit"] ?? "").isEmpty ? nil : PanelText.amount(form["limit"] ?? "")
        do {
            if (form["limit"] ?? "").isEmpty == false, limit == nil {
                throw AdminError.invalid("the grant limit must be a whole number, e.g. 50,000")
            }
            let (admin, password) = try await service.createAdmin(
                environment: scope(session).environment, name: name, role: role,
                grantLimit: role == .support ? limit : nil,
                hasher: hasher, actor: context.adminActor)
            return try await admins(
                request, context,
                created: "Created \(admin.role.rawValue) \(admin.name) with the password \(password). "
                    + "It is shown once: give it to them over a channel you trust.")
        } catch let error as AdminError {
            return try await admins(request, context, error: error.description)
        }
    }

    /// `POST /admin/admins/{name}/role` (owners): role and grant limit.
    func setRole(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, form) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        let name = try context.parameters.require("name")
        guard let role = AdminRole(rawValue: form["role"] ?? "") else {
            return try await admins(request, context, error: "A role is owner or support.")
        }
        let limitText = form["limit"] ?? ""
        let limit = PanelText.amount(limitText)
        do {
            if role == .support, limit == nil {
                throw AdminError.invalid("a support admin needs a grant limit, a whole number such as 50,000")
            }
            _ = try await service.setRole(
                environment: scope(session).environment, name: name, role: role, grantLimit: limit,
                actor: context.adminActor)
        } catch let error as AdminError {
            return try await admins(request, context, error: error.description)
        }
        return Self.redirect("/admin/admins?notice=role")
    }

    /// `POST /admin/admins/{name}/disable` and `.../enable` (owners): an admin who leaves is taken off at once
    /// (their sessions end); the last owner cannot be, and nobody disables themself.
    func setDisabled(_ request: Request, _ context: CofferRequestContext, _ disabled: Bool) async throws -> Response {
        let (session, _) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        let name = try context.parameters.require("name")
        guard !disabled || name != session.adminName else {
            return try await admins(request, context, error: "You cannot disable yourself: ask another owner.")
        }
        do {
            _ = try await service.setDisabled(
                environment: scope(session).environment, name: name, disabled: disabled, actor: context.adminActor)
        } catch let error as AdminError {
            return try await admins(request, context, error: error.description)
        }
        return Self.redirect("/admin/admins?notice=\(disabled ? "disabled" : "enabled")")
    }

    /// `POST /admin/admins/{name}/two-factor-reset` (owners): for an admin who lost their phone and their
    /// recovery codes; they sign in with the password alone and turn it on again.
    func resetTwoFactor(_ request: Request, _ context: CofferRequestContext) async throws -> Response {
        let (session, _) = try await checkedForm(request, context)
        _ = try context.requireOwner()
        let name = try context.parameters.require("name")
        guard name != session.adminName else {
            return try await admins(
                request, context, error: "Turn your own two-factor sign-in off in Settings, with a code.")
        }
        do {
            try await service.disableTwoFactor(
                environment: scope(session).environment, name: name, code: nil, actor: context.adminActor)
        } catch let error as AdminError {
            return try await admins(request, context, error: error.description)
        }
        // Whoever holds their sessions now signs in again.
        try await signIn.endSessions(ofAdmin: name)
        return Self.redirect("/admin/admins?notice=two-factor-reset")
    }
}
