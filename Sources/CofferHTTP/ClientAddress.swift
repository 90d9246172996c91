import CofferService
import Foundation
import HTTPTypes
import Hummingbird

/// Sets ``CofferRequestContext/clientAddress`` from the peer and, behind trusted proxies, `X-Forwarded-For`.
public struct ClientAddressMiddleware: RouterMiddleware {
    /// Coffer's request context.
    public typealias Context = CofferRequestContext
    let proxies: TrustedProxies

    /// Creates the middleware, trusting `proxies`' forwarded addresses.
    public init(proxies: TrustedProxies) { self.proxies = proxies }

    /// Sets the client's address, then answers the request.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var context = context
        let peer: String? =
            switch context.remoteAddress {
            case .unixDomainSocket: "127.0.0.1"
            case let address?: address.ipAddress
            case nil: nil
            }
        let forwardedFor = request.headers[values: Self.forwardedFor]
        context.clientAddress = proxies.client(
            peer: peer, forwardedFor: forwardedFor,
            forwarded: !forwardedFor.isEmpty || request.headers[Self.forwarded] != nil
                || request.headers[Self.realIP] != nil)
        return try await next(request, context)
    }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!
    static let realIP = HTTPField.Name("X-Real-IP")!
}

/// Which Host names the panel answers to: loopback names, and the configured public host when
/// `panel.remote` is on. Anything else is refused, so a web page whose name was rebound to 127.0.0.1 (DNS
/// rebinding) cannot read or drive the panel from a browser on this machine.
public struct PanelHosts: Sendable {
    /// The public host name (without port), when the panel is open to other machines.
    public var publicHost: String?

    /// Creates the rule.
    public init(publicHost: String?) { self.publicHost = publicHost }

    /// Whether a request's Host (with or without a port) is acceptable.
    public func allows(_ authority: String?) -> Bool {
        guard let authority, let host = Self.host(of: authority) else { return false }
        if Self.isLoopbackName(host) { return true }
        if let publicHost { return host == publicHost.lowercased() }
        return false
    }

    /// The host part of a Host header, lowercased: `[::1]:8080` -> `::1`, `Example.com:443` -> `example.com`.
    public static func host(of authority: String) -> String? {
        let text = authority.lowercased()
        guard text.utf8.count <= 255, !text.isEmpty else { return nil }
        if text.hasPrefix("[") {
            guard let end = text.firstIndex(of: "]") else { return nil }
            return String(text[text.index(after: text.startIndex)..<end])
        }
        return text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
    }

    /// Whether a host name is this machine's.
    public static func isLoopbackName(_ host: String) -> Bool {
        host == "localhost" || host.hasSuffix(".localhost") || AddressRange.isLoopback(host)
    }
}
