import CofferAdmin
import CofferService
import CofferStore
import Foundation
import Hummingbird
import NIOCore

/// The request context: Hummingbird's basics plus the authenticated user.
public struct CofferRequestContext: RequestContext {
    /// Hummingbird's core context.
    public var coreContext: CoreRequestContextStorage
    /// The admin acting, once a signed request or a panel session is checked.
    public var admin: String?
    /// The panel session, once checked.
    public var adminSession: AdminSession?
    /// The signed-in admin's time zone, shown beside UTC on the panel's pages.
    public var adminTimeZone: TimeZone?
    /// The signed-in admin as stored now (role, grant limit, two-factor).
    public var panelAdmin: Admin?
    /// The admin key a signed admin API request was checked with (its role and grant limit).
    public var adminKey: AdminKey?
    /// The peer's address (a reverse proxy's, behind one).
    public let remoteAddress: SocketAddress?
    /// The client's address: the peer's, or behind a trusted proxy the one it forwards.
    public var clientAddress: String?

    /// Creates a context for a request.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        clientAddress = remoteAddress?.ipAddress
    }
}

extension CofferRequestContext {
    /// Who is acting, for the audit log: the admin key's name and id, or the panel's admin.
    public var adminActor: String { admin ?? "unknown" }

    /// Refuses a support key's request to what only an owner may do (balances, merges, deletions), before
    /// anything is done.
    public func requireOwnerKey() throws {
        guard adminKey?.role ?? .owner == .owner else {
            throw ServiceError.forbidden("this admin key is support's: only an owner key may do this")
        }
    }
}
