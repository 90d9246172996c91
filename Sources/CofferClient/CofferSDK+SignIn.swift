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

    /// Registers, keeps the new credentials where the old ones were kept, and finds the local user they name
    /// (device wallet: a customer this device has not held starts with a ledger of its own, and the backup rule
    /// brings in the server's backup). The keys of what was applied from the server stay when the customer is the
    /// same one.
    private func replaceCredentials(_ refused: Credentials) async throws -> Bool {
        let fresh = try await register()
        registeredAgainAt = now()
        let sameCustomer = fresh.supportId == refused.supportId
        if !sameCustomer {
            // Before the new credentials are kept: this device has never backed another customer's balance up, and
            // the backup rule must see a fresh install even if the app dies right after.
            try state.set("lastBackupAt", "")
            try state.set("lastBackupVersion", "")
        }
        let next = DeviceIdentity(credentials: fresh, appliedKeys: sameCustomer ? identity?.appliedKeys ?? [] : [])
        try credentialStore.save(next)
        identity = next
        user = nil
        _ = try await Self.$replacingCredentials.withValue(true) { try await localUser() }
        publish(.wallet)
        return true
    }

    /// Set while the registration finds its local user: other callers of ``localUser()`` wait for it instead.
    @TaskLocal static var replacingCredentials = false
}
