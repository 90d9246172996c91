import CofferAppStore
import CofferCore
import Foundation
import Testing

/// Apple's sample payloads decode into Apple-named models and encode back to the same JSON: every field maps.
@Suite("Apple's models")
struct ModelTests {
    /// Decodes a sample, encodes it again, and compares the two JSON trees.
    func roundTrip<T: Codable>(_ file: String, as type: T.Type) throws -> T {
        let original = try AppleFiles.data("models/\(file).json")
        let model = try AppleJSON.decode(T.self, from: original)
        let again = try AppleJSON.encode(model)
        let before = try JSONSerialization.jsonObject(with: original)
        let after = try JSONSerialization.jsonObject(with: again)
        #expect(Self.same(before, after), "\(file) does not round-trip:\n\(String(decoding: again, as: UTF8.self))")
        return model
    }

    static func same(_ lhs: Any, _ rhs: Any) -> Bool {
        switch (lhs, rhs) {
        case (let lhs as [String: Any], let rhs as [String: Any]):
            return Set(lhs.keys) == Set(rhs.keys)
                && lhs.allSatisfy { key, value in rhs[key].map { same(value, $0) } ?? false }
        case (let lhs as [Any], let rhs as [Any]):
            return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { same($0, $1) }
        case (let lhs as String, let rhs as String):
            // UUIDs are decoded as UUID and written back in upper case: compare them as UUIDs.
            if let left = UUID(uuidString: lhs), let right = UUID(uuidString: rhs) { return left == right }
            return lhs == rhs
        case (let lhs as NSNumber, let rhs as NSNumber):
            return abs(lhs.doubleValue - rhs.doubleValue) <= max(1e-9, abs(lhs.doubleValue) * 1e-12)
        case (is NSNull, is NSNull):
            return true
        default:
            return false
        }
    }

    @Test("signed transactions, with and without revocation")
    func transactions() throws {
        let transaction = try roundTrip("signedTransaction", as: JWSTransactionDecodedPayload.self)
        #expect(transaction.transactionId == "23456")
        #expect(transaction.type == .autoRenewableSubscription)
        #expect(transaction.inAppOwnershipType == .purchased)
        #expect(transaction.offerType == .introductoryOffer)
        #expect(transaction.revocationReason == .appIssue)
        #expect(transaction.environment == .localTesting)
        #expect(transaction.transactionReason == .purchase)
        #expect(transaction.offerDiscountType == .payAsYouGo)
        #expect(transaction.appAccountToken == UUID(uuidString: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
        #expect(transaction.purchaseDate == Date(timeIntervalSince1970: 1_698_148_900))
        #expect(transaction.price == 10_990)
        let revoked = try roundTrip("signedTransactionWithRevocation", as: JWSTransactionDecodedPayload.self)
        #expect(revoked.revocationType == .refundProrated)
        #expect(revoked.revocationPercentage == 50_000)
    }

    @Test("signed renewal info")
    func renewalInfo() throws {
        let info = try roundTrip("signedRenewalInfo", as: JWSRenewalInfoDecodedPayload.self)
        #expect(info.expirationIntent == .customerCancelled)
        #expect(info.autoRenewStatus == .on)
        #expect(info.priceIncreaseStatus == .customerHasNotResponded)
        #expect(info.offerType == .promotionalOffer)
        #expect(info.gracePeriodExpiresDate == Date(timeIntervalSince1970: 1_698_148_900))
        #expect(info.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
    }

    @Test("notifications: data, summary, external purchase token, consumption request, app data")
    func notifications() throws {
        let subscribed = try roundTrip("signedNotification", as: ResponseBodyV2DecodedPayload.self)
        #expect(subscribed.notificationType == .subscribed)
        #expect(subscribed.subtype == .initialBuy)
        #expect(subscribed.data?.status == .active)
        #expect(subscribed.data?.appAppleId == 41_234)
        let summary = try roundTrip("signedSummaryNotification", as: ResponseBodyV2DecodedPayload.self)
        #expect(summary.notificationType == .renewalExtension)
        #expect(summary.subtype == .summary)
        #expect(summary.summary?.storefrontCountryCodes == ["CAN", "USA", "MEX"])
        #expect(summary.summary?.failedCount == 2)
        let token = try roundTrip("signedExternalPurchaseTokenNotification", as: ResponseBodyV2DecodedPayload.self)
        #expect(token.notificationType == .externalPurchaseToken)
        #expect(token.subtype == .unreported)
        #expect(token.externalPurchaseToken?.tokenCreationDate == Date(timeIntervalSince1970: 1_698_148_950))
        let sandboxToken = try roundTrip(
            "signedExternalPurchaseTokenSandboxNotification", as: ResponseBodyV2DecodedPayload.self)
        #expect(sandboxToken.externalPurchaseToken?.externalPurchaseId?.hasPrefix("SANDBOX") == true)
        let consumption = try roundTrip("signedConsumptionRequestNotification", as: ResponseBodyV2DecodedPayload.self)
        #expect(consumption.notificationType == .consumptionRequest)
        #expect(consumption.data?.consumptionRequestReason == .unintendedPurchase)
        let rescind = try roundTrip("signedRescindConsentNotification", as: ResponseBodyV2DecodedPayload.self)
        #expect(rescind.notificationType == .rescindConsent)
        #expect(rescind.appData?.signedAppTransactionInfo == "signed_app_transaction_info_value")
    }

    @Test("app transaction")
    func appTransaction() throws {
        let app = try roundTrip("appTransaction", as: AppTransaction.self)
        #expect(app.receiptType == .localTesting)
        #expect(app.originalPlatform == .iOS)
        #expect(app.versionExternalIdentifier == 512)
        #expect(app.deviceVerificationNonce == UUID(uuidString: "48ccfa42-7431-4f22-9908-7e88983e105a"))
    }

    @Test("App Store Server API responses and Apple's error bodies")
    func apiResponses() throws {
        #expect(try roundTrip("transactionInfoResponse", as: TransactionInfoResponse.self).signedTransactionInfo != nil)
        let history = try roundTrip("transactionHistoryResponse", as: HistoryResponse.self)
        #expect(history.hasMore == true)
        #expect(history.environment == .localTesting)
        let statuses = try roundTrip("getAllSubscriptionStatusesResponse", as: StatusResponse.self)
        #expect(statuses.data?.count == 2)
        #expect(statuses.data?.first?.lastTransactions?.first?.status == .active)
        #expect(try roundTrip("lookupOrderIdResponse", as: OrderLookupResponse.self).status == .invalid)
        #expect(
            try roundTrip("getRefundHistoryResponse", as: RefundHistoryResponse.self).signedTransactions?.count == 2)
        let notifications = try roundTrip("getNotificationHistoryResponse", as: NotificationHistoryResponse.self)
        #expect(notifications.notificationHistory?.last?.sendAttempts?.first?.sendAttemptResult == .circularRedirect)
        #expect(
            try roundTrip("requestTestNotificationResponse", as: SendTestNotificationResponse.self)
                .testNotificationToken != nil)
        let extended = try roundTrip("extendSubscriptionRenewalDateResponse", as: ExtendRenewalDateResponse.self)
        #expect(extended.success == true)
        for error in [
            "apiException", "apiTooManyRequestsException", "transactionIdNotFoundError", "invalidTransactionIdError",
        ] {
            let payload = try roundTrip(error, as: ErrorPayload.self)
            #expect(payload.errorCode != nil)
        }
        #expect(
            APIErrorCode(rawValue: try roundTrip("transactionIdNotFoundError", as: ErrorPayload.self).errorCode ?? 0)
                == .transactionIdNotFound)
    }

    @Test("unknown enumerated values and unknown fields still decode; the raw value is kept")
    func unknownValues() throws {
        let json = #"""
            {"transactionId": "1", "type": "Hologram", "offerType": 9, "environment": "Moon", "futureField": {"x": 1}}
            """#
        let transaction = try AppleJSON.decode(JWSTransactionDecodedPayload.self, from: Data(json.utf8))
        #expect(transaction.type == nil)
        #expect(transaction.rawType == "Hologram")
        #expect(transaction.offerType == nil)
        #expect(transaction.rawOfferType == 9)
        #expect(transaction.rawEnvironment == "Moon")
        #expect(transaction.transactionId == "1")
    }

    @Test("repeated keys in a payload are refused")
    func repeatedKeys() {
        let json = #"{"transactionId": "1", "transactionId": "2"}"#
        #expect(throws: StrictJSONError.self) {
            try AppleJSON.decode(JWSTransactionDecodedPayload.self, from: Data(json.utf8))
        }
    }
}

/// The models' generated readers (``StrictJSONReadable``) answer as their `Decodable` conformances do.
@Suite("Apple's models, read member by member")
struct ModelReaderTests {
    /// The `Decodable` path: Foundation's decoder, Apple's dates.
    static func decodable<T: Decodable>(_ type: T.Type, _ data: Data) -> T? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try? decoder.decode(type, from: data)
    }

    /// Apple's sample, then the sample with each member given each wrong kind of value in turn.
    func check<T: Decodable & Equatable>(_ file: String, as type: T.Type) throws {
        let original = try AppleFiles.data("models/\(file).json")
        let read = try AppleJSON.decode(T.self, from: original)
        #expect(read == Self.decodable(T.self, original), "\(file)")
        let object = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        let wrong: [Any] = ["text", 7, 1.5, true, NSNull(), [String: Any](), [Any]()]
        for key in object.keys {
            for value in wrong {
                var mutated = object
                mutated[key] = value
                let data = try JSONSerialization.data(withJSONObject: mutated)
                #expect(
                    (try? AppleJSON.decode(T.self, from: data)) == Self.decodable(T.self, data),
                    "\(file) with \(key) = \(value)")
            }
        }
    }

    @Test("Apple's samples and every member given a wrong kind of value: the same answers")
    func sameAnswers() throws {
        try check("signedTransaction", as: JWSTransactionDecodedPayload.self)
        try check("signedTransactionWithRevocation", as: JWSTransactionDecodedPayload.self)
        try check("signedRenewalInfo", as: JWSRenewalInfoDecodedPayload.self)
        try check("signedNotification", as: ResponseBodyV2DecodedPayload.self)
        try check("signedSummaryNotification", as: ResponseBodyV2DecodedPayload.self)
        try check("signedExternalPurchaseTokenNotification", as: ResponseBodyV2DecodedPayload.self)
        try check("signedConsumptionRequestNotification", as: ResponseBodyV2DecodedPayload.self)
        try check("appTransaction", as: AppTransaction.self)
        try check("transactionHistoryResponse", as: HistoryResponse.self)
        try check("getAllSubscriptionStatusesResponse", as: StatusResponse.self)
        try check("getNotificationHistoryResponse", as: NotificationHistoryResponse.self)
    }
}
