import CofferAppStore
import Foundation

/// What an app's server sent with Send Consumption Information, as the simulator recorded it: tests read it
/// with ``SimulatedAppStore/consumption(for:)`` and `GET /simulator/history` shows it on the transaction.
public struct SimulatedConsumption: Sendable, Codable, Equatable {
    /// The endpoint's version: 2 (`/inApps/v2/transactions/consumption`) or 1.
    public var version: Int
    /// When it arrived (simulated time).
    public var received: Date
    /// Whether a CONSUMPTION_REQUEST about the transaction was waiting for an answer (sent within the 12 hours
    /// Apple gives, and not yet decided). Apple takes the information either way; a server that sends it unasked
    /// shows here.
    public var requested: Bool
    /// The version 2 body.
    public var information: ConsumptionRequest?
    /// The version 1 body.
    public var informationV1: ConsumptionRequestV1?
}

extension SimulatedAPIError {
    static let generalBadRequest = Self(status: 400, errorCode: 4_000_000, errorMessage: "Bad request.")
    static let invalidCustomerConsented = Self(
        status: 400, errorCode: 4_000_035,
        errorMessage: "Invalid request. The customer consented field is required and must indicate the customer "
            + "consented.")
    static let invalidDeliveryStatus = Self(
        status: 400, errorCode: 4_000_036, errorMessage: "Invalid request. The delivery status field is invalid.")
    static let invalidSampleContentProvided = Self(
        status: 400, errorCode: 4_000_041,
        errorMessage: "Invalid request. The sample content provided field is invalid.")
    static let invalidRefundPreference = Self(
        status: 400, errorCode: 4_000_044, errorMessage: "Invalid request. The refund preference field is invalid.")
    static let appTransactionIdNotSupported = Self(
        status: 400, errorCode: 4_000_048,
        errorMessage: "Invalid request. App transactions aren't supported by this endpoint.")
    static let consumptionPercentageAutoRenewable = Self(
        status: 400, errorCode: 4_000_209,
        errorMessage: "Invalid request. The consumption percentage field is not supported for auto-renewable "
            + "subscription transactions.")
    // Apple documents these two errors without a code: they answer as a malformed request does.
    static let consumptionPercentageOutOfRange = Self(
        status: 400, errorCode: 4_000_000,
        errorMessage: "Invalid request. The consumption percentage is outside the valid range.")
    static let undeliveredConsumptionPercentageNonZero = Self(
        status: 400, errorCode: 4_000_000,
        errorMessage: "Invalid request. The consumption percentage must be zero for the provided delivery status.")

    /// A version 1 field outside its coded range, with the code Apple gives that field.
    static func invalidV1(_ field: String, _ code: Int64) -> Self {
        Self(status: 400, errorCode: code, errorMessage: "Invalid request. The \(field) field is invalid.")
    }
}

extension SimulatedAppStore {
    /// How long Apple waits for consumption information after a CONSUMPTION_REQUEST.
    static let consumptionWindow: TimeInterval = 12 * 3_600

    /// Send Consumption Information (version 2), checked field by field as Apple does, then recorded.
    public func recordConsumption(_ transactionId: String, _ body: ConsumptionRequest) throws(SimulatedAPIError) {
        let record = try consumptionTarget(transactionId)
        guard body.customerConsented == true else { throw .invalidCustomerConsented }
        guard let delivery = body.deliveryStatus else { throw .invalidDeliveryStatus }
        guard body.sampleContentProvided != nil else { throw .invalidSampleContentProvided }
        if body.rawRefundPreference != nil, body.refundPreference == nil { throw .invalidRefundPreference }
        if let percentage = body.consumptionPercentage {
            guard record.product.kind != .autoRenewable else { throw .consumptionPercentageAutoRenewable }
            guard (0...100_000).contains(percentage) else { throw .consumptionPercentageOutOfRange }
            guard delivery == .delivered || percentage == 0 else { throw .undeliveredConsumptionPercentageNonZero }
        }
        if body.refundPreference == .grantProrated, record.product.kind != .autoRenewable {
            guard let percentage = body.consumptionPercentage, (1..<100_000).contains(percentage) else {
                throw .consumptionPercentageOutOfRange
            }
        }
        keepConsumption(transactionId, version: 2) { $0.information = body }
    }

    /// Send Consumption Information version 1: every coded field in its range (Apple's code for each), then
    /// recorded.
    public func recordConsumptionV1(_ transactionId: String, _ body: ConsumptionRequestV1) throws(SimulatedAPIError) {
        _ = try consumptionTarget(transactionId)
        guard body.customerConsented == true else { throw .invalidCustomerConsented }
        guard body.sampleContentProvided != nil else { throw .invalidSampleContentProvided }
        let coded: [(String, Int32?, ClosedRange<Int32>, Int64)] = [
            ("consumption status", body.consumptionStatus, 0...3, 4_000_034),
            ("platform", body.platform, 0...2, 4_000_039),
            ("delivery status", body.deliveryStatus, 0...5, 4_000_036),
            ("account tenure", body.accountTenure, 0...7, 4_000_032),
            ("play time", body.playTime, 0...7, 4_000_040),
            ("lifetime dollars refunded", body.lifetimeDollarsRefunded, 0...7, 4_000_038),
            ("lifetime dollars purchased", body.lifetimeDollarsPurchased, 0...7, 4_000_037),
            ("user status", body.userStatus, 0...4, 4_000_042),
        ]
        for (field, value, range, code) in coded {
            guard let value, range.contains(value) else { throw .invalidV1(field, code) }
        }
        if let preference = body.refundPreference, !(0...3).contains(preference) { throw .invalidRefundPreference }
        guard let token = body.appAccountToken, token.isEmpty || UUID(uuidString: token) != nil else {
            throw .invalidV1("app account token", 4_000_033)
        }
        keepConsumption(transactionId, version: 1) { $0.informationV1 = body }
    }

    /// The consumption information last sent for a transaction, if any.
    public func consumption(for transactionId: String) -> SimulatedConsumption? { consumptions[transactionId] }

    /// Notes a CONSUMPTION_REQUEST about `transactionId`: an answer within 12 hours counts as requested.
    func awaitConsumption(_ transactionId: String) { consumptionAsked[transactionId] = clock.now() }

    /// Apple decided the refund request: later information is no longer awaited.
    func settleConsumption(_ transactionId: String) { consumptionAsked[transactionId] = nil }

    private func consumptionTarget(_ transactionId: String) throws(SimulatedAPIError) -> SimulatedTransaction {
        guard let record = record(transactionId) else {
            if appTransactionIds.values.contains(transactionId) { throw .appTransactionIdNotSupported }
            throw .transactionNotFound
        }
        guard !record.familyShared else { throw .familyTransactionNotSupported }
        return record
    }

    private func keepConsumption(_ transactionId: String, version: Int, _ fill: (inout SimulatedConsumption) -> Void) {
        let now = clock.now()
        let requested = consumptionAsked[transactionId].map { now.timeIntervalSince($0) <= Self.consumptionWindow }
        var kept = SimulatedConsumption(version: version, received: now, requested: requested ?? false)
        fill(&kept)
        consumptions[transactionId] = kept
    }
}

extension SimulatedConsumption {
    /// One line: what was sent, and whether it was asked for.
    public var describedForSupport: String {
        var parts: [String] = []
        if let information {
            parts.append("delivery \(information.rawDeliveryStatus ?? "-")")
            if let percentage = information.consumptionPercentage {
                parts.append("consumed \(Double(percentage) / 1_000)%")
            }
            parts.append("preference \(information.rawRefundPreference ?? "none")")
        }
        if let informationV1 {
            parts.append("consumption status \(informationV1.consumptionStatus.map(String.init) ?? "-")")
            parts.append("delivery \(informationV1.deliveryStatus.map(String.init) ?? "-")")
        }
        parts.append(requested ? "answering a consumption request" : "unasked")
        return parts.joined(separator: ", ")
    }
}
