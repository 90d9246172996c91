import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP address or a CIDR range (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`).
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    /// The network's bytes (4 for IPv4, 16 for IPv6).
    let bytes: [UInt8]
    /// How many leading bits must match.
    let prefixLength: Int

    /// Parses an address or a range; `nil` when it is neither.
    public init?(_ text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let bytes = Self.parse(first) else { return nil }
        let maximum = bytes.count * 8
        if parts.count == 2 {
            guard parts[1].utf8.count <= 3, let length = Int(parts[1]), (0...maximum).contains(length) else {
                return nil
            }
            prefixLength = length
        } else {
            prefixLength = maximum
        }
        self.bytes = bytes
    }

    /// Whether `address` (text) is in the range. IPv4-mapped IPv6 addresses count as their IPv4 address.
    public func contains(_ address: String) -> Bool {
        guard let other = Self.parse(address) else { return false }
        return contains(bytes: other)
    }

    func contains(bytes other: [UInt8]) -> Bool {
        let other = Self.unmapped(other)
        guard other.count == bytes.count else { return false }
        var remaining = prefixLength
        for index in bytes.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if bytes[index] & mask != other[index] & mask { return false }
            remaining -= bits
        }
        return true
    }

    /// The range as configured.
    public var description: String {
        let text = bytes.count == 4 ? bytes.map(String.init).joined(separator: ".") : Self.ipv6Text(bytes)
        return prefixLength == bytes.count * 8 ? text : "\(text)/\(prefixLength)"
    }

    /// The bytes of an IPv4 or IPv6 address (brackets allowed), `nil` when it is not one.
    static func parse(_ text: String) -> [UInt8]? {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return unmapped(withUnsafeBytes(of: &v6) { Array($0) })
        }
        return nil
    }

    /// Whether an address is a loopback address (127.0.0.0/8, ::1, or 127.x mapped into IPv6).
    public static func isLoopback(_ address: String) -> Bool {
        guard let bytes = parse(address) else { return false }
        return bytes.count == 4 ? bytes[0] == 127 : bytes == Array(repeating: 0, count: 15) + [1]
    }

    /// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4 bytes; anything else unchanged.
    static func unmapped(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else {
            return bytes
        }
        return Array(bytes[12..<16])
    }

    private static func ipv6Text(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: bytes.count, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        .joined(separator: ":")
    }
}

/// Who the client is: the peer's address, or, when the peer is a trusted reverse proxy, the address the
/// proxies name in `X-Forwarded-For` (the right-most one that is not itself a trusted proxy). Forwarded headers
/// from anyone else are ignored, so nobody can claim another address by sending one. A request from a trusted
/// proxy whose `X-Forwarded-For` is missing, too long or not addresses is from ``unknown``: never the proxy's
/// own (loopback) address, which would open the panel's "this machine only" to anyone. Likewise a request that
/// carries a forwarding header (`X-Forwarded-For`, `Forwarded`, `X-Real-IP`) from a loopback peer that is not a
/// trusted proxy: a proxy on this machine nobody listed, whose own address would make everyone behind it local.
public struct TrustedProxies: Sendable {
    /// The proxies' addresses and ranges.
    public var ranges: [AddressRange]

    /// No trusted proxies: the peer is the client.
    public init(_ ranges: [AddressRange] = []) { self.ranges = ranges }

    /// Parses a comma-separated list; `nil` when an entry is not an address or range.
    public init?(list: String) {
        var ranges: [AddressRange] = []
        for entry in list.split(separator: ",") where !entry.trimmingCharacters(in: .whitespaces).isEmpty {
            guard let range = AddressRange(String(entry)) else { return nil }
            ranges.append(range)
        }
        self.ranges = ranges
    }

    /// Whether an address is one of the trusted proxies.
    public func trusts(_ address: String) -> Bool {
        guard let bytes = AddressRange.parse(address) else { return false }
        return ranges.contains { $0.contains(bytes: bytes) }
    }

    /// The client address of a request from a trusted proxy that does not say who the client is.
    public static let unknown = "unknown"

    /// The client's address for a request from `peer` carrying `forwardedFor` (the `X-Forwarded-For` values).
    ///
    /// - Parameter forwarded: Whether the request carries any forwarding header (`X-Forwarded-For`, `Forwarded`,
    ///   `X-Real-IP`).
    public func client(peer: String?, forwardedFor: [String], forwarded: Bool? = nil) -> String? {
        guard let peer else { return nil }
        guard trusts(peer) else {
            // Forwarded by a proxy nobody listed: never this machine's, whatever address the proxy has.
            let carries = forwarded ?? !forwardedFor.isEmpty
            return carries && AddressRange.isLoopback(peer) ? Self.unknown : peer
        }
        let hops = forwardedFor.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard !hops.isEmpty, hops.count <= 64 else { return Self.unknown }
        for hop in hops.reversed() {
            guard let address = Self.address(ofHop: hop), let bytes = AddressRange.parse(address) else {
                return Self.unknown
            }
            if !ranges.contains(where: { $0.contains(bytes: bytes) }) { return address }
        }
        // Every hop is a trusted proxy: the nearest one's client is the client.
        return hops.last.flatMap(Self.address(ofHop:)) ?? Self.unknown
    }

    /// The address in one `X-Forwarded-For` hop, without a port: `203.0.113.9`, `203.0.113.9:5000`,
    /// `2001:db8::1`, `[2001:db8::1]:443`.
    static func address(ofHop hop: String) -> String? {
        if hop.hasPrefix("[") {
            guard let end = hop.firstIndex(of: "]") else { return nil }
            return String(hop[hop.index(after: hop.startIndex)..<end])
        }
        let parts = hop.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 2 ? String(parts[0]) : hop
    }
}
