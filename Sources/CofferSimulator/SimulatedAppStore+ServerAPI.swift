import CofferAppStore
import Foundation

/// An App Store Server API error, as Apple sends it: an HTTP status and `{"errorCode", "errorMessage"}`.
public struct SimulatedAPIError: Error, Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// Apple's error code, e.g. 4040010.
    public var errorCode: Int64
    /// Apple's message.
    public var errorMessage: String

    static let internalError = Self(status: 500, errorCode: 5_000_000, errorMessage: "An unknown error occurred.")
    static let transactionNotFound = Self(status: 404, errorCode: 4_040_010, errorMessage: "Transaction id not found.")
    static let invalidTransactionId = Self(status: 400, errorCode: 4_000_006, errorMessage: "Invalid transaction id.")
    static let invalidOriginalTransactionId = Self(
        status: 400, errorCode: 4_000_008, errorMessage: "Invalid original transaction id.")
    static let invalidRevision = Self(status: 400, errorCode: 4_000_005, errorMessage: "Invalid revision.")
    static let invalidPaginationToken = Self(
        status: 400, errorCode: 4_000_014, errorMessage: "Invalid pagination token.")
    static let invalidStatus = Self(status: 400, errorCode: 4_000_031, errorMessage: "Invalid status.")
    static let subscriptionNotActive = Self(
        status: 403, errorCode: 4_030_004, errorMessage: "The subscription is not active.")
    static let invalidExtendByDays = Self(
        status: 400, errorCode: 4_000_009, errorMessage: "Invalid extend by days value.")
}

extension SimulatedAppStore {
    /// Page size of Apple's paged answers.
    static let pageSize = 20

    /// Get Transaction Info.
    public func transactionInfo(_ transactionId: String) throws(SimulatedAPIError) -> TransactionInfoResponse {
        guard let record = record(transactionId) else { throw .transactionNotFound }
        var response = TransactionInfoResponse()
        response.signedTransactionInfo = try apiSigned(record)
        return response
    }

    /// Get Transaction History (v1 and v2): every transaction of the customer `transactionId` names (any of their
    /// transaction ids, or their app transaction id), in the order
    /// they last changed (newest first with `filter`'s `DESCENDING`), those `filter` admits, 20 per page; `revision` is
    /// the previous page's token.
    public func transactionHistory(
        _ transactionId: String, revision: String?, filter: HistoryFilter = HistoryFilter()
    ) throws(SimulatedAPIError) -> HistoryResponse {
        guard let account = account(ofAnyId: transactionId) else { throw .transactionNotFound }
        let ordered = transactions.filter { $0.account == account && filter.admits($0) }.sorted {
            ($0.modified, $0.id) < ($1.modified, $1.id)
        }
        let all = filter.descending ? ordered.reversed() : ordered
        let (page, next, more) = try Self.page(all, token: revision, error: .invalidRevision)
        var response = HistoryResponse()
        response.revision = next
        response.hasMore = more
        response.bundleId = configuration.bundleId
        response.appAppleId = configuration.appAppleId
        response.rawEnvironment = environment(of: account).rawValue
        response.signedTransactions = try page.map(apiSigned)
        return response
    }

    /// Get All Subscription Statuses for the customer `transactionId` names (any of their transaction ids, or their
    /// app transaction id).
    /// With `statuses`, only subscriptions in one of them (Apple's `status` values: 1 active, 2 expired, 3 billing
    /// retry, 4 grace period, 5 revoked).
    public func subscriptionStatuses(_ transactionId: String, statuses: Set<Int32> = []) throws(SimulatedAPIError)
        -> StatusResponse
    {
        guard let account = account(ofAnyId: transactionId) else { throw .transactionNotFound }
        var groups: [String: [LastTransactionsItem]] = [:]
        for subscription in subscriptions.values.sorted(by: { $0.originalId < $1.originalId })
        where subscription.account == account && (statuses.isEmpty || statuses.contains(subscription.state.rawValue)) {
            guard let latest = record(subscription.latestTransactionId) else { continue }
            var item = LastTransactionsItem()
            item.rawStatus = subscription.state.rawValue
            item.originalTransactionId = subscription.originalId
            item.signedTransactionInfo = try apiSigned(latest)
            do {
                item.signedRenewalInfo = try signedRenewalInfo(subscription)
            } catch {
                throw .internalError
            }
            groups[subscription.group, default: []].append(item)
        }
        var response = StatusResponse()
        response.rawEnvironment = environment(of: account).rawValue
        response.bundleId = configuration.bundleId
        response.appAppleId = configuration.appAppleId
        response.data = groups.keys.sorted().map { group in
            var item = SubscriptionGroupIdentifierItem()
            item.subscriptionGroupIdentifier = Self.groupId(group)
            item.lastTransactions = groups[group]
            return item
        }
        return response
    }

    /// Look Up Order ID: status 0 with the order's transactions, or 1 when the order is unknown.
    public func lookUpOrder(_ orderId: String) throws(SimulatedAPIError) -> OrderLookupResponse {
        let found = transactions.filter { $0.orderId == orderId && !$0.familyShared }
        var response = OrderLookupResponse()
        response.rawStatus = found.isEmpty ? 1 : 0
        response.signedTransactions = try found.map(apiSigned)
        return response
    }

    /// The order id of a transaction (what the customer's emailed receipt shows), for tests and the CLI.
    public func orderId(of transactionId: String) -> String? { record(transactionId)?.orderId }

    /// `report` with the order id of each of its transactions.
    public func namingOrders(_ report: SimulatorReport) -> SimulatorReport {
        var report = report
        for id in report.transactionIds { report.orderIds[id] = record(id)?.orderId }
        return report
    }

    /// Get Refund History v2: the refunded transactions of the customer `transactionId` names (any of their
    /// transaction ids, or their app transaction id), 20 per page.
    public func refundHistory(_ transactionId: String, revision: String?) throws(SimulatedAPIError)
        -> RefundHistoryResponse
    {
        guard let account = account(ofAnyId: transactionId) else { throw .transactionNotFound }
        let refunded = transactions.filter { $0.account == account && $0.isRevoked && !$0.familyShared }
            .sorted { ($0.modified, $0.id) < ($1.modified, $1.id) }
        let (page, next, more) = try Self.page(refunded, token: revision, error: .invalidRevision)
        var response = RefundHistoryResponse()
        response.signedTransactions = try page.map(apiSigned)
        response.revision = next
        response.hasMore = more
        return response
    }

    func apiSigned(_ record: SimulatedTransaction) throws(SimulatedAPIError) -> String {
        do {
            return try signedTransaction(record)
        } catch {
            throw .internalError
        }
    }

    /// One page of `items` after the position in `token` (an opaque offset).
    static func page<T>(_ items: [T], token: String?, error: SimulatedAPIError) throws(SimulatedAPIError)
        -> (page: [T], next: String, hasMore: Bool)
    {
        var offset = 0
        if let token {
            guard let data = Data(base64Encoded: token), let text = String(data: data, encoding: .utf8),
                text.hasPrefix("offset:"), let value = Int(text.dropFirst(7)), (0...items.count).contains(value)
            else { throw error }
            offset = value
        }
        let end = min(items.count, offset + pageSize)
        let next = Data("offset:\(end)".utf8).base64EncodedString()
        return (Array(items[offset..<end]), next, end < items.count)
    }
}
