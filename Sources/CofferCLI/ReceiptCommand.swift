import ArgumentParser
import CofferAppStore
import Foundation

/// `coffer receipt FILE`: read a legacy app receipt locally and say whether Apple signed it.
///
/// Exit status: 0 verified, 1 refused, 2 when the file cannot be read.
struct ReceiptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipt",
        abstract: "Read a legacy app receipt (base64 PKCS#7) and verify Apple's signature locally.",
        discussion: """
            Verifies the RSA signature and Apple's receipt policy at the receipt's creation date (the signer is \
            the leaf, the chain is exactly leaf -> intermediate -> Apple Root CA, the intermediate carries \
            1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1), then lists its fields and in-app \
            purchases. --root trusts one more root (tests, the simulator); with --xcode, receipts signed directly \
            by Xcode's StoreKit test certificate are accepted too (local testing only). Exits 0 when verified, 1 \
            when refused (with the reason), 2 when the file cannot be read.
            """
    )

    @Argument(help: "The receipt file (base64, as the app sends it), or - for standard input.")
    var file: String

    @Option(name: .customLong("root"), help: "A DER root certificate to trust as well (repeatable).")
    var roots: [String] = []

    @Option(help: "Xcode's StoreKit test certificate (DER), to accept receipts made by Xcode.")
    var xcode: String?

    @Flag(help: "Print JSON: {\"status\", \"message\", \"receipt\"}.")
    var json = false

    func run() async throws {
        let text: String
        var trusted: [Data]
        var xcodeCertificates: [Data] = []
        do {
            let data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
            text = String(decoding: data, as: UTF8.self)
            trusted = try roots.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            trusted.insert(try AppleRoots.rootCA(), at: 0)
            if let xcode { xcodeCertificates.append(try Data(contentsOf: URL(fileURLWithPath: xcode))) }
        } catch {
            FileHandle.standardError.write(Data("Error: cannot read input: \(error.localizedDescription)\n".utf8))
            throw ExitCode(2)
        }
        let reader: AppReceiptReader
        do {
            reader = try AppReceiptReader(trustedRoots: trusted, xcodeCertificates: xcodeCertificates)
        } catch {
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(2)
        }
        let receipt: AppReceipt
        do {
            receipt = try await reader.read(base64: text)
        } catch {
            if json {
                print(
                    try JSONText.encode(object: [
                        "status": error.status, "message": error.description, "receipt": NSNull(),
                    ]))
            } else {
                print("\(error.status): \(error.description)")
            }
            throw ExitCode(1)
        }
        try report(receipt)
    }

    private func report(_ receipt: AppReceipt) throws {
        if json {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let object = try JSONSerialization.jsonObject(with: encoder.encode(receipt))
            print(try JSONText.encode(object: ["status": "OK", "message": "signed by Apple", "receipt": object]))
            return
        }
        print("OK: receipt signed by \(receipt.receiptType == "Xcode" ? "Xcode's StoreKit test certificate" : "Apple")")
        print(
            "type \(receipt.receiptType ?? "?")  bundle \(receipt.bundleId ?? "?")  version \(receipt.applicationVersion ?? "?")"
        )
        print(
            "created \(receipt.creationDate.map(JSONText.timestamp) ?? "?")  in-app purchases \(receipt.inAppPurchases.count)"
        )
        guard !receipt.inAppPurchases.isEmpty else { return }
        var table = TextTable(["transaction", "original", "product", "qty", "purchased (UTC)", "expires", "cancelled"])
        for purchase in receipt.inAppPurchases {
            table.add([
                purchase.transactionId ?? "", purchase.originalTransactionId ?? "", purchase.productId ?? "",
                purchase.quantity.map(String.init) ?? "", purchase.purchaseDate.map(JSONText.timestamp) ?? "",
                purchase.expiresDate.map(JSONText.timestamp) ?? "",
                purchase.cancellationDate.map(JSONText.timestamp) ?? "",
            ])
        }
        print(table.render())
    }
}
