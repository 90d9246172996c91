import CofferAppStore
import Foundation
import Testing

/// The real receipts in `shared/apple/receipts/` give the values its README lists.
@Suite("Legacy app receipts")
struct ReceiptTests {
    let reader: AppReceiptReader

    init() throws {
        reader = try AppReceiptReader(
            trustedRoots: [AppleRoots.rootCA()], xcodeCertificates: [AppleFiles.data("StoreKitTestCertificate.cer")])
    }

    func date(_ text: String) throws -> Date { try Date(text, strategy: .iso8601) }

    @Test("a production receipt: signature, chain to Apple Root CA, and its four purchases")
    func production() async throws {
        let receipt = try await reader.read(base64: try AppleFiles.text("receipts/receipt-production"))
        #expect(receipt.receiptType == "Production")
        #expect(receipt.bundleId == "org.getpure.pure-iphone")
        #expect(receipt.creationDate == (try date("2024-02-23T17:27:16Z")))
        #expect(receipt.inAppPurchases.count == 4)
        #expect(receipt.inAppPurchases.first?.transactionId == "340001196262039")
        #expect(receipt.inAppPurchases.first?.productId == "org.getpure.pure.Week")
        #expect(receipt.inAppPurchases.first?.quantity == 1)
    }

    @Test("sandbox receipts (WWDR G5 and a legacy one with 187 purchases)")
    func sandbox() async throws {
        let g5 = try await reader.read(base64: try AppleFiles.text("receipts/receipt-sandbox-g5"))
        #expect(g5.receiptType == "ProductionSandbox")
        #expect(g5.bundleId == "dev.bonzer.weeka.app")
        #expect(g5.creationDate == (try date("2025-12-26T18:39:47Z")))
        #expect(g5.inAppPurchases.compactMap(\.transactionId) == ["2000001092134138", "2000001092148094"])
        let legacy = try await reader.read(base64: try AppleFiles.text("receipts/receipt-sandbox-legacy"))
        #expect(legacy.receiptType == "ProductionSandbox")
        #expect(legacy.bundleId == "com.nutcall.alert")
        #expect(legacy.inAppPurchases.count == 187)
    }

    @Test("Xcode receipts verify against the StoreKit test certificate only")
    func xcode() async throws {
        let first = try await reader.read(base64: try AppleFiles.text("receipts/receipt-xcode"))
        #expect(first.receiptType == "Xcode")
        #expect(first.bundleId == "net.zachariadis.cyclemaps")
        #expect(first.inAppPurchases.count == 1)
        let second = try await reader.read(base64: try AppleFiles.text("receipts/receipt-xcode-with-purchases"))
        #expect(second.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(second.inAppPurchases.count == 1)
        let appleOnly = try AppReceiptReader(trustedRoots: [AppleRoots.rootCA()])
        await #expect(throws: ReceiptError.self) {
            _ = try await appleOnly.read(base64: try AppleFiles.text("receipts/receipt-xcode"))
        }
        // Xcode's certificate trusted as a root is not trusted as a signer: it is a chain of one.
        let xcodeAsRoot = try AppReceiptReader(trustedRoots: [
            AppleRoots.rootCA(), AppleFiles.data("StoreKitTestCertificate.cer"),
        ])
        let xcodeReceipt = try AppleFiles.text("receipts/receipt-xcode")
        do {
            _ = try await xcodeAsRoot.read(base64: xcodeReceipt)
            Issue.record("an Xcode receipt verified with Xcode's certificate as a root")
        } catch {
            #expect(error.status == "INVALID_CHAIN")
        }
    }

    @Test("a receipt is refused without its root, and when tampered with or truncated")
    func refusals() async throws {
        let text = try AppleFiles.text("receipts/receipt-production")
        let g3Only = try AppReceiptReader(trustedRoots: [AppleRoots.rootCAG3()])
        do {
            _ = try await g3Only.read(base64: text)
            Issue.record("a receipt verified without Apple Root CA")
        } catch {
            #expect(error.status == "INVALID_CHAIN")
        }
        var bytes = [UInt8](try #require(Data(base64Encoded: text.filter { !$0.isWhitespace })))
        // Flip a byte inside the product id of the first purchase: the payload changes, the signature does not.
        let needle = Array("org.getpure.pure.Week".utf8)
        let at = try #require(bytes.indices.first { bytes[$0...].starts(with: needle) })
        bytes[at] ^= 0x20
        do {
            _ = try await reader.read(der: Data(bytes))
            Issue.record("a tampered receipt verified")
        } catch {
            #expect(error.status == "VERIFICATION_FAILURE")
        }
        for bad in [Data(), Data([0x30, 0x03, 0x02, 0x01]), Data(bytes.prefix(1_000)), Data("not a receipt".utf8)] {
            await #expect(throws: ReceiptError.self) { _ = try await reader.read(der: bad) }
        }
        await #expect(throws: ReceiptError.self) { _ = try await reader.read(base64: "***") }
        // A SignerInfo whose digestAlgorithm is an empty SEQUENCE once trapped on an index out of range.
        let emptyAlgorithm = Data(
            hex: "303e06092a864886f70d010702a031302f0201013100301106092a864886f70d010701a00404023100311530130201"
                + "0130053000020101300030000403736967")
        await #expect(throws: ReceiptError.self) { _ = try await reader.read(der: emptyAlgorithm) }
    }

    @Test("the transaction id of an old-style transaction receipt")
    func legacyTransaction() throws {
        #expect(
            LegacyReceipts.transactionId(fromTransactionReceipt: try AppleFiles.text("mock-signed/legacyTransaction"))
                == "33993399")
        #expect(LegacyReceipts.transactionId(fromTransactionReceipt: "bm90aGluZw==") == nil)
        #expect(LegacyReceipts.transactionId(fromTransactionReceipt: "%%%") == nil)
    }
}

extension Data {
    /// Bytes from hex text (test vectors).
    init(hex: String) {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        self.init(bytes)
    }
}
