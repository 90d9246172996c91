/// The body of `POST /v1/receipts/verify`: a legacy app receipt, as older app versions send it.
public struct ReceiptVerifyRequest: Codable, Sendable, Equatable {
    /// The receipt, base64 (`Bundle.main.appStoreReceiptURL`'s contents).
    public var receiptData: String

    /// Creates the body.
    public init(receiptData: String) { self.receiptData = receiptData }
}
