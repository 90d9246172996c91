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
            Verifies the RSA signature and the chain to Apple Root CA at the receipt's creation date, then lists \
            its fields and in-app purchases. With --xcode, receipts signed by Xcode's StoreKit test certificate \
            are accepted too (local testing only). Exits 0 when verified, 1 when refused, 2 when the file cannot \
            be read.
            """
    )

    @Argument(help: "The receipt file (base64, as the app sends it), or - for standard input.")
    var file: String

    @Option(help: "Xcode's StoreKit test certificate (DER), to accept receipts made by Xcode.")
    var xcode: String?

    @Flag(help: "Print JSON: {\"status\", \"message\", \"receipt\"}.")
    var json = false

    func run() async throws {
        let text: String
        var roots: [Data]
        do {
            let data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
            text = String(decoding: data, as: UTF8.self)
            roots = [try AppleRoots.rootCA()]
            if let xcode { roots.append(try Data(contentsOf: URL(fileURLWithPath: xcode))) }
        } catch {
            FileHandle.standardError.write(Data("Error: cannot read input: \(error.localizedDescription)\n".utf8))
            throw ExitCode(2)
        }
        let receipt: AppReceipt
        do {
            receipt = try await AppReceiptReader(trustedRoots: roots).read(base64: text)
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
