import CofferAPI
import CofferCore
import Foundation

extension CofferSDK {
    /// How long after registering again a token the server refuses is not registered again: a server that keeps
    /// refusing (another device of the account taking the last place, again and again) is not asked in a loop.
    static let registerAgainPause: TimeInterval = 60

    /// The code Coffer's server answers 401 with for a token it does not take (a proxy's 401 has none).
    static let tokenRefused = "unauthorized"

    /// Runs `flow` with the customer's bearer token. A token Coffer's server no longer takes (401 `unauthorized`)
    /// registers this install again, once, and runs `flow` again with the new token: the server stops taking a
    /// device's token when support merges its customer into an Apple account's without that account's own merge
    /// code, when the customer is deleted at their request, and when newer devices of the Apple account take its
    /// place (`limit.devices`). With ``SDKIdentity/appleAccount`` the install registers with its AppTransaction, so
    /// it finds its Apple account's customer again; otherwise it starts as a new customer. The flows it runs are
    /// the SDK's own, each safe to run twice (every change is keyed).
    func signedIn<T>(_ flow: (String) async throws -> T) async throws -> T {
        let credentials = try await credentials()
        do {
            return try await flow(credentials.token)
        } catch ServerClientError.refused(401, Self.tokenRefused, let why) {
            guard try await registerAgain(replacing: credentials) else {
                throw ServerClientError.refused(401, Self.tokenRefused, why)
            }
            return try await flow(try await self.credentials().token)
        }
    }

    /// Registers this install again in place of `refused` credentials the server answered 401 for; flows that
    /// meet the same 401 meanwhile wait for this one registration.
    ///
    /// - Returns: Whether there are new credentials to try: `false` when this install registered again a moment
    ///   ago (``registerAgainPause``).
    func registerAgain(replacing refused: Credentials) async throws -> Bool {
        // Another flow registered again while this one waited for its answer.
        if let current = identity?.credentials, current.token != refused.token { return true }
        if let running = registration { return try await running.value }
        if let last = registeredAgainAt, now().timeIntervalSince(last) < Self.registerAgainPause { return false }
        let task = Task { try await self.replaceCredentials(refused) }
        registration = task
        defer { registration = nil }
        return try await task.value
    }

    /// Registers, keeps the new credentials where the old ones were kept, and finds the local user they name.
    private func replaceCredentials(_ refused: Credentials) async throws -> Bool {
        let fresh = try await register()
        registeredAgainAt = now()
        try await adopt(fresh, replacing: refused)
        return true
    }

    /// Keeps `fresh` credentials where the old ones were kept, and finds the local user they name (device wallet: a
    /// customer this device has not held starts with a ledger of its own, and the backup rule brings in the
    /// server's backup). The keys of what was applied from the server stay when the customer is the same one.
    private func adopt(_ fresh: CreateUserResponse, replacing refused: Credentials) async throws {
        let sameCustomer = fresh.supportId == refused.supportId
        if !sameCustomer {
            // Before the new credentials are kept: this device has never backed another customer's balance up, and
            // the backup rule must see a fresh install even if the app dies right after.
            try state.set("lastBackupAt", "")
            try state.set("lastBackupVersion", "")
            // Another customer's entitlements for a time are not this one's.
            try state.set(Self.grantedEntitlementsKey, "[]")
        }
        let next = DeviceIdentity(credentials: fresh, appliedKeys: sameCustomer ? identity?.appliedKeys ?? [] : [])
        try credentialStore.save(next)
        identity = next
        user = nil
        _ = try await Self.$replacingCredentials.withValue(true) { try await localUser() }
        publish(.wallet)
    }

    /// The state's note that this install registered as a customer of its own because the AppTransaction StoreKit
    /// held was too old, and waits for Restore Purchases to join the Apple account's customer.
    static let joinPendingKey = "appleAccount.joinPending"

    /// Restore Purchases, on the customer's tap: an install that registered as a customer of its own because its
    /// AppTransaction was too old asks StoreKit for a fresh one (`AppTransaction.refresh()`, which may ask the
    /// customer to sign in: allowed on their action) and joins the Apple account's customer, while it holds nothing
    /// of its own (no purchase, balance or deficit: what it holds stays, and support can merge it with a merge
    /// code).
    ///
    /// The join runs as the install's registration: other flows that ask for the user wait for it, and it is not
    /// run beside a registration after a refused token.
    ///
    /// - Returns: Whether the install now is the Apple account's customer.
    @discardableResult
    func joinAppleAccount() async throws -> Bool {
        guard configuration.identity == .appleAccount, try state.value(Self.joinPendingKey)?.isEmpty == false else {
            return false
        }
        if let running = registration { _ = try? await running.value }
        guard let current = identity?.credentials else { return false }
        let task = Task { try await Self.$replacingCredentials.withValue(true) { try await self.join(current) } }
        registration = task
        defer { if registration == task { registration = nil } }
        return try await task.value
    }

    private func join(_ current: Credentials) async throws -> Bool {
        guard try await holdsNothing(current) else {
            configuration.log(
                .notice, .launch,
                "this install holds purchases of its own: it stays its own customer (support can merge it into the Apple account's)"
            )
            return false
        }
        guard let fresh = await storeKit.appTransaction(refresh: true) else { return false }
        // Asked again after the sign-in sheet, which may have stayed up a while: nothing may have come in meanwhile.
        guard try await holdsNothing(current) else { return false }
        let registered: Result<CreateUserResponse, ServerClientError>
        do {
            registered = .success(try await server.register(signedAppTransaction: fresh))
        } catch {
            registered = .failure(error)
        }
        let answer: CreateUserResponse
        switch registered {
        case .success(let value): answer = value
        // An AppTransaction this server does not take: nothing to join.
        case .failure(.refused(422, _, _)): return false
        case .failure(let error): throw error
        }
        try await adopt(answer, replacing: current)
        try state.set(Self.joinPendingKey, "")
        configuration.log(.info, .launch, "joined the Apple account's customer \(answer.supportId)")
        return true
    }

    /// Whether the install's own customer holds nothing: nothing waiting to be posted, no purchase under way (an
    /// Ask to Buy waiting, say), no purchase or grant on the server, no balance or deficit there, and (device
    /// wallet) nothing in the local ledger but the starting balance.
    private func holdsNothing(_ credentials: Credentials) async throws -> Bool {
        guard try state.outbox().isEmpty else { return false }
        for product in catalog.products where try state.hasOpenIntent(productId: product.id) { return false }
        guard try await server.pendingGrants(token: credentials.token).isEmpty else { return false }
        let me = try await server.me(token: credentials.token)
        guard try await server.purchases(token: credentials.token).isEmpty else { return false }
        guard configuration.wallet == .device else {
            return me.balance == 0 && me.deficit == 0 && (me.balances ?? [:]).values.allSatisfy { $0 == 0 }
                && (me.deficits ?? [:]).values.allSatisfy { $0 == 0 }
        }
        return try await holdsOnlyStartingBalance(localUser())
    }

    /// Set while the registration finds its local user: other callers of ``localUser()`` wait for it instead.
    @TaskLocal static var replacingCredentials = false
}
