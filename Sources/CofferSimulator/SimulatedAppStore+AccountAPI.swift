import CofferAppStore
import Foundation

extension SimulatedAPIError {
    static let appTransactionNotFound = Self(
        status: 404, errorCode: 4_040_019, errorMessage: "No AppTransaction exists for the customer.")
    static let testNotificationNotFound = Self(
        status: 404, errorCode: 4_040_008,
        errorMessage: "Either the test notification token is expired or the "
            + "notification and status are not yet available.")
    static let invalidAppAccountTokenUUID = Self(
        status: 400, errorCode: 4_000_183,
        errorMessage: "Invalid request. The app account token field must be a valid UUID.")
    static let familyTransactionNotSupported = Self(
        status: 400, errorCode: 4_000_185,
        errorMessage: "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
    static let notOriginalTransactionId = Self(
        status: 400, errorCode: 4_000_187,
        errorMessage: "Invalid request. The transaction ID provided is not an original transaction ID.")
}

extension SimulatedAppStore {
    /// The account an id of Apple's names: one of its transaction ids (original ones included) or its app
    /// transaction id, as Apple's endpoints that take "any id" read it.
    func account(ofAnyId id: String) -> String? {
        if let record = record(id) { return record.account }
        return appTransactionIds.first { $0.value == id }?.key
    }

    /// Get App Transaction Info: the customer's app transaction, found by any of their transaction ids or their
    /// app transaction id.
    public func appTransactionInfo(_ id: String) throws(SimulatedAPIError) -> AppTransactionInfoResponse {
        guard let account = account(ofAnyId: id) else { throw .appTransactionNotFound }
        var response = AppTransactionInfoResponse()
        do {
            response.signedAppTransactionInfo = try signedAppTransaction(account: account)
        } catch {
            throw .internalError
        }
        return response
    }

    /// Get Test Notification Status: the test notification a token names and each attempt to send it.
    public func testNotificationStatus(_ token: String) throws(SimulatedAPIError) -> CheckTestNotificationResponse {
        guard let notification = notifications.first(where: { $0.uuid == token && $0.type == "TEST" }) else {
            throw .testNotificationNotFound
        }
        var response = CheckTestNotificationResponse()
        response.signedPayload = notification.signedPayload
        response.sendAttempts = notification.attempts
        return response
    }

    /// Set App Account Token: the purchase an original transaction id names, and each renewal of it from then on,
    /// carry `body`'s token. Apple refuses a family-shared copy and an id that is not an original one.
    public func setAppAccountToken(_ originalTransactionId: String, _ body: UpdateAppAccountTokenRequest)
        throws(SimulatedAPIError)
    {
        guard let text = body.appAccountToken, let token = UUID(uuidString: text) else {
            throw .invalidAppAccountTokenUUID
        }
        guard let original = record(originalTransactionId) else { throw .transactionNotFound }
        guard original.originalId == original.id else { throw .notOriginalTransactionId }
        guard !original.familyShared else { throw .familyTransactionNotSupported }
        let now = clock.now()
        for transaction in transactions
        where transaction.originalId == original.id && transaction.account == original.account {
            update(transaction.id) {
                $0.appAccountToken = token
                $0.modified = now
            }
        }
    }

    /// Finish Transaction: the customer's devices stop replaying the transaction, as when the app finishes it.
    public func finishTransaction(_ transactionId: String) throws(SimulatedAPIError) {
        guard record(transactionId) != nil else { throw .transactionNotFound }
        finish(transactionId: transactionId)
    }
}
