import CofferAPI
import CofferAdmin
import CofferAppStore
import CofferCore
import CofferServer
import CofferService
import CofferSimulator
import CofferStore
import CofferTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Testing in Xcode: a Sandbox server given the certificate Xcode's StoreKit testing signs with
/// (`xcode.certificate`) accepts a `.storekit` file's real signed data, and nothing else that certificate does not
/// sign.
@Suite("Xcode's StoreKit testing", .timeLimit(.minutes(1)))
struct XcodeTestingTests {
    /// The app of the real Xcode data in Tests/CofferTestSupport/Apple/xcode (from ../shared/apple/xcode).
    static let bundleId = "com.example.naturelab.backyardbirds.example"
    /// The Xcode data's own time: signed 2023-10-19, the subscription's period ends 2023-11-19.
    static let now = Date(timeIntervalSince1970: 1_697_700_000)

    static func file(_ name: String) throws -> Data {
        let url = try AppleFixtures.url(name)
        return try Data(contentsOf: url)
    }

    static func text(_ name: String) throws -> String {
        String(decoding: try file(name), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func verifier(xcode: XcodeCertificate?, roots: [Data] = []) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            rootCertificates: roots, bundleId: bundleId, appAppleId: nil, environment: .sandbox,
            xcodeCertificate: xcode, now: { now })
    }

    /// A JWS segment's bytes.
    static func segment(_ text: String) throws -> Data {
        var base64 = text.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return try #require(Data(base64Encoded: base64))
    }

    static func server(xcode: XcodeCertificate?, store: any CofferStore = InMemoryStore()) throws
        -> some ApplicationProtocol
    {
        let catalog = try Catalog(products: [
            CatalogProduct(id: "pass.premium", kind: .autoRenewable, entitlements: ["premium"], group: "pass")
        ])
        return try buildApplication(
            configuration: ServerConfiguration(bundleId: bundleId),
            dependencies: try ServerDependencies(
                store: store, verifier: try verifier(xcode: xcode), catalog: catalog, now: { now }))
    }

    @Test("the certificate reads as PEM or DER; it is trusted in Sandbox only")
    func certificate() throws {
        let der = try XcodeCertificate(pemOrDER: try Self.file("xcode/xcode-certificate.der"))
        let pem = try XcodeCertificate(pemOrDER: try Self.file("xcode/xcode-certificate.pem"))
        #expect(der == pem)
        #expect(der.fingerprint == "16c47dfe09825de02ac3fa40126ee5f81747941955fbc18a7696a6246a733c7a")
        #expect(throws: VerificationError.self) { try XcodeCertificate(pemOrDER: Data("not a certificate".utf8)) }
        #expect(throws: VerificationError.self) {
            try SignedDataVerifier(
                rootCertificates: [], bundleId: Self.bundleId, appAppleId: 1, environment: .production,
                xcodeCertificate: der)
        }
    }

    @Test("Xcode's transaction, renewal info and app transaction verify with its certificate, and say Xcode")
    func verifies() async throws {
        let verifier = try Self.verifier(
            xcode: try XcodeCertificate(pemOrDER: try Self.file("xcode/xcode-certificate.pem")))
        let transaction = try await verifier.verifyTransaction(try Self.text("xcode/xcode-signed-transaction"))
        #expect(transaction.productId == "pass.premium" && transaction.rawEnvironment == "Xcode")
        let renewal = try await verifier.verifyRenewalInfo(try Self.text("xcode/xcode-signed-renewal-info"))
        #expect(renewal.rawEnvironment == "Xcode")
        let app = try await verifier.verifyAppTransaction(try Self.text("xcode/xcode-signed-app-transaction"))
        #expect(app.rawReceiptType == "Xcode")
        // Without the certificate, as before: refused.
        await #expect(throws: VerificationError.self) {
            try await Self.verifier(xcode: nil).verifyTransaction(try Self.text("xcode/xcode-signed-transaction"))
        }
        // Its payload changed (another product): the signature no longer verifies.
        let parts = try Self.text("xcode/xcode-signed-transaction").split(separator: ".").map(String.init)
        let payload = try Self.segment(parts[1])
        let forged = String(decoding: payload, as: UTF8.self).replacing("pass.premium", with: "pass.premiun")
        let tampered = [parts[0], Base64URL.encode(Data(forged.utf8)), parts[2]].joined(separator: ".")
        await #expect(throws: VerificationError.self) { try await verifier.verifyTransaction(tampered) }
        // The same payload signed by another trusted chain (the simulator's) is not Xcode's, though it says so.
        let pki = try SimulatorPKI(
            validFrom: Self.now.addingTimeInterval(-86_400), leafValidUntil: Self.now.addingTimeInterval(86_400))
        let other = try pki.signer().sign(payloadJSON: payload)
        let trusting = try Self.verifier(
            xcode: try XcodeCertificate(pemOrDER: try Self.file("xcode/xcode-certificate.der")), roots: [pki.rootDER()])
        await #expect(throws: VerificationError.self) { try await trusting.verifyTransaction(other) }
    }

    @Test("a Sandbox server with the certificate delivers a .storekit purchase; without it, 422 as before")
    func serverDelivers() async throws {
        let xcode = try XcodeCertificate(pemOrDER: try Self.file("xcode/xcode-certificate.der"))
        let signed = try Self.text("xcode/xcode-signed-transaction")
        for (certificate, accepted) in [(xcode, true), (nil, false)] {
            let store = InMemoryStore()
            try await Self.server(xcode: certificate, store: store).test(.router) { client in
                let user = try ClientAPITests.decode(
                    CreateUserResponse.self, try await client.execute(uri: "/v1/users", method: .post))
                let answer = try await client.execute(
                    uri: "/v1/transactions", method: .post, headers: ClientAPITests.bearer(user.token),
                    body: try ClientAPITests.body(TransactionRequest(signedTransaction: signed)))
                if accepted {
                    #expect(answer.status == .ok)
                    let delivered = try ClientAPITests.decode(TransactionResponse.self, answer)
                    #expect(delivered.outcome == .delivered && delivered.entitlements == ["premium"])
                    // Marked Xcode wherever data is marked: the receipt, the ledger entry, support's views.
                    let supportId = try #require(SupportID(user.supportId))
                    let owner = try #require(try await store.user(supportId: supportId, environment: .sandbox))
                    let receipt = try #require(try await store.receipts(owner: owner.id, environment: .sandbox).first)
                    #expect(receipt.transaction.signedByXcode && receipt.transaction.dataEnvironment == .xcode)
                    #expect(receipt.transaction.environment == .sandbox)  // its rules are Sandbox's
                    let entries = try await store.entries(owner: owner.id, environment: .sandbox)
                    #expect(entries.contains { $0.dataMark == .xcode })
                    let catalog = try Catalog(products: [
                        CatalogProduct(
                            id: "pass.premium", kind: .autoRenewable, entitlements: ["premium"], group: "pass")
                    ])
                    #expect(PurchaseView(receipt, catalog: catalog).dataEnvironment == .xcode)
                } else {
                    #expect(answer.status == .unprocessableContent)
                }
            }
        }
    }
}
