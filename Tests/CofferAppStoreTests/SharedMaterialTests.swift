import CofferAppStore
import Foundation
import Testing
import X509

/// Every file in `shared/apple/` gives what its README says.
@Suite("Apple's test material")
struct SharedMaterialTests {
    @Test("the bundled roots match their published SHA-256 fingerprints")
    func roots() throws {
        #expect(AppleRoots.fingerprint(try AppleRoots.rootCAG3()) == AppleRoots.rootCAG3Fingerprint)
        #expect(AppleRoots.fingerprint(try AppleRoots.rootCA()) == AppleRoots.rootCAFingerprint)
        let root = try Certificate(derEncoded: [UInt8](try AppleRoots.rootCAG3()))
        #expect(root.subject.description.contains("Apple Root CA - G3"))
    }

    @Test("the real chain verifies to Apple Root CA - G3 at its effective date, and not outside its validity")
    func realChain() async throws {
        let leaf = try Certificate(derEncoded: [UInt8](try AppleFiles.data("real-chain/ProdECCReceiptSigning.der")))
        let intermediate = try Certificate(derEncoded: [UInt8](try AppleFiles.data("real-chain/AppleWWDRCAG6.der")))
        #expect(leaf.extensions[oid: ChainVerifier.leafOID] != nil)
        #expect(intermediate.extensions[oid: ChainVerifier.intermediateOID] != nil)
        let verifier = try ChainVerifier(rootCertificates: [AppleRoots.rootCAG3()], cache: nil)
        let chain = try await verifier.verify(
            leaf: leaf, intermediate: intermediate, at: Date(timeIntervalSince1970: 1_761_962_975))
        #expect(chain.validUntil == leaf.notValidAfter)
        for outside in [Date(timeIntervalSince1970: 1_750_000_000), Date(timeIntervalSince1970: 1_830_000_000)] {
            let error = await verificationError {
                _ = try await verifier.verify(leaf: leaf, intermediate: intermediate, at: outside)
            }
            #expect(error?.status == "INVALID_CHAIN")
        }
        // The chain does not reach the legacy RSA root.
        let rsaOnly = try ChainVerifier(rootCertificates: [AppleRoots.rootCA()], cache: nil)
        let error = await verificationError {
            _ = try await rsaOnly.verify(
                leaf: leaf, intermediate: intermediate, at: Date(timeIntervalSince1970: 1_761_962_975))
        }
        #expect(error?.status == "INVALID_CHAIN")
    }

    @Test("the real Apple-signed notification verifies offline and fails at the current date")
    func realNotification() async throws {
        let signed = try AppleFiles.text("real-signed/sandbox-test-notification.jws")
        let offline = try SignedDataVerifier(
            rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.loki-project.loki-messenger", appAppleId: nil,
            environment: .sandbox)
        let notification = try await offline.verifyNotification(signed)
        #expect(notification.payload.notificationType == .test)
        #expect(notification.payload.notificationUUID == "592751ef-c1b8-47fc-929e-d62dee66df4c")
        #expect(notification.payload.signedDate == Date(timeIntervalSince1970: 1_757_035_472.686))
        #expect(notification.payload.data?.environment == .sandbox)
        #expect(notification.transaction == nil)

        let today = try SignedDataVerifier(
            rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.loki-project.loki-messenger", appAppleId: nil,
            environment: .sandbox, validationTime: .current, now: { Date(timeIntervalSince1970: 1_795_000_000) })
        let expired = await verificationError { _ = try await today.verifyNotification(signed) }
        #expect(expired?.status == "INVALID_CHAIN")

        let untrusted = try AppleFiles.mockVerifier()
        #expect(
            await verificationError { _ = try await untrusted.verifyNotification(signed) }?.status == "INVALID_CHAIN")
        let otherApp = try SignedDataVerifier(
            rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.example", appAppleId: nil, environment: .sandbox)
        #expect(
            await verificationError { _ = try await otherApp.verifyNotification(signed) }?.status
                == "INVALID_APP_IDENTIFIER")
    }

    @Test("a Production verifier that accepts Sandbox takes Apple's real sandbox notification, verified as Sandbox")
    func realNotificationInProduction() async throws {
        let signed = try AppleFiles.text("real-signed/sandbox-test-notification.jws")
        func production(acceptsSandbox: Bool) throws -> SignedDataVerifier {
            try SignedDataVerifier(
                rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.loki-project.loki-messenger",
                appAppleId: 6_444_542_400, environment: .production, acceptsSandbox: acceptsSandbox)
        }
        // The notification carries no appAppleId: as Sandbox data it needs none.
        let notification = try await production(acceptsSandbox: true).verifyNotification(signed)
        #expect(notification.payload.data?.environment == .sandbox)
        #expect(
            await verificationError { _ = try await production(acceptsSandbox: false).verifyNotification(signed) }?
                .status == "INVALID_APP_IDENTIFIER")
        // Another app's data is still refused, and a Sandbox verifier has nothing to accept.
        let otherApp = try SignedDataVerifier(
            rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.example", appAppleId: 1,
            environment: .production, acceptsSandbox: true)
        #expect(
            await verificationError { _ = try await otherApp.verifyNotification(signed) }?.status
                == "INVALID_APP_IDENTIFIER")
        let sandbox = try SignedDataVerifier(
            rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.loki-project.loki-messenger", appAppleId: nil,
            environment: .sandbox, acceptsSandbox: true)
        #expect(sandbox.acceptsSandbox == false)
    }

    @Test("Apple's mock Sandbox data at a Production verifier that accepts Sandbox: verified, any appAppleId")
    func mockDataInProduction() async throws {
        let verifier = try AppleFiles.mockVerifier(environment: .production, appAppleId: 1235, acceptsSandbox: true)
        #expect(
            try await verifier.verifyTransaction(try AppleFiles.text("mock-signed/transactionInfo")).environment
                == .sandbox)
        #expect(
            try await verifier.verifyRenewalInfo(try AppleFiles.text("mock-signed/renewalInfo")).environment == .sandbox
        )
        let notification = try await verifier.verifyNotification(try AppleFiles.text("mock-signed/testNotification"))
        #expect(notification.payload.data?.environment == .sandbox)
        #expect(
            await verificationError {
                _ = try await verifier.verifyNotification(try AppleFiles.text("mock-signed/wrongBundleId"))
            }?.status == "INVALID_APP_IDENTIFIER")
    }

    @Test("Apple's mock transaction and renewal info verify against the test CA")
    func mockTransactionAndRenewal() async throws {
        let verifier = try AppleFiles.mockVerifier()
        let transaction = try await verifier.verifyTransaction(try AppleFiles.text("mock-signed/transactionInfo"))
        #expect(transaction.bundleId == "com.example")
        #expect(transaction.environment == .sandbox)
        #expect(transaction.signedDate == Date(timeIntervalSince1970: 1_672_956_154))
        let renewal = try await verifier.verifyRenewalInfo(try AppleFiles.text("mock-signed/renewalInfo"))
        #expect(renewal.environment == .sandbox)
    }

    @Test(
        "Apple's mock notification: OK with appAppleId 1234, INVALID_ENVIRONMENT in Production, INVALID_APP_IDENTIFIER with 1235"
    )
    func mockNotification() async throws {
        let signed = try AppleFiles.text("mock-signed/testNotification")
        let notification = try await AppleFiles.mockVerifier().verifyNotification(signed)
        #expect(notification.payload.notificationType == .test)
        #expect(notification.payload.data?.appAppleId == 1234)
        let production = try AppleFiles.mockVerifier(environment: .production, appAppleId: 1234)
        #expect(
            await verificationError { _ = try await production.verifyNotification(signed) }?.status
                == "INVALID_ENVIRONMENT")
        let otherApp = try AppleFiles.mockVerifier(environment: .production, appAppleId: 1235)
        #expect(
            await verificationError { _ = try await otherApp.verifyNotification(signed) }?.status
                == "INVALID_APP_IDENTIFIER")
    }

    @Test("Apple's mock wrong bundle id and missing x5c are refused with Apple's statuses")
    func mockRefusals() async throws {
        let verifier = try AppleFiles.mockVerifier()
        let wrongBundleId = try AppleFiles.text("mock-signed/wrongBundleId")
        let wrongBundle = await verificationError { _ = try await verifier.verifyNotification(wrongBundleId) }
        #expect(wrongBundle?.status == "INVALID_APP_IDENTIFIER")
        let missingX5C = try AppleFiles.text("mock-signed/missingX5CHeaderClaim")
        let missing = await verificationError { _ = try await verifier.verifyNotification(missingX5C) }
        #expect(missing?.status == "VERIFICATION_FAILURE")
    }

    @Test("a Production verifier needs an appAppleId")
    func productionNeedsAppAppleId() {
        #expect(throws: VerificationError.self) {
            try SignedDataVerifier(
                rootCertificates: [], bundleId: "com.example", appAppleId: nil, environment: .production)
        }
    }

    @Test("Xcode-signed data decodes only in the Xcode environment and is never trusted elsewhere")
    func xcode() async throws {
        let signed = try AppleFiles.text("xcode/xcode-signed-transaction")
        let xcode = try SignedDataVerifier(
            rootCertificates: [], bundleId: "com.example.naturelab.backyardbirds.example", appAppleId: nil,
            environment: .xcode)
        let transaction = try await xcode.verifyTransaction(signed)
        #expect(transaction.productId == "pass.premium")
        #expect(transaction.type == .autoRenewableSubscription)
        #expect(transaction.environment == .xcode)
        let sandbox = try SignedDataVerifier(
            rootCertificates: [AppleRoots.rootCAG3()], bundleId: "com.example.naturelab.backyardbirds.example",
            appAppleId: nil, environment: .sandbox)
        #expect(
            await verificationError { _ = try await sandbox.verifyTransaction(signed) }?.status
                == "INVALID_CHAIN_LENGTH")
        let renewal = try await xcode.verifyRenewalInfo(try AppleFiles.text("xcode/xcode-signed-renewal-info"))
        #expect(renewal.environment == .xcode)
        let app = try await xcode.verifyAppTransaction(try AppleFiles.text("xcode/xcode-signed-app-transaction"))
        #expect(app.receiptType == .xcode)
    }
}
