import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

extension CofferSDK {
    /// Listens to the server's event stream until the calling task is cancelled: a grant is picked up as
    /// soon as support makes it, a refund the server learned of is taken back, support's edit of the backup
    /// is accepted, the entitlements refresh. Each time the stream opens, everything is looked at once
    /// (events sent while it was closed are not replayed); when it drops it is opened again after `retry`.
    /// Failures are kept in ``lastEventFailure``.
    public func listenForServerEvents(retry: Duration = .seconds(5)) async {
        while !Task.isCancelled {
            do {
                try await signedIn { token in
                    for try await signal in server.events(token: token) {
                        switch signal {
                        case .connected:
                            isConnectedToEvents = true
                            await react(to: nil)
                        case .event(let event):
                            await react(to: event.type)
                        }
                    }
                }
            } catch {
                // The stream a cancelled listener closes ends in an error that is no failure.
                if !Task.isCancelled { lastEventFailure = "\(error)" }
            }
            isConnectedToEvents = false
            do { try await configuration.timerClock.sleep(for: retry) } catch { return }
        }
    }

    /// Acts on one event (`nil`: look at everything).
    func react(to kind: ServerEventKind?) async {
        do {
            switch kind {
            case nil:
                _ = try await enteredForeground()
            case .grant:
                if try await refreshGrants() != 0 { _ = try await syncBackup() }
            case .adjustment:
                if try await applyMailbox() != 0 { _ = try await syncBackup() }
            case .backup:
                _ = try await syncBackup()
            case .entitlements:
                await refreshGrantedEntitlements()
                _ = try await refreshEntitlements()
            case .consentRescinded:
                publish(.consentRescinded)
            }
        } catch {
            if !Task.isCancelled { lastEventFailure = "\(error)" }
        }
        // The server changed something for the customer (in the server wallet, the balance itself).
        publish(.wallet)
    }

    /// Registers this device for background pushes: pass the token
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` gives. The server then wakes the app
    /// when support grants or edits a balance, or a refund touches the customer; hand the push to
    /// ``handlePush(_:)``.
    ///
    /// - Parameters:
    ///   - deviceToken: APNs' device token.
    ///   - development: Whether the app is built for development (its token belongs to APNs' sandbox).
    public func registerPushToken(_ deviceToken: Data, development: Bool = false) async throws {
        let hex = deviceToken.map { String(format: "%02x", $0) }.joined()
        try await signedIn {
            try await server.registerPushToken(hex, environment: development ? "sandbox" : "production", bearer: $0)
        }
    }

    /// Acts on a background push from Coffer's server: the `coffer` dictionary of its payload (its `type`:
    /// `grant`, `adjustment`, ...), as `userInfo["coffer"]` holds it. Grants are claimed, adjustments applied,
    /// the backup synced, as the event stream would.
    ///
    /// - Returns: Whether the push was Coffer's.
    @discardableResult
    public func handlePush(_ coffer: [String: String]?) async -> Bool {
        guard let type = coffer?["type"], let kind = ServerEventKind(rawValue: type) else { return false }
        await react(to: kind)
        return true
    }

    /// What changes for the customer, as it happens: the wallet (a purchase, a refund, a grant, a spend, a
    /// restore), the entitlements, a backup, and the loyalty lifetime earned for the first time. For a UI model
    /// (``CofferModel`` listens to it); a new stream hears what changes after it is made.
    public func changes() -> AsyncStream<CofferChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: CofferChange.self)
        let id = UUID()
        changeWatchers[id] = continuation
        continuation.onTermination = { _ in Task { await self.stopWatchingChanges(id) } }
        return stream
    }

    func stopWatchingChanges(_ id: UUID) { changeWatchers[id] = nil }

    func publish(_ change: CofferChange) {
        for continuation in changeWatchers.values { continuation.yield(change) }
    }
}

/// One change for the customer, from ``CofferSDK/changes()``.
public enum CofferChange: Sendable, Equatable {
    /// The balance or the deficit may have changed: read them again.
    case wallet
    /// The device wallet's balance and deficit are these now, after a change made in play (``CofferSDK/earn(_:key:)``,
    /// ``CofferSDK/spend(_:key:)``, ``CofferSDK/setBalance(_:expected:reason:)``): nothing else changed, and there is
    /// nothing to ask the server.
    case balance(Wallet)
    /// The entitlements are these now.
    case entitlements([String])
    /// A backup was written, or the server's was taken.
    case backup
    /// The loyalty lifetime of this subscription group was earned: the celebration screen, once per customer
    /// (kept with the identity, which survives reinstalling the app), never again, even if refunds take it
    /// back and it is earned anew.
    case loyaltyLifetimeEarned(group: String)
    /// The subscription of this group ended without a refund (auto-renew off, a billing failure past its grace): its
    /// entitlements are gone. A screen says so and offers to subscribe again or manage it; a refund is not a lapse.
    case subscriptionLapsed(group: String)
    /// A parent or guardian withdrew consent for the account (Apple's RESCIND_CONSENT, Declared Age Range): stop
    /// offering purchases and ask again, as Apple's guidance for child accounts says.
    case consentRescinded
}
