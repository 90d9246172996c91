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
                let token = try await credentials().token
                for try await signal in server.events(token: token) {
                    switch signal {
                    case .connected:
                        isConnectedToEvents = true
                        await react(to: nil)
                    case .event(let event):
                        await react(to: event.type)
                    }
                }
            } catch {
                lastEventFailure = "\(error)"
            }
            isConnectedToEvents = false
            do { try await Task.sleep(for: retry) } catch { return }
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
                _ = try await refreshEntitlements()
            }
        } catch {
            lastEventFailure = "\(error)"
        }
    }
}
