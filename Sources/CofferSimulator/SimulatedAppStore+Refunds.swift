import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// Apple asks the developer for consumption information about a refund request
    /// (CONSUMPTION_REQUEST); the request is then granted with ``refund(transactionId:percentage:)`` or
    /// turned down with ``declineRefund(transactionId:)``.
    @discardableResult
    public func requestRefund(transactionId: String) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        guard !record.isRevoked else {
            throw SimulatorError("invalid-state", "transaction \(transactionId) is refunded")
        }
        var report = SimulatorReport()
        report.happened.append("\(record.account) asked for a refund of \(transactionId)")
        report.append(try notify("CONSUMPTION_REQUEST", nil, transactionId: transactionId, consumptionReason: true))
        awaitConsumption(transactionId)
        return report
    }

    /// Refunds a transaction: fully, or prorated (`percentage` in thousandths of a percent, 1-99999). A transaction
    /// refunded in part can be refunded again for a larger share or in full (a new REFUND).
    @discardableResult
    public func refund(transactionId: String, percentage: Int32? = nil) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        if record.isRevoked {
            guard let earlier = record.revocationPercentage, percentage.map({ $0 > earlier }) ?? true else {
                throw SimulatorError("invalid-state", "transaction \(transactionId) is already refunded")
            }
        }
        guard !record.familyShared else {
            throw SimulatorError("invalid-state", "transaction \(transactionId) is family-shared; refund the purchase")
        }
        if let percentage, !(1..<100_000).contains(percentage) {
            throw SimulatorError("invalid-request", "a prorated refund percentage is 1-99999 thousandths of a percent")
        }
        let now = clock.now()
        settleConsumption(transactionId)
        update(transactionId) {
            $0.revocationDate = now
            $0.revocationReason = 0
            $0.revocationPercentage = percentage
            $0.modified = now
        }
        var report = SimulatorReport()
        if let key = subscriptionKeyFor(record), subscriptions[key]?.latestTransactionId == transactionId {
            subscriptions[key]?.state = .revoked
            subscriptions[key]?.autoRenew = false
        }
        let how = percentage.map { "prorated \(Double($0) / 1000)%" } ?? "in full"
        report.happened.append("refunded \(transactionId) (\(record.product.id), \(record.account)) \(how)")
        report.transactionIds.append(transactionId)
        report.append(try notify("REFUND", nil, transactionId: transactionId))
        pushUpdate(transactionId)
        report.append(try revokeFamilyCopies(of: record.id, reason: "the purchase was refunded"))
        return report
    }

    /// Turns down a refund request (REFUND_DECLINED); nothing changes for the customer.
    @discardableResult
    public func declineRefund(transactionId: String) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        settleConsumption(transactionId)
        var report = SimulatorReport()
        report.happened.append("refund of \(transactionId) (\(record.product.id)) declined")
        report.append(try notify("REFUND_DECLINED", nil, transactionId: transactionId))
        return report
    }

    /// Reverses a refund (REFUND_REVERSED): the transaction is paid again.
    @discardableResult
    public func reverseRefund(transactionId: String) throws(SimulatorError) -> SimulatorReport {
        let record = try existing(transactionId)
        guard record.isRevoked, !record.familyShared else {
            throw SimulatorError("invalid-state", "transaction \(transactionId) has no refund to reverse")
        }
        let now = clock.now()
        update(transactionId) {
            $0.revocationDate = nil
            $0.revocationReason = nil
            $0.revocationPercentage = nil
            $0.modified = now
        }
        if let key = subscriptionKeyFor(record), subscriptions[key]?.latestTransactionId == transactionId {
            let expires = record.expiresDate ?? now
            subscriptions[key]?.state = expires > now ? .active : .expired
            subscriptions[key]?.autoRenew = expires > now
        }
        var report = SimulatorReport()
        report.happened.append("refund of \(transactionId) (\(record.product.id)) reversed")
        report.transactionIds.append(transactionId)
        report.append(try notify("REFUND_REVERSED", nil, transactionId: transactionId))
        pushUpdate(transactionId)
        return report
    }
}
