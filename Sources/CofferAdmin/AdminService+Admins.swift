import CofferCore
import CofferStore
import Foundation

/// What the panel shows of an admin (never the password's hash, the two-factor secret or the recovery codes).
public struct AdminView: Sendable, Hashable, Codable {
    /// The sign-in name.
    public var name: String
    /// `owner` or `support`.
    public var role: AdminRole
    /// For support, the most credits one grant may carry.
    public var grantLimit: Int64?
    /// Whether sign-in asks for a code after the password.
    public var twoFactor: Bool
    /// Recovery codes not used yet.
    public var recoveryCodesLeft: Int
    /// When the admin was created.
    public var createdAt: Date
    /// When an owner disabled the admin; `nil` while they may sign in.
    public var disabledAt: Date?

    /// The view of an admin.
    public init(_ admin: Admin) {
        name = admin.name
        role = admin.role
        grantLimit = admin.role == .support ? admin.grantCeiling : nil
        twoFactor = admin.hasTwoFactor
        recoveryCodesLeft = admin.recoveryCodeHashes.count
        createdAt = admin.createdAt
        disabledAt = admin.disabledAt
    }
}

/// The people who sign in to the panel: roles, grant limits and two-factor sign-in, each change audited. One
/// implementation for the panel's Admins and Settings pages and `coffer admin`.
extension AdminService {
    /// Every admin, by name.
    public func admins() async throws -> [AdminView] {
        try await store.admins().map(AdminView.init)
    }

    /// Creates an admin with a generated password (returned once).
    ///
    /// - Throws: ``AdminError/invalid(_:)`` for a bad name or limit, or a name taken.
    public func createAdmin(
        environment: AppStoreEnvironment, name: String, role: AdminRole, grantLimit: Int64?, hasher: PasswordHasher,
        actor: String
    ) async throws -> (admin: AdminView, password: String) {
        try AdminAccounts.check(name: name)
        let limit = try Self.limit(grantLimit, role: role)
        let password = PasswordHasher.generate()
        let admin = Admin(
            name: name, passwordHash: await hasher.hash(password), createdAt: now(), role: role, grantLimit: limit)
        do {
            try await store.createAdmin(admin)
        } catch StoreError.alreadyExists {
            throw AdminError.invalid("an admin named \(name) exists")
        }
        let view = AdminView(admin)
        try await audit(environment, actor: actor, action: "admin.create", subject: "admin \(name)", after: view)
        return (view, password)
    }

    /// Sets an admin's role and (for support) grant limit. The last owner cannot stop being one, so Coffer
    /// always has someone who can manage it.
    public func setRole(
        environment: AppStoreEnvironment, name: String, role: AdminRole, grantLimit: Int64?, actor: String
    ) async throws -> AdminView {
        let limit = try Self.limit(grantLimit, role: role)
        guard let before = try await store.admin(name: name) else { throw AdminError.notFound("admin \(name)") }
        if before.isActiveOwner, role != .owner, try await store.admins().count(where: \.isActiveOwner) <= 1 {
            throw AdminError.invalid("\(name) is the only owner: make another admin an owner first")
        }
        guard
            let after = try await store.updateAdmin(
                name: name,
                { admin in
                    var changed = admin
                    changed.role = role
                    changed.grantLimit = limit
                    return changed
                })
        else { throw AdminError.notFound("admin \(name)") }
        // Counted again after the change: two owners demoting each other at once both see the other still an
        // owner before; whoever counts none after puts their admin back, so an owner always stays.
        if before.isActiveOwner, role != .owner, try await store.admins().count(where: \.isActiveOwner) == 0 {
            _ = try await store.updateAdmin(name: name) { admin in
                var restored = admin
                restored.role = before.role
                restored.grantLimit = before.grantLimit
                return restored
            }
            throw AdminError.invalid("\(name) is the only owner: make another admin an owner first")
        }
        try await audit(
            environment, actor: actor, action: "admin.role", subject: "admin \(name)", before: AdminView(before),
            after: AdminView(after))
        return AdminView(after)
    }

    /// Takes an admin off (`disabled`), or lets them sign in again. A disabled admin cannot sign in and their
    /// sessions end at once (in the store's transaction); the last owner who is not disabled cannot be. Audited
    /// `admin.disable` or `admin.enable`.
    ///
    /// - Throws: ``AdminError/notFound(_:)``; ``AdminError/invalid(_:)`` for the last owner.
    public func setDisabled(environment: AppStoreEnvironment, name: String, disabled: Bool, actor: String) async throws
        -> AdminView
    {
        guard let before = try await store.admin(name: name) else { throw AdminError.notFound("admin \(name)") }
        let lastOwner = AdminError.invalid("\(name) is the only owner: make another admin an owner first")
        if disabled, before.isActiveOwner, try await store.admins().count(where: \.isActiveOwner) <= 1 {
            throw lastOwner
        }
        let at = now()
        guard
            let after = try await store.updateAdmin(
                name: name,
                { admin in
                    guard admin.isEnabled == disabled else { return nil }
                    var changed = admin
                    changed.disabledAt = disabled ? at : nil
                    return changed
                })
        else { return AdminView(before) }
        // Counted again after the change, as for roles: two owners disabling each other at once.
        if disabled, before.isActiveOwner, try await store.admins().count(where: \.isActiveOwner) == 0 {
            _ = try await store.updateAdmin(name: name) { admin in
                var restored = admin
                restored.disabledAt = nil
                return restored
            }
            throw lastOwner
        }
        try await audit(
            environment, actor: actor, action: disabled ? "admin.disable" : "admin.enable", subject: "admin \(name)",
            before: AdminView(before), after: AdminView(after))
        return AdminView(after)
    }

    /// Turns two-factor sign-in on for `name` with `secret`, once `code` shows the admin's app has it.
    ///
    /// - Returns: The recovery codes, to show once.
    /// - Throws: ``AdminError/invalid(_:)`` for a wrong code or when it is on already.
    public func enableTwoFactor(
        environment: AppStoreEnvironment, name: String, secret: String, code: String, actor: String
    )
        async throws -> [String]
    {
        guard secret.count == 20, secret.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw AdminError.invalid("the setup expired: start again")
        }
        let now = now()
        guard let step = TwoFactor.matchingStep(code, secret: secret, now: now, lastStep: nil) else {
            throw AdminError.invalid("that code is not the one your app shows now: check the app and try again")
        }
        let codes = TwoFactor.newRecoveryCodes()
        let hashes = codes.map(TwoFactor.recoveryHash)
        guard
            try await store.updateAdmin(
                name: name,
                { admin in
                    guard !admin.hasTwoFactor else { return nil }
                    var changed = admin
                    changed.twoFactorSecret = secret
                    changed.twoFactorLastStep = step
                    changed.recoveryCodeHashes = hashes
                    return changed
                }) != nil
        else { throw AdminError.invalid("two-factor sign-in is on already") }
        try await audit(environment, actor: actor, action: "admin.two-factor.on", subject: "admin \(name)")
        return codes
    }

    /// Turns two-factor sign-in off: by the admin with a current code, or by an owner for another admin (a lost
    /// phone and lost codes: `code` is `nil`).
    public func disableTwoFactor(environment: AppStoreEnvironment, name: String, code: String?, actor: String)
        async throws
    {
        if let code {
            guard try await checkSecondFactor(name: name, code) else {
                throw AdminError.invalid("that code is not right: two-factor sign-in stays on")
            }
        }
        guard
            try await store.updateAdmin(
                name: name,
                { admin in
                    guard admin.hasTwoFactor else { return nil }
                    var changed = admin
                    changed.twoFactorSecret = nil
                    changed.twoFactorLastStep = nil
                    changed.recoveryCodeHashes = []
                    return changed
                }) != nil
        else { throw AdminError.invalid("two-factor sign-in is off for \(name)") }
        try await audit(
            environment, actor: actor, action: code == nil ? "admin.two-factor.reset" : "admin.two-factor.off",
            subject: "admin \(name)")
    }

    /// Checks a sign-in's second factor: a current code of the admin's app, used once, or one of the admin's
    /// recovery codes, used up.
    public func checkSecondFactor(name: String, _ text: String) async throws -> Bool {
        guard text.utf8.count <= 64 else { return false }
        if TwoFactor.isRecoveryCode(text) {
            let hash = TwoFactor.recoveryHash(text)
            return try await store.updateAdmin(name: name, { $0.isEnabled ? $0.using(recoveryCodeHash: hash) : nil })
                != nil
        }
        let now = now()
        return try await store.updateAdmin(
            name: name,
            { admin in
                guard admin.isEnabled, let secret = admin.twoFactorSecret,
                    let step = TwoFactor.matchingStep(text, secret: secret, now: now, lastStep: admin.twoFactorLastStep)
                else { return nil }
                return admin.using(step: step)
            }) != nil
    }

    private static func limit(_ grantLimit: Int64?, role: AdminRole) throws(AdminError) -> Int64? {
        guard role == .support else { return nil }
        return try rule { () throws(SupportRuleError) in try SupportRules.grantLimit(grantLimit) }
    }
}
