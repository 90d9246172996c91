import CofferAppStore
import Foundation

extension SimulatorServer {
    /// The controls for the App Store's own events: price increases, a product taken off sale, a parent rescinding
    /// consent, and renewal date extensions as the developer asks for them in App Store Connect or the API.
    static func eventControls(_ store: SimulatedAppStore) -> [(String, ControlAction)] {
        [
            (
                "price-increase",
                { control throws(SimulatorError) in
                    try await store.announcePriceIncrease(
                        originalTransactionId: control.require(control.originalTransactionId, "originalTransactionId"),
                        price: control.require(control.price, "price"),
                        consentRequired: control.consentRequired ?? true)
                }
            ),
            (
                "accept-price-increase",
                { control throws(SimulatorError) in
                    try await store.acceptPriceIncrease(
                        originalTransactionId: control.require(control.originalTransactionId, "originalTransactionId"))
                }
            ),
            (
                "remove-from-sale",
                { control throws(SimulatorError) in
                    try await store.removeFromSale(productId: control.require(control.productId, "productId"))
                }
            ),
            (
                "rescind-consent",
                { control throws(SimulatorError) in
                    try await store.rescindConsent(account: control.require(control.account, "account"))
                }
            ),
            (
                "extend",
                { control throws(SimulatorError) in
                    var request = ExtendRenewalDateRequest()
                    request.extendByDays = try control.require(control.days, "days")
                    request.extendReasonCode = 3
                    request.requestIdentifier = UUID().uuidString.lowercased()
                    let id = try control.require(control.originalTransactionId, "originalTransactionId")
                    let answer = try await refusing { () async throws(SimulatedAPIError) in
                        try await store.extendRenewalDate(id, request)
                    }
                    var report = SimulatorReport()
                    report.happened.append(
                        "\(id) extended to \(answer.effectiveDate?.formatted(.iso8601) ?? "?")")
                    report.notifications.append("RENEWAL_EXTENDED")
                    return report
                }
            ),
            (
                "extend-all",
                { control throws(SimulatorError) in
                    var request = MassExtendRenewalDateRequest()
                    request.extendByDays = try control.require(control.days, "days")
                    request.extendReasonCode = 3
                    request.productId = try control.require(control.productId, "productId")
                    request.storefrontCountryCodes = control.storefronts
                    let requestId = UUID().uuidString.lowercased()
                    request.requestIdentifier = requestId
                    _ = try await refusing { () async throws(SimulatedAPIError) in
                        try await store.extendRenewalDates(request)
                    }
                    let status = try await refusing { () async throws(SimulatedAPIError) in
                        try await store.renewalExtensionStatus(
                            productId: request.productId ?? "", requestIdentifier: requestId)
                    }
                    var report = SimulatorReport()
                    report.happened.append(
                        "renewal date extension \(requestId): \(status.succeededCount ?? 0) extended, "
                            + "\(status.failedCount ?? 0) not eligible")
                    report.notifications.append("RENEWAL_EXTENSION/SUMMARY")
                    return report
                }
            ),
        ]
    }

    /// Runs an App Store Server API call for a control: Apple's refusal becomes the control's.
    private static func refusing<T>(_ call: () async throws(SimulatedAPIError) -> T) async throws(SimulatorError) -> T {
        do {
            return try await call()
        } catch {
            throw SimulatorError("invalid-state", "\(error.errorMessage) (\(error.errorCode))")
        }
    }
}
