// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

/// The in-memory store's support figures: backup histories, the dashboard, and Sandbox cleanup.
extension InMemoryStore {
    public func backupHistory(owner: UUID, environment: AppStoreEnvironment, limit: Int) -> [BackupHistoryItem] {
        Array(
            backupLog.filter { $0.owner == owner && $0.environment == environment }.map(\.item).reversed()
                .prefix(max(0, limit)))
    }

    public func dashboard(environment: AppStoreEnvironment, days: Int, now: Date) -> DashboardFigures {
        let start = DashboardFigures.windowStart(days: days, endingAt: now)
        let all = state.receipts.filter { $0.key.environment == environment }.values
        // Purchases whose data came from the other environment (App Review on Production) are counted apart.
        let receipts = all.filter { ($0.transaction.environment ?? environment) == environment }
        // Paid up, or in Apple's grace period (renewal info): the subscriptions that give access now.
        func givesAccess(_ receipt: Receipt) -> Bool {
            guard receipt.deliveredAt != nil, !receipt.isRevoked else { return false }
            let chain = receipt.transaction.originalTransactionId
            let grace = renewals[TransactionKey(environment: environment, transactionId: chain)]?.gracePeriodExpiresDate
            return (receipt.transaction.expiresDate.map { $0 > now } ?? false) || (grace.map { $0 > now } ?? false)
        }
        func day(_ date: Date) -> Int64? {
            guard date >= start else { return nil }
            return Milliseconds.seconds(date) / DashboardFigures.secondsPerDay
        }
        var purchasesByDay: [Int64: Int] = [:]
        var refundsByDay: [Int64: Int] = [:]
        for receipt in receipts {
            // A purchase the app delivered before Coffer was not bought on the day Coffer recorded it.
            if let delivered = receipt.deliveredAt, !receipt.deliveredBeforeCoffer, let key = day(delivered) {
                purchasesByDay[key, default: 0] += 1
            }
            if receipt.isRevoked, let revoked = receipt.revokedAt, let key = day(revoked) {
                refundsByDay[key, default: 0] += 1
            }
        }
        // App Review's and TestFlight's sandbox accounts are left out of a Production dashboard.
        let own = state.users.values.filter {
            $0.environment == environment && ($0.appleAccount?.environment ?? environment) == environment
        }
        let ownIds = Set(own.map(\.id))
        let deficits = state.wallets.filter { ownIds.contains($0.key) && $0.value.deficit > 0 }
        let grants = grantList.filter { $0.environment == environment }
        var figures = DashboardFigures(
            users: own.count,
            pendingGrants: grants.count { $0.status == .pending },
            claimedGrants: grants.count { $0.status == .claimed },
            purchases: receipts.count { $0.deliveredAt != nil && !$0.deliveredBeforeCoffer },
            refunds: receipts.count { $0.isRevoked },
            usersInDeficit: deficits.count,
            outstandingDeficit: deficits.values.reduce(0) { $0 + $1.deficit },
            days: DashboardFigures.fill(days: days, from: start, purchases: purchasesByDay, refunds: refundsByDay),
            otherEnvironmentPurchases: all.count { $0.deliveredAt != nil } - receipts.count { $0.deliveredAt != nil })
        var currencyDeficits: [Currency: (users: Int, amount: Int64)] = [:]
        for (key, wallet) in state.currencyWallets where ownIds.contains(key.of) && wallet.deficit > 0 {
            let sum = currencyDeficits[key.currency] ?? (0, 0)
            currencyDeficits[key.currency] = (sum.users + 1, sum.amount + wallet.deficit)
        }
        figures.currencyDeficits = currencyDeficits.sorted { $0.key < $1.key }.map {
            CurrencyDeficit(
                currency: $0.key.rawValue, usersInDeficit: $0.value.users, outstandingDeficit: $0.value.amount)
        }
        let others = all.filter { ($0.transaction.environment ?? environment) != environment && $0.deliveredAt != nil }
        figures.otherEnvironmentCustomers = state.users.values.count {
            $0.environment == environment && ($0.appleAccount.map { $0.environment != environment } ?? false)
        }
        for receipt in others where !receipt.isRevoked {
            let (sum, overflow) = figures.otherEnvironmentCredits.addingReportingOverflow(receipt.deliveredCredits ?? 0)
            figures.otherEnvironmentCredits = overflow ? .max : sum
        }
        figures.otherEnvironmentSubscriptions =
            Set(others.filter(givesAccess).map(\.transaction.originalTransactionId))
            .count
        var revenue: [MoneyKey: (count: Int64, amount: Int64)] = [:]
        for receipt in receipts {
            // A family member's copy is not a payment: the purchaser's transaction counts it.
            guard !receipt.transaction.isFamilyShared, let price = receipt.transaction.price,
                let currency = receipt.transaction.currency
            else { continue }
            func count(refund: Bool, on date: Date?) {
                guard let date, let key = day(date) else { return }
                let slot = MoneyKey(
                    refund: refund, day: key, productId: receipt.transaction.productId, currency: currency)
                let sum = revenue[slot] ?? (0, 0)
                let (amount, overflow) = sum.amount.addingReportingOverflow(price)
                revenue[slot] = (sum.count + 1, overflow ? .max : amount)
            }
            count(refund: false, on: receipt.deliveredBeforeCoffer ? nil : receipt.deliveredAt)
            count(refund: true, on: receipt.isRevoked ? receipt.revokedAt : nil)
        }
        for (slot, sum) in revenue.sorted(by: {
            ($0.key.day, $0.key.productId, $0.key.currency) < ($1.key.day, $1.key.productId, $1.key.currency)
        }) {
            let item = MoneyFigures(
                dayNumber: slot.day, productId: slot.productId, currency: slot.currency, count: sum.count,
                amount: sum.amount)
            if slot.refund { figures.refunded.append(item) } else { figures.revenue.append(item) }
        }
        figures.activeSubscriptions = Set(receipts.filter(givesAccess).map(\.transaction.originalTransactionId)).count
        let prefix = DashboardFigures.loyaltyMilestonePrefix
        var loyalty: [String: Int] = [:]
        for milestone in milestones {
            let parts = milestone.split(separator: "/", maxSplits: 1)
            guard parts.count == 2, parts[1].hasPrefix(prefix), let owner = UUID(uuidString: String(parts[0])),
                state.users[owner]?.environment == environment
            else { continue }
            loyalty[String(parts[1].dropFirst(prefix.count)), default: 0] += 1
        }
        figures.loyaltyLifetimes = loyalty.sorted { $0.key < $1.key }.map { GroupCount(group: $0.key, count: $0.value) }
        return figures
    }

    private struct MoneyKey: Hashable {
        var refund: Bool
        var day: Int64
        var productId: String
        var currency: String
    }

    public func deleteGrants(environment: AppStoreEnvironment) -> Int {
        let before = grantList.count
        grantList.removeAll { $0.environment == environment }
        return before - grantList.count
    }
}
