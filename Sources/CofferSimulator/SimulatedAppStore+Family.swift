import CofferAppStore
import CofferCore
import CofferStoreKit
import Foundation

extension SimulatedAppStore {
    /// Puts accounts in one family: their non-consumables and subscriptions bought from now on are shared.
    public func formFamily(_ accounts: [String]) {
        let members = Set(accounts)
        for account in accounts { families[account] = members }
    }

    /// Takes an account out of its family: what others shared with it is revoked (REVOKE), and what it
    /// shared with them too.
    @discardableResult
    public func leaveFamily(_ account: String) throws(SimulatorError) -> SimulatorReport {
        guard let members = families[account] else {
            throw SimulatorError("invalid-state", "\(account) is in no family")
        }
        var report = SimulatorReport()
        for member in members { families[member]?.remove(account) }
        families[account] = nil
        report.happened.append("\(account) left the family")
        let now = clock.now()
        let shared = transactions.filter { copy in
            copy.familyShared && !copy.isRevoked
                && (copy.account == account || familyOrigin[copy.id].flatMap { record($0)?.account } == account)
        }
        for copy in shared {
            update(copy.id) {
                $0.revocationDate = now
                $0.revocationReason = 0
                $0.modified = now
            }
            report.happened.append("family access to \(copy.product.id) revoked for \(copy.account): \(copy.id)")
            report.transactionIds.append(copy.id)
            report.append(try notify("REVOKE", nil, transactionId: copy.id))
            pushUpdate(copy.id)
        }
        return report
    }

    func shareWithFamily(_ transactionId: String) throws(SimulatorError) -> SimulatorReport {
        var report = SimulatorReport()
        guard let purchase = record(transactionId) else { return report }
        for member in (families[purchase.account] ?? []).sorted() where member != purchase.account {
            let id = nextIdentifier()
            var copy = purchase
            copy.id = id
            copy.originalId = id
            copy.account = member
            copy.familyShared = true
            copy.appAccountToken = nil
            copy.price = 0
            copy.finished = false
            add(copy)
            familyOrigin[id] = purchase.id
            report.happened.append("shared \(purchase.product.id) with \(member): transaction \(id)")
            report.transactionIds.append(id)
            pushUpdate(id)
        }
        return report
    }

    func revokeFamilyCopies(of purchaseId: String, reason: String) throws(SimulatorError) -> SimulatorReport {
        var report = SimulatorReport()
        let now = clock.now()
        for (copyId, origin) in familyOrigin.sorted(by: { $0.key < $1.key }) where origin == purchaseId {
            guard let copy = record(copyId), !copy.isRevoked else { continue }
            update(copyId) {
                $0.revocationDate = now
                $0.revocationReason = 0
                $0.modified = now
            }
            report.happened.append("family access to \(copy.product.id) revoked for \(copy.account) (\(reason))")
            report.transactionIds.append(copyId)
            report.append(try notify("REVOKE", nil, transactionId: copyId))
            pushUpdate(copyId)
        }
        return report
    }
}
