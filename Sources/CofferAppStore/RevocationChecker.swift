import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SwiftASN1
import Synchronization
import X509

/// Online revocation checks: asks the OCSP responder named in the leaf's and the intermediate's Authority
/// Information Access extension whether each is still good, at the current time.
///
/// The check fails hard: a certificate without an OCSP responder, a revoked or unknown status, or a
/// response that does not verify rejects the data. A responder that cannot be reached (refused, timed out,
/// an HTTP 5xx) gives ``VerificationError/retryableVerificationFailure(_:)``, so the caller asks again later
/// rather than treating a network outage as a verdict.
///
/// ```swift
/// let verifier = try SignedDataVerifier(
///     rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.example", appAppleId: 1234,
///     environment: .production, validationTime: .online(RevocationChecker(httpClient: http)))
/// ```
public struct RevocationChecker: Sendable {
    let httpClient: HTTPClient
    /// The longest one OCSP request may take.
    public let timeout: Duration

    /// Creates a checker.
    ///
    /// - Parameters:
    ///   - httpClient: The client OCSP requests go through; the caller shuts it down.
    ///   - timeout: The longest one request may take (two are made per chain: leaf and intermediate).
    public init(httpClient: HTTPClient, timeout: Duration = .seconds(4)) {
        self.httpClient = httpClient
        self.timeout = timeout
    }

    /// The policies that check one chain, and what they found out about the network.
    func policies() -> (requester: Requester, responders: RequireOCSPResponders, ocsp: OCSPVerifierPolicy<Requester>) {
        let requester = Requester(httpClient: httpClient, timeout: timeout)
        return (requester, RequireOCSPResponders(), OCSPVerifierPolicy(failureMode: .hard, requester: requester))
    }

    /// Sends OCSP requests over HTTP POST and remembers whether a responder could not be reached.
    final class Requester: OCSPRequester {
        let httpClient: HTTPClient
        let timeout: Duration
        private let failure = Mutex<String?>(nil)

        init(httpClient: HTTPClient, timeout: Duration) {
            self.httpClient = httpClient
            self.timeout = timeout
        }

        /// Why a responder could not be reached, if one could not.
        var unreachable: String? { failure.withLock { $0 } }

        func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
            var http = HTTPClientRequest(url: uri)
            http.method = .POST
            http.headers.add(name: "Content-Type", value: "application/ocsp-request")
            http.headers.add(name: "Accept", value: "application/ocsp-response")
            http.body = .bytes(ByteBuffer(bytes: request))
            do {
                let response = try await httpClient.execute(http, timeout: .init(timeout))
                let body = try await response.body.collect(upTo: 1 << 20)
                if response.status.code >= 500 {
                    return unreachable(uri, "HTTP \(response.status.code)")
                }
                guard response.status == .ok else {
                    return .terminalError(OCSPFailure(description: "OCSP responder \(uri) answered \(response.status)"))
                }
                return .response(Array(buffer: body))
            } catch {
                return unreachable(uri, "\(error)")
            }
        }

        private func unreachable(_ uri: String, _ why: String) -> OCSPRequesterQueryResult {
            let message = "OCSP responder \(uri) could not be reached: \(why)"
            failure.withLock { $0 = message }
            return .terminalError(OCSPFailure(description: message))
        }
    }

    struct OCSPFailure: Error, CustomStringConvertible {
        var description: String
    }
}

/// With online checks, the leaf and the intermediate must both name an OCSP responder: a certificate that
/// cannot be checked is not trusted.
struct RequireOCSPResponders: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        for (index, name) in zip(chain.indices.prefix(2), ["leaf", "intermediate"]) {
            let access = try? chain[index].extensions.authorityInformationAccess
            let named = access?.contains { $0.method == .ocspServer } ?? false
            if !named { return .failsToMeetPolicy(reason: "the \(name) names no OCSP responder") }
        }
        return .meetsPolicy
    }
}

extension TimeAmount {
    fileprivate init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
