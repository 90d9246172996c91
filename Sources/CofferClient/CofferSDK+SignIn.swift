import CofferAPI
import CofferCore
import Foundation

extension CofferSDK {
    /// How long after registering again a token the server refuses is not registered again: a server that keeps
    /// refusing (another device of the account taking the last place, again and again) is not asked in a loop.
    static let registerAgainPause: TimeInterval = 60

    /// Runs `flow` with the customer's bearer token. A token the server no longer knows (401) registers this
    /// install again, once, and runs `flow` again with the new token: the server signs a device out when support
    /// signs it out, when support merges its customer into an Apple account's without that account's own merge
    /// code, when the customer is deleted at their request, and when newer devices of the Apple account take its
    /// place (`limit.devices`). With ``SDKIdentity/appleAccount`` the install registers with its AppTransaction, so
    /// it finds its Apple account's customer again; otherwise it starts as a new customer. The flows it runs are
    /// the SDK's own, each safe to run twice (every change is keyed).
    func signedIn<T>(_ flow: (String) async throws -> T) async throws -> T {
        let credentials = try await credentials()
        do {
            return try await flow(credentials.token)
        } catch ServerClientError.refused(401, let code, let why) {
            guard try await registerAgain(replacing: credentials) else {
                throw ServerClientError.refused(401, code, why)
            }
            return try await flow(try await self.credentials().token)
        }
    }

    /// Registers this install again in place of `refused` credentials the server answered 401 for, keeps the new
    /// ones where the old ones were kept, and finds the local user they name (device wallet: a customer this
    /// device has not held starts with a ledger of its own, and the backup rule brings in the server's backup).
    /// The keys of what was applied from the server stay when the customer is the same one.
    ///
    /// - Returns: Whether there are new credentials to try: `false` when this install registered again a moment
    ///   ago (``registerAgainPause``).
    func registerAgain(replacing refused: Credentials) async throws -> Bool {
        // Another flow registered again while this one waited for its answer.
        if let current = identity?.credentials, current.token != refused.token { return true }
        if let last = registeredAgainAt, now().timeIntervalSince(last) < Self.registerAgainPause { return false }
        registeredAgainAt = now()
        let fresh = try await register()
        let sameCustomer = fresh.supportId == refused.supportId
        try credentialStore.save(
            DeviceIdentity(credentials: fresh, appliedKeys: sameCustomer ? identity?.appliedKeys ?? [] : []))
        if !sameCustomer {
            // This device has never backed another customer's balance up: the backup rule sees a fresh install.
            try state.set("lastBackupAt", "")
            try state.set("lastBackupVersion", "")
        }
        identity = nil
        user = nil
        _ = try await localUser()
        publish(.wallet)
        return true
    }
}
