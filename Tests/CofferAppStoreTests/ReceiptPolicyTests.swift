import CofferAppStore
import CofferSimulator
import Foundation
import Testing

/// Apple's receipt policy: a receipt signed under a trusted root verifies only when the signer is the leaf,
/// the chain is exactly leaf -> intermediate -> root, the intermediate carries 1.2.840.113635.100.6.2.1 and
/// the leaf 1.2.840.113635.100.6.11.1. Anything else (a developer's certificate under Apple Root CA) is
/// refused.
@Suite("Legacy receipt policy")
struct ReceiptPolicyTests {
    /// A broken chain and the words its refusal must carry.
    struct Forgery: Sendable, CustomStringConvertible {
        var description: String
        var options: SimulatorReceiptAuthority.Options
        var reason: String

        static let all: [Forgery] = {
            var noLeafOID = SimulatorReceiptAuthority.Options()
            noLeafOID.leafOID = false
            var noIntermediateOID = SimulatorReceiptAuthority.Options()
            noIntermediateOID.intermediateOID = false
            var neither = SimulatorReceiptAuthority.Options()
            neither.leafOID = false
            neither.intermediateOID = false
            var short = SimulatorReceiptAuthority.Options()
            short.shape = .leafUnderRoot
            var long = SimulatorReceiptAuthority.Options()
            long.shape = .twoIntermediates
            var selfSigned = SimulatorReceiptAuthority.Options()
            selfSigned.shape = .selfSignedIntermediate
            return [
                Forgery(
                    description: "leaf without the receipt-signing OID", options: noLeafOID, reason: "leaf lacks OID"),
                Forgery(
                    description: "intermediate without the WWDR OID", options: noIntermediateOID,
                    reason: "intermediate lacks OID"),
                Forgery(description: "neither OID (a developer's certificate)", options: neither, reason: "lacks OID"),
                Forgery(description: "leaf signed by the root (chain of 2)", options: short, reason: "this one 2"),
                Forgery(description: "two intermediates (chain of 4)", options: long, reason: "this one 4"),
                Forgery(
                    description: "a self-signed intermediate", options: selfSigned,
                    reason: "does not chain to a trusted root"),
            ]
        }()
    }

    static let created = Date(timeIntervalSince1970: 1_760_000_000)

    static func receipt() -> AppReceipt {
        var receipt = AppReceipt()
        receipt.receiptType = "ProductionSandbox"
        receipt.bundleId = "com.example.coffer"
        receipt.applicationVersion = "1.0"
        receipt.creationDate = created
        var purchase = InAppPurchaseReceipt()
        purchase.quantity = 1
        purchase.productId = "coins.100"
        purchase.transactionId = "4000000000000001"
        purchase.originalTransactionId = "4000000000000001"
        purchase.purchaseDate = created.addingTimeInterval(-60)
        receipt.inAppPurchases = [purchase]
        return receipt
    }

    static func authority(_ options: SimulatorReceiptAuthority.Options = .init()) throws -> SimulatorReceiptAuthority {
        try SimulatorReceiptAuthority(
            validFrom: created.addingTimeInterval(-86_400), validUntil: created.addingTimeInterval(365 * 86_400),
            options: options)
    }

    @Test("a receipt in Apple's shape under a trusted root verifies and reads back what was signed")
    func applesShape() async throws {
        let authority = try Self.authority()
        let reader = try AppReceiptReader(trustedRoots: [AppleRoots.rootCA(), authority.rootDER()])
        let read = try await reader.read(der: try authority.sign(Self.receipt()))
        #expect(read == Self.receipt())
        // Not trusted without its root, and not after its certificates expired (checked at the creation date).
        do {
            try await readWithAppleOnly(authority)
            Issue.record("a receipt verified without its root")
        } catch {
            #expect(error.status == "INVALID_CHAIN")
        }
        var late = Self.receipt()
        late.creationDate = Self.created.addingTimeInterval(400 * 86_400)
        let expired = try authority.sign(late)
        do {
            _ = try await reader.read(der: expired)
            Issue.record("a receipt created after its chain expired verified")
        } catch {
            #expect(error.status == "INVALID_CHAIN")
        }
    }

    func readWithAppleOnly(_ authority: SimulatorReceiptAuthority) async throws(ReceiptError) {
        guard let root = try? AppleRoots.rootCA(), let der = try? authority.sign(Self.receipt()) else {
            throw .malformed("cannot sign")
        }
        _ = try await AppReceiptReader(trustedRoots: [root]).read(der: der)
    }

    @Test("a receipt whose chain breaks Apple's policy is refused with the reason", arguments: Forgery.all)
    func forgery(_ forgery: Forgery) async throws {
        let authority = try Self.authority(forgery.options)
        let reader = try AppReceiptReader(trustedRoots: [AppleRoots.rootCA(), authority.rootDER()])
        let forged = try authority.sign(Self.receipt())
        do {
            let receipt = try await reader.read(der: forged)
            Issue.record("\(forgery) verified: \(receipt)")
        } catch {
            #expect(error.status == "INVALID_CHAIN")
            #expect(error.description.contains(forgery.reason), "\(error.description)")
        }
    }

    @Test("Xcode's certificate counts only as the direct signer, and only for a reader given it as Xcode's")
    func xcodeOnlyDirect() async throws {
        let authority = try Self.authority()
        // The authority's leaf offered as an "Xcode certificate" does not make its own root trusted, and the
        // root offered as one does not let it sign through the chain.
        let reader = try AppReceiptReader(
            trustedRoots: [AppleRoots.rootCA()], xcodeCertificates: [authority.root.derBytes()])
        await #expect(throws: ReceiptError.self) { _ = try await reader.read(der: try authority.sign(Self.receipt())) }
    }
}
