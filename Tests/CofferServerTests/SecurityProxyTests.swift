import CofferService
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The third security round's attack through a proxy on the same machine that nobody listed as trusted: behind the
/// documented nginx block, every visitor arrives from 127.0.0.1 with `Host: localhost`.
extension SecurityTests {
    @Test("a request with a forwarding header from a loopback peer not trusted is never this machine's")
    func untrustedLocalProxy() async throws {
        let app = try HardeningTests.server { _ in }
        try await app.test(.live) { client in
            // Straight from this machine: the panel answers.
            let direct = try await client.execute(uri: "/admin/login", method: .get, headers: [:])
            #expect(direct.status == .ok)
            for header in ["X-Forwarded-For", "Forwarded", "X-Real-IP"] {
                let value = header == "Forwarded" ? "for=203.0.113.9" : "203.0.113.9"
                let proxied = try await client.execute(
                    uri: "/admin/login", method: .get, headers: [HTTPField.Name(header)!: value])
                #expect(proxied.status == .forbidden, "\(header) from a proxy nobody listed")
                #expect(String(buffer: proxied.body).contains("answers only on its own machine"))
                // Not even a forwarding header naming this machine makes it local.
                let local = try await client.execute(
                    uri: "/admin/login", method: .get,
                    headers: [HTTPField.Name(header)!: header == "Forwarded" ? "for=127.0.0.1" : "127.0.0.1"])
                #expect(local.status == .forbidden)
            }
        }
    }
}
