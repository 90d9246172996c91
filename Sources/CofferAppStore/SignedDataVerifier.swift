import Crypto
import Foundation

/// Verifies and decodes the signed data Apple sends: transactions, renewal info, Notifications V2 and app
/// transactions. Follows Apple's own verifier step by step:
///
/// 1. The JWS is split strictly (three base64url parts, a JSON header without repeated keys).
/// 2. The algorithm is ES256; anything else (`none`, `HS256`, `ES384`, ...) is refused.
/// 3. The x5c chain is verified against the pinned roots (see ``ChainVerifier``) at the effective date:
///    the payload's `signedDate` offline, the current time with ``ValidationTime/current``, and the current
///    time plus OCSP checks of the leaf and intermediate with ``ValidationTime/online(_:)``.
/// 4. The ES256 signature is checked with the leaf's key.
/// 5. The bundle id, environment and (in Production) appAppleId are checked; a notification's nested
///    signed transaction and renewal info are verified the same way.
///
/// In the Xcode and LocalTesting environments data is decoded and checked but its signature is never
/// trusted, since Xcode signs with its own key; in Sandbox and Production such data fails verification, unless a
/// Sandbox verifier is given the one certificate Xcode's StoreKit testing signs with (``XcodeCertificate``): then
/// data whose `x5c` is exactly that certificate, valid at its `signedDate`, whose signature verifies with it and
/// which says `Xcode`, is accepted as Xcode's.
///
/// ```swift
/// let verifier = try SignedDataVerifier(
///     rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.example", appAppleId: nil, environment: .sandbox)
/// let transaction = try await verifier.verifyTransaction(signedTransaction)
/// ```
public struct SignedDataVerifier: Sendable {
    /// Which date certificates must be valid at.
    public enum ValidationTime: Sendable {
        /// The payload's own `signedDate` (Apple's offline rule). A genuine old JWS keeps verifying; only the
        /// ledger stops replay.
        case signedDate
        /// The current time: data signed by a certificate that has since expired is refused.
        case current
        /// The current time, and OCSP checks of the leaf and intermediate (hard-fail; an unreachable
        /// responder gives `RETRYABLE_VERIFICATION_FAILURE`).
        case online(RevocationChecker)
    }

    /// The app's bundle id.
    public let bundleId: String
    /// The app's Apple id; required in Production.
    public let appAppleId: Int64?
    /// The environment data must come from.
    public let environment: SignedDataEnvironment
    /// Whether a Production verifier also accepts data that says Sandbox, verified as Sandbox (App Review and
    /// TestFlight): against the same real roots, without the appAppleId Sandbox data may lack.
    public let acceptsSandbox: Bool
    /// Which date certificates must be valid at.
    public let validationTime: ValidationTime
    /// Xcode's StoreKit testing certificate, trusted for data that says `Xcode` (Sandbox only).
    public let xcodeCertificate: XcodeCertificate?
    private let chainVerifier: ChainVerifier
    private let now: @Sendable () -> Date

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - rootCertificates: DER roots to trust: ``AppleRoots/rootCAG3()`` in production, test roots in tests.
    ///   - bundleId: The app's bundle id.
    ///   - appAppleId: The app's Apple id; required in Production.
    ///   - environment: Where data must come from.
    ///   - acceptsSandbox: In Production, also accept data that says Sandbox, as Apple prescribes for App Review.
    ///   - validationTime: The effective date of certificate checks.
    ///   - cache: The verified-chain cache, `nil` to verify every chain in full.
    ///   - xcodeCertificate: In Sandbox, the certificate Xcode's StoreKit testing signs with: data signed by it
    ///     alone that says `Xcode` is accepted.
    ///   - now: The clock.
    /// - Throws: ``VerificationError/invalidAppIdentifier(_:)`` for Production without an appAppleId, or
    ///   ``VerificationError/invalidCertificate(_:)`` for an unparseable root or, in Production, a root of the
    ///   App Store simulator.
    public init(
        rootCertificates: [Data], bundleId: String, appAppleId: Int64?, environment: SignedDataEnvironment,
        acceptsSandbox: Bool = false, validationTime: ValidationTime = .signedDate, cache: ChainCache? = ChainCache(),
        xcodeCertificate: XcodeCertificate? = nil, now: @escaping @Sendable () -> Date = Date.init
    ) throws(VerificationError) {
        if environment == .production, appAppleId == nil {
            throw .invalidAppIdentifier("an appAppleId is required in Production")
        }
        if xcodeCertificate != nil, environment != .sandbox {
            throw .invalidCertificate("Xcode's StoreKit testing certificate is trusted in Sandbox only")
        }
        self.xcodeCertificate = xcodeCertificate
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.acceptsSandbox = acceptsSandbox && environment == .production
        self.validationTime = validationTime
        let revocation: RevocationChecker? =
            if case .online(let checker) = validationTime { checker } else { nil }
        self.chainVerifier = try ChainVerifier(
            rootCertificates: rootCertificates, cache: cache, revocation: revocation)
        if environment == .production, chainVerifier.simulatorRoots > 0 {
            throw .invalidCertificate(
                "the App Store simulator's root cannot be trusted in Production; trust it in Sandbox only")
        }
        self.now = now
    }

    /// Verifies a StoreKit 2 signed transaction (`signedTransactionInfo`, `jwsRepresentation`).
    public func verifyTransaction(_ signed: String) async throws(VerificationError) -> JWSTransactionDecodedPayload {
        let transaction = try await verify(signed, as: JWSTransactionDecodedPayload.self)
        guard transaction.bundleId == bundleId else {
            throw .invalidAppIdentifier("bundle id \(transaction.bundleId ?? "none") is not \(bundleId)")
        }
        try checkEnvironment(transaction.rawEnvironment)
        return transaction
    }

    /// Verifies signed renewal info (`signedRenewalInfo`).
    public func verifyRenewalInfo(_ signed: String) async throws(VerificationError) -> JWSRenewalInfoDecodedPayload {
        let renewalInfo = try await verify(signed, as: JWSRenewalInfoDecodedPayload.self)
        try checkEnvironment(renewalInfo.rawEnvironment)
        return renewalInfo
    }

    /// Verifies an app transaction (`AppTransaction.jwsRepresentation`).
    public func verifyAppTransaction(_ signed: String) async throws(VerificationError) -> AppTransaction {
        let appTransaction = try await verify(signed, as: AppTransaction.self)
        guard appTransaction.bundleId == bundleId,
            !appleIdRequired(forDataFrom: appTransaction.rawReceiptType) || appTransaction.appAppleId == appAppleId
        else { throw .invalidAppIdentifier("the app transaction is for another app") }
        try checkEnvironment(appTransaction.rawReceiptType)
        return appTransaction
    }

    /// Verifies an App Store Server Notification V2 (`signedPayload`) and the signed transaction and renewal
    /// info inside it.
    public func verifyNotification(_ signed: String) async throws(VerificationError) -> VerifiedNotification {
        let payload = try await verify(signed, as: ResponseBodyV2DecodedPayload.self)
        let (appBundleId, appleId, rawEnvironment): (String?, Int64?, String?)
        if let data = payload.data {
            (appBundleId, appleId, rawEnvironment) = (data.bundleId, data.appAppleId, data.rawEnvironment)
        } else if let summary = payload.summary {
            (appBundleId, appleId, rawEnvironment) = (summary.bundleId, summary.appAppleId, summary.rawEnvironment)
        } else if let appData = payload.appData {
            (appBundleId, appleId, rawEnvironment) = (appData.bundleId, appData.appAppleId, appData.rawEnvironment)
        } else if let token = payload.externalPurchaseToken {
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            (appBundleId, appleId, rawEnvironment) = (
                token.bundleId, token.appAppleId,
                (sandbox ? SignedDataEnvironment.sandbox : .production).rawValue
            )
        } else {
            throw .verificationFailure("the notification has no data, summary, appData or externalPurchaseToken")
        }
        guard appBundleId == bundleId, !appleIdRequired(forDataFrom: rawEnvironment) || appleId == appAppleId else {
            throw .invalidAppIdentifier(
                "notification for bundle \(appBundleId ?? "none"), appAppleId \(appleId.map(String.init) ?? "none")")
        }
        try checkEnvironment(rawEnvironment)
        let transaction = try await payload.data?.signedTransactionInfo.asyncMap {
            signed async throws(VerificationError) in
            try await verifyTransaction(signed)
        }
        let renewalInfo = try await payload.data?.signedRenewalInfo.asyncMap { signed async throws(VerificationError) in
            try await verifyRenewalInfo(signed)
        }
        let appTransaction = try await payload.appData?.signedAppTransactionInfo.asyncMap {
            signed async throws(VerificationError) in try await verifyAppTransaction(signed)
        }
        return VerifiedNotification(
            payload: payload, transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction)
    }

    /// The shared steps: split, decode, check the algorithm, the chain and the signature.
    func verify<T: SignedPayload>(_ signed: String, as type: T.Type) async throws(VerificationError) -> T {
        let jws = try JWS(compact: signed)
        let payload: T
        do {
            payload = try AppleJSON.decode(T.self, from: jws.payload)
        } catch {
            throw .verificationFailure("the payload does not decode: \(error)")
        }
        if environment.isLocal {
            _ = try jws.header()
            return payload
        }
        let date: Date
        switch validationTime {
        case .signedDate: date = payload.effectiveDate ?? now()
        case .current, .online: date = now()
        }
        if let xcodeCertificate, try xcodeCertificate.signs(jws.header()) {
            // Xcode's data is checked at its own signedDate, as Apple's is offline: its certificate lasts a year.
            try xcodeCertificate.verify(jws, at: payload.effectiveDate ?? now())
            guard payload.dataEnvironment == SignedDataEnvironment.xcode.rawValue else {
                throw .invalidEnvironment(
                    "data signed by Xcode's certificate says \(payload.dataEnvironment ?? "no environment"), not Xcode")
            }
            return payload
        }
        let leaf = try await chainVerifier.verify(jws, at: date)
        guard jws.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature),
            leaf.publicKey.isValidSignature(signature, for: jws.signingInputDigest(continuing: leaf.signingPrefix))
        else { throw .verificationFailure("the ES256 signature does not verify") }
        // Only a chain that signed this genuine data is remembered.
        chainVerifier.remember(leaf)
        if xcodeCertificate != nil, payload.dataEnvironment == SignedDataEnvironment.xcode.rawValue {
            throw .invalidEnvironment("only Xcode's certificate signs data that says Xcode")
        }
        return payload
    }

    /// Whether data from `raw` must carry this app's Apple id: Production data at a Production verifier.
    private func appleIdRequired(forDataFrom raw: String?) -> Bool {
        environment == .production && !(acceptsSandbox && raw == SignedDataEnvironment.sandbox.rawValue)
    }

    private func checkEnvironment(_ raw: String?) throws(VerificationError) {
        if acceptsSandbox, raw == SignedDataEnvironment.sandbox.rawValue { return }
        // Only data Xcode's certificate signed says Xcode here (``verify(_:as:)`` holds the two together).
        if xcodeCertificate != nil, raw == SignedDataEnvironment.xcode.rawValue { return }
        guard raw == environment.rawValue else {
            throw .invalidEnvironment("data from \(raw ?? "no environment"), expected \(environment.rawValue)")
        }
    }
}

/// A verified notification with its verified nested data.
public struct VerifiedNotification: Sendable {
    /// The notification.
    public var payload: ResponseBodyV2DecodedPayload
    /// `data.signedTransactionInfo`, verified and decoded.
    public var transaction: JWSTransactionDecodedPayload?
    /// `data.signedRenewalInfo`, verified and decoded.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// `appData.signedAppTransactionInfo`, verified and decoded.
    public var appTransaction: AppTransaction?
}

extension Optional {
    fileprivate func asyncMap<U>(_ transform: (Wrapped) async throws(VerificationError) -> U)
        async throws(VerificationError)
        -> U?
    {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
