import Foundation

/// The contents of a legacy app receipt (a PKCS#7 container signed by Apple), as Apple documents its
/// fields.
public struct AppReceipt: Sendable, Hashable, Codable {
    /// Field 0: `Production`, `ProductionSandbox` or `Xcode`.
    public var receiptType: String?
    /// Field 2: the app's bundle id.
    public var bundleId: String?
    /// Field 3: the app version the receipt was created for.
    public var applicationVersion: String?
    /// Field 19: the version first bought.
    public var originalApplicationVersion: String?
    /// Field 12: when the receipt was created; the effective date of its signature check.
    public var creationDate: Date?
    /// Field 21: when a volume-purchase receipt expires.
    public var expirationDate: Date?
    /// Field 17: the in-app purchase records, in receipt order.
    public var inAppPurchases: [InAppPurchaseReceipt]

    /// Creates an empty receipt.
    public init(inAppPurchases: [InAppPurchaseReceipt] = []) {
        self.inAppPurchases = inAppPurchases
    }
}

/// One in-app purchase record of a legacy app receipt.
public struct InAppPurchaseReceipt: Sendable, Hashable, Codable {
    /// Field 1701.
    public var quantity: Int64?
    /// Field 1702.
    public var productId: String?
    /// Field 1703.
    public var transactionId: String?
    /// Field 1705.
    public var originalTransactionId: String?
    /// Field 1704.
    public var purchaseDate: Date?
    /// Field 1706.
    public var originalPurchaseDate: Date?
    /// Field 1708.
    public var expiresDate: Date?
    /// Field 1712: when Apple refunded it.
    public var cancellationDate: Date?
    /// Field 1711.
    public var webOrderLineItemId: Int64?
    /// Field 1713.
    public var isTrialPeriod: Bool?
    /// Field 1719.
    public var isInIntroOfferPeriod: Bool?
    /// Field 1721.
    public var promotionalOfferIdentifier: String?

    /// Creates an empty record.
    public init() {}
}

/// Why an app receipt could not be read or trusted.
public enum ReceiptError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not a PKCS#7 receipt.
    case malformed(String)
    /// The signature does not verify with the signing certificate.
    case invalidSignature(String)
    /// The signing certificate does not chain to a trusted root.
    case untrusted(String)

    /// Apple's verification status the failure corresponds to.
    public var status: String {
        switch self {
        case .malformed, .invalidSignature: "VERIFICATION_FAILURE"
        case .untrusted: "INVALID_CHAIN"
        }
    }

    /// What went wrong.
    public var description: String {
        switch self {
        case .malformed(let detail): "not a valid app receipt: \(detail)"
        case .invalidSignature(let detail): "the receipt's signature does not verify: \(detail)"
        case .untrusted(let detail): "the receipt is not signed by a trusted authority: \(detail)"
        }
    }
}

/// Reads transaction ids out of legacy receipts without verifying them, as Apple's `ReceiptUtility` does:
/// to look the transactions up with the App Store Server API, which is the check that counts.
public enum LegacyReceipts {
    /// The transaction id of an old-style (iOS 6) transaction receipt: base64 text holding
    /// `"purchase-info" = "<base64>";`, itself holding `"transaction-id" = "<id>";`.
    ///
    /// - Parameter receipt: The base64 transaction receipt.
    /// - Returns: The transaction id, or `nil` when there is none.
    public static func transactionId(fromTransactionReceipt receipt: String) -> String? {
        guard let outer = decodeText(receipt), let purchaseInfo = quotedValue(of: "purchase-info", in: outer),
            let inner = decodeText(purchaseInfo)
        else { return nil }
        return quotedValue(of: "transaction-id", in: inner)
    }

    private static func decodeText(_ base64: String) -> String? {
        guard let data = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
        return String(data: data, encoding: .utf8)
    }

    /// Finds `"key" = "value";` and returns `value`.
    private static func quotedValue(of key: String, in text: String) -> String? {
        guard let keyRange = text.range(of: "\"\(key)\"") else { return nil }
        let rest = text[keyRange.upperBound...].drop { $0 == " " || $0 == "\t" }
        guard rest.first == "=" else { return nil }
        let value = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
        guard value.first == "\"" else { return nil }
        let body = value.dropFirst()
        guard let end = body.firstIndex(of: "\"") else { return nil }
        return String(body[..<end])
    }
}
