import Foundation

/// A status of Apple's verifyReceipt endpoint, with what it means and whether asking again can help.
public struct VerifyReceiptStatus: Sendable, Hashable, CustomStringConvertible {
    /// The numeric status Apple returned.
    public let code: Int
    /// What Apple documents it to mean.
    public let meaning: String
    /// Whether the request may succeed if sent again later.
    public let isRetryable: Bool

    /// Looks a status up. Every documented code is known: 0, 21000-21010 and 21100-21199.
    public init(code: Int) {
        self.code = code
        switch code {
        case 0: (meaning, isRetryable) = ("the receipt is valid", false)
        case 21000: (meaning, isRetryable) = ("the request was not made with the HTTP POST method", false)
        case 21001: (meaning, isRetryable) = ("this status is no longer sent by the App Store", false)
        case 21002:
            (meaning, isRetryable) = ("the receipt-data was malformed or the service had a temporary issue", true)
        case 21003: (meaning, isRetryable) = ("the receipt could not be authenticated", false)
        case 21004: (meaning, isRetryable) = ("the shared secret does not match the one on file for the account", false)
        case 21005: (meaning, isRetryable) = ("the receipt server was temporarily unable to provide the receipt", true)
        case 21006: (meaning, isRetryable) = ("the receipt is valid but the subscription has expired", false)
        case 21007: (meaning, isRetryable) = ("the receipt is from the sandbox, sent to production", false)
        case 21008: (meaning, isRetryable) = ("the receipt is from production, sent to the sandbox", false)
        case 21009: (meaning, isRetryable) = ("internal data access error; try again later", true)
        case 21010: (meaning, isRetryable) = ("the user account cannot be found or has been deleted", false)
        case 21100...21199: (meaning, isRetryable) = ("internal data access error (\(code)); try again later", true)
        default: (meaning, isRetryable) = ("unknown status \(code)", false)
        }
    }

    /// Whether the receipt is authentic: 0, or 21006 (valid, subscription expired).
    public var isValidReceipt: Bool { code == 0 || code == 21006 }

    /// `21007: the receipt is from the sandbox, sent to production`.
    public var description: String { "\(code): \(meaning)" }
}

/// Apple's verifyReceipt response. Apple writes many numbers as strings; both forms decode.
public struct VerifyReceiptResponse: Decodable, Sendable {
    /// The status code.
    public var status: Int
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// Apple's own hint that a failed request may succeed later (`is-retryable`).
    public var isRetryable: Bool?
    /// The decoded receipt.
    public var receipt: Receipt?
    /// The latest renewal transactions of auto-renewable subscriptions.
    public var latestReceiptInfo: [InApp]?
    /// The latest receipt, base64.
    public var latestReceipt: String?

    /// The `receipt` object.
    public struct Receipt: Decodable, Sendable {
        /// `receipt_type`.
        public var receiptType: String?
        /// `bundle_id`.
        public var bundleId: String?
        /// `application_version`.
        public var applicationVersion: String?
        /// `in_app`: the in-app purchases.
        public var inApp: [InApp]?

        enum CodingKeys: String, CodingKey {
            case receiptType = "receipt_type"
            case bundleId = "bundle_id"
            case applicationVersion = "application_version"
            case inApp = "in_app"
        }
    }

    /// One in-app purchase in `in_app` or `latest_receipt_info`.
    public struct InApp: Decodable, Sendable {
        /// `transaction_id`.
        public var transactionId: String?
        /// `original_transaction_id`.
        public var originalTransactionId: String?
        /// `product_id`.
        public var productId: String?
        /// `quantity`.
        public var quantity: Int64?
        /// `purchase_date_ms`.
        public var purchaseDate: Date?
        /// `expires_date_ms`.
        public var expiresDate: Date?
        /// `cancellation_date_ms`: when Apple refunded it.
        public var cancellationDate: Date?
        /// `is_trial_period`.
        public var isTrialPeriod: Bool?
        /// `in_app_ownership_type`.
        public var inAppOwnershipType: String?

        enum CodingKeys: String, CodingKey {
            case transactionId = "transaction_id"
            case originalTransactionId = "original_transaction_id"
            case productId = "product_id"
            case quantity
            case purchaseDate = "purchase_date_ms"
            case expiresDate = "expires_date_ms"
            case cancellationDate = "cancellation_date_ms"
            case isTrialPeriod = "is_trial_period"
            case inAppOwnershipType = "in_app_ownership_type"
        }

        /// Decodes Apple's mix of string and number fields.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            transactionId = try container.lenientString(.transactionId)
            originalTransactionId = try container.lenientString(.originalTransactionId)
            productId = try container.lenientString(.productId)
            quantity = try container.lenientInteger(.quantity)
            purchaseDate = try container.lenientInteger(.purchaseDate).map(Self.date)
            expiresDate = try container.lenientInteger(.expiresDate).map(Self.date)
            cancellationDate = try container.lenientInteger(.cancellationDate).map(Self.date)
            isTrialPeriod = try container.lenientString(.isTrialPeriod).map { $0 == "true" }
            inAppOwnershipType = try container.lenientString(.inAppOwnershipType)
        }

        private static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(millis) / 1000) }
    }

    enum CodingKeys: String, CodingKey {
        case status, environment, receipt
        case isRetryable = "is-retryable"
        case latestReceiptInfo = "latest_receipt_info"
        case latestReceipt = "latest_receipt"
    }

    /// Decodes the response, accepting `status` as a number or a numeric string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let status = try container.lenientInteger(.status) else {
            throw DecodingError.keyNotFound(CodingKeys.status, .init(codingPath: [], debugDescription: "no status"))
        }
        self.status = Int(status)
        environment = try container.decodeIfPresent(String.self, forKey: .environment)
        isRetryable = try container.decodeIfPresent(Bool.self, forKey: .isRetryable)
        receipt = try container.decodeIfPresent(Receipt.self, forKey: .receipt)
        latestReceiptInfo = try container.decodeIfPresent([InApp].self, forKey: .latestReceiptInfo)
        latestReceipt = try container.decodeIfPresent(String.self, forKey: .latestReceipt)
    }
}

extension KeyedDecodingContainer {
    /// A string field Apple may also write as a number.
    fileprivate func lenientString(_ key: Key) throws -> String? {
        if let text = try? decodeIfPresent(String.self, forKey: key) { return text }
        if let number = try? decodeIfPresent(Int64.self, forKey: key) { return String(number) }
        if let flag = try? decodeIfPresent(Bool.self, forKey: key) { return String(flag) }
        return nil
    }

    /// An integer field Apple may write as a string.
    fileprivate func lenientInteger(_ key: Key) throws -> Int64? {
        if let number = try? decodeIfPresent(Int64.self, forKey: key) { return number }
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let number = Int64(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not a number: \(text)")
        }
        return number
    }
}
