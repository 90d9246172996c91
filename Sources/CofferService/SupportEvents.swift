import CofferAPI
import CofferAdmin
import CofferCore
import CofferStore
import Foundation

/// What an app hears of support's changes, decided once for every door support comes through: the server's own
/// panel and admin API (on its event hub) and the support commands on the server's database (through the store's
/// relay, so every instance serving the app tells it at once).
public enum SupportEvents {
    /// The event an app hears on its event stream for `change`, and whether it also wakes a suspended app (a push;
    /// `nil`: as the event's kind says, ``PushNotifier/wakes(_:)``); `nil` for a change that is no event of the
    /// app's (a merge, a deletion: its token stops instead).
    public static func event(for change: AdminService.Change) -> (event: ServerEventBody, wakes: Bool?)? {
        switch change {
        case .grant(let id): (ServerEventBody(type: .grant, key: id.uuidString.lowercased()), nil)
        case .adjustment(let key): (ServerEventBody(type: .adjustment, key: key), nil)
        // Support's balance edit in the device wallet: the app takes it from the backup, so wake it.
        case .backup(let version): (ServerEventBody(type: .backup, key: String(version)), true)
        // An entitlement for a time: the app refreshes what it unlocks, woken for it.
        case .entitlements(let grant): (ServerEventBody(type: .entitlements, key: grant.uuidString.lowercased()), true)
        case .merged, .deleted: nil
        }
    }

    /// Tells every instance serving the database of support's change made outside them (a support command on the
    /// server's database): they pass it to the app's open event streams. Events are hints: when it cannot be sent
    /// (a database with no relay, SQLite), the app sees the change on its next refresh.
    ///
    /// - Returns: Whether it was sent.
    @discardableResult
    public static func relay(_ change: AdminService.Change, to user: UUID, through broadcast: any EventBroadcast)
        async -> Bool
    {
        guard let (event, _) = event(for: change) else { return false }
        do {
            try await broadcast.broadcast(
                BroadcastMessage(origin: UUID(), user: user, kind: event.type.rawValue, key: event.key))
            return true
        } catch {
            return false
        }
    }
}

extension AdminService {
    /// Support's operations for a support command run on the server's own database (`coffer grant`,
    /// `coffer set-balance` without `--server`): what it changes reaches the apps' open event streams through the
    /// store's relay, as the server's own changes do (PostgreSQL; on SQLite, on the app's next refresh).
    public static func onServerDatabase(store: any CofferStore, catalog: Catalog, walletMode: WalletMode)
        -> AdminService
    {
        let relay = store as? any EventBroadcast
        return AdminService(
            store: store, catalog: catalog, walletMode: walletMode,
            onChange: { user, change in
                if let relay { await SupportEvents.relay(change, to: user, through: relay) }
            })
    }
}
