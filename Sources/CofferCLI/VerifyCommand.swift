import ArgumentParser
import AsyncHTTPClient
import CofferAppStore
import Foundation

/// `coffer verify FILE`: verify Apple signed data and print what it says.
///
/// Exit status: 0 verified, 1 rejected (the status names why), 2 when the input cannot be read, 64 on usage errors.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify Apple signed data (a JWS) and print its decoded payload.",
        discussion: """
            Follows Apple's verifier: ES256 only, a three-certificate x5c chain to a trusted root with Apple's \
            OIDs, certificates valid at the payload's signedDate (with --online: now, and the leaf and \
            intermediate checked with their OCSP responders), bundle id, environment and appAppleId checked, a notification's nested data verified too. Apple Root CA - G3 is always \
            trusted; --root adds more. Exits 0 when verified, 1 when rejected, 2 when the input cannot be read, \
            64 on usage errors.
            """
    )

    /// The kinds of signed data.
    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case transaction, renewal, notification
        case appTransaction = "app-transaction"
    }

    @Argument(help: "A file holding the JWS, or - for standard input.")
    var file: String

    @Option(help: "What the file holds: transaction, renewal, notification or app-transaction.")
    var kind: Kind

    @Option(name: .customLong("root"), help: "A DER root certificate to trust as well (repeatable).")
    var roots: [String] = []

    @Option(help: "The app's bundle id.")
    var bundleId: String

    @Option(help: "The app's Apple id (required for Production).")
    var appAppleId: Int64?

    @Option(help: "Where the data must come from: Sandbox, Production or Xcode.")
    var environment: String

    @Flag(
        help: """
            Check certificates at the current time and ask their OCSP responders (an unreachable responder \
            gives RETRYABLE_VERIFICATION_FAILURE).
            """)
    var online = false

    @Flag(help: "Print one JSON object: {\"status\", \"message\", \"payload\"}.")
    var json = false

    @Option(
        help: ArgumentHelp(
            "Xcode's StoreKit testing certificate (PEM or DER): in Sandbox, accept data it signs that says Xcode.",
            valueName: "file"))
    var xcodeCertificate: String?

    @Option(
        help: ArgumentHelp(
            "Save the one certificate an Xcode-signed JWS carries, as PEM, for coffer serve --xcode-certificate.",
            valueName: "file"))
    var saveXcodeCertificate: String?

    func run() async throws {
        guard let environment = SignedDataEnvironment(name: environment) else {
            throw ValidationError("unknown environment \(environment): use Sandbox, Production or Xcode")
        }
        let signed: String
        var rootCertificates: [Data]
        do {
            let data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
            signed = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            rootCertificates = try roots.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            rootCertificates.insert(try AppleRoots.rootCAG3(), at: 0)
        } catch {
            FileHandle.standardError.write(Data("Error: cannot read input: \(error.localizedDescription)\n".utf8))
            throw ExitCode(2)
        }
        if let saveXcodeCertificate {
            do {
                let carried = try XcodeCertificate.carried(in: signed)
                try Data(carried.pem.utf8).write(to: URL(fileURLWithPath: saveXcodeCertificate))
                print("saved Xcode's certificate (SHA-256 \(carried.fingerprint)) to \(saveXcodeCertificate)")
            } catch {
                FileHandle.standardError.write(Data("Error: cannot save the Xcode certificate: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        let http = online ? HTTPClient(eventLoopGroupProvider: .singleton) : nil
        let outcome: Result<VerifiedPayload, VerificationError>
        do {
            let xcode = try xcodeCertificate.map { path throws(VerificationError) in try XcodeCertificate(path: path) }
            let verifier = try SignedDataVerifier(
                rootCertificates: rootCertificates, bundleId: bundleId, appAppleId: appAppleId,
                environment: environment,
                validationTime: http.map { .online(RevocationChecker(httpClient: $0)) } ?? .signedDate,
                xcodeCertificate: xcode)
            outcome = .success(try await verify(signed, with: verifier))
        } catch {
            outcome = .failure(error)
        }
        try await http?.shutdown()
        try report(outcome)
        if case .failure = outcome { throw ExitCode(1) }
    }

    private func verify(_ signed: String, with verifier: SignedDataVerifier) async throws(VerificationError)
        -> VerifiedPayload
    {
        switch kind {
        case .transaction:
            let transaction = try await verifier.verifyTransaction(signed)
            return VerifiedPayload(
                payload: transaction,
                summary: "transaction \(transaction.transactionId ?? "?") for \(transaction.productId ?? "?")")
        case .renewal:
            let info = try await verifier.verifyRenewalInfo(signed)
            return VerifiedPayload(payload: info, summary: "renewal info for \(info.originalTransactionId ?? "?")")
        case .notification:
            let notification = try await verifier.verifyNotification(signed)
            var nested: [String: any Encodable & Sendable] = [:]
            if let transaction = notification.transaction { nested["transaction"] = transaction }
            if let renewalInfo = notification.renewalInfo { nested["renewalInfo"] = renewalInfo }
            if let appTransaction = notification.appTransaction { nested["appTransaction"] = appTransaction }
            let type = notification.payload.rawNotificationType ?? "?"
            let subtype = notification.payload.rawSubtype.map { "/\($0)" } ?? ""
            return VerifiedPayload(
                payload: notification.payload, nested: nested,
                summary: "notification \(type)\(subtype) \(notification.payload.notificationUUID ?? "")")
        case .appTransaction:
            let app = try await verifier.verifyAppTransaction(signed)
            return VerifiedPayload(payload: app, summary: "app transaction for \(app.bundleId ?? "?")")
        }
    }

    private func report(_ outcome: Result<VerifiedPayload, VerificationError>) throws {
        switch outcome {
        case .success(let verified):
            if json {
                var object: [String: Any] = ["status": "OK", "message": "verified \(verified.summary)"]
                object["payload"] = try JSONSerialization.jsonObject(with: AppleJSON.encode(verified.payload))
                if !verified.nested.isEmpty {
                    object["nested"] = try verified.nested.mapValues {
                        try JSONSerialization.jsonObject(with: AppleJSON.encode($0))
                    }
                }
                print(try JSONText.encode(object: object))
            } else {
                print("OK: verified \(verified.summary)")
                print(String(decoding: try AppleJSON.encode(verified.payload, pretty: true), as: UTF8.self))
                for (name, value) in verified.nested.sorted(by: { $0.key < $1.key }) {
                    print("\(name):")
                    print(String(decoding: try AppleJSON.encode(value, pretty: true), as: UTF8.self))
                }
            }
        case .failure(let error):
            if json {
                print(
                    try JSONText.encode(object: ["status": error.status, "message": error.message, "payload": NSNull()])
                )
            } else {
                print("\(error.status): \(error.message)")
            }
        }
    }
}

/// A verified payload with a one-line summary for the human output.
private struct VerifiedPayload {
    var payload: any Encodable & Sendable
    var nested: [String: any Encodable & Sendable] = [:]
    var summary: String
}
