import CofferSimulator
import Foundation

/// Signed transactions from one simulator chain, shaped like Apple's.
public struct BenchmarkPayloads: Sendable {
    /// The bundle id the transactions name.
    public static let bundleId = "com.example.coffer"
    /// The root that signed them, DER.
    public let rootDER: Data
    /// The signed transactions.
    public let transactions: [String]

    /// Signs `count` fresh transactions with a new simulator chain.
    public init(count: Int) throws {
        let now = Date()
        let pki = try SimulatorPKI(
            validFrom: now.addingTimeInterval(-86_400), leafValidUntil: now.addingTimeInterval(365 * 86_400))
        let signer = try pki.signer()
        let signedDate = Int64(now.timeIntervalSince1970 * 1000)
        rootDER = try pki.rootDER()
        transactions = try (0..<count).map { index in
            try signer.sign(payloadJSON: Self.transaction(index, signedDate: signedDate))
        }
    }

    /// Signs `count` transactions, each with a new leaf under one intermediate (as Apple's leaves change under
    /// its intermediate), with a new simulator chain.
    public static func newLeaves(count: Int) throws -> BenchmarkPayloads {
        let now = Date()
        let pki = try SimulatorPKI(
            validFrom: now.addingTimeInterval(-86_400), leafValidUntil: now.addingTimeInterval(365 * 86_400))
        let signedDate = Int64(now.timeIntervalSince1970 * 1000)
        let transactions = try (0..<count).map { index in
            let leaf = try pki.withNewLeaf(
                validFrom: now.addingTimeInterval(-86_400), validUntil: now.addingTimeInterval(365 * 86_400))
            return try leaf.signer().sign(payloadJSON: Self.transaction(index, signedDate: signedDate))
        }
        return BenchmarkPayloads(rootDER: try pki.rootDER(), transactions: transactions)
    }

    private init(rootDER: Data, transactions: [String]) {
        self.rootDER = rootDER
        self.transactions = transactions
    }

    /// A consumable's signed transaction payload, shaped like Apple's.
    static func transaction(_ index: Int, signedDate: Int64) throws -> Data {
        let payload: [String: Any] = [
            "transactionId": "\(2_000_000_000_000 + index)",
            "originalTransactionId": "\(2_000_000_000_000 + index)",
            "webOrderLineItemId": "\(index)", "bundleId": Self.bundleId, "productId": "com.example.credits.400k",
            "purchaseDate": signedDate, "originalPurchaseDate": signedDate, "quantity": 1, "type": "Consumable",
            "inAppOwnershipType": "PURCHASED", "signedDate": signedDate, "environment": "Sandbox",
            "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 4_990,
            "currency": "USD", "appTransactionId": "704289572311",
            "appAccountToken": UUID().uuidString.lowercased(),
        ]
        return try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
    }

    /// Reads a set written by `VerificationPayloads`.
    public init(folder: URL) throws {
        rootDER = try Data(contentsOf: folder.appendingPathComponent("root.der"))
        transactions = String(
            decoding: try Data(contentsOf: folder.appendingPathComponent("transactions.txt")), as: UTF8.self
        )
        .split(separator: "\n").map(String.init)
    }
}
