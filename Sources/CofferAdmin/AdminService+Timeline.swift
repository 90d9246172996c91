import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// A customer's history as support reads it: the timeline's items from ledger entries, and the CSV exports.
extension AdminService {
    /// A customer's timeline as CSV: one line per item, times in UTC; `currency` names another currency than the
    /// default (empty for the default's).
    public static func timelineCSV(_ detail: UserDetail) -> String {
        CSVText.document(
            header: [
                "at (UTC)", "kind", "credits", "balance after", "summary", "reference", "data environment", "currency",
            ],
            rows: detail.timeline.map { item in
                [
                    Self.isoTime(item.at), item.kind.rawValue, item.credits.map(String.init) ?? "",
                    item.balanceAfter.map(String.init) ?? "", item.summary, item.reference ?? "",
                    item.dataEnvironment?.rawValue ?? "", item.currency ?? "",
                ]
            })
    }

    /// Audit events as CSV, times in UTC.
    public static func auditCSV(_ events: [AuditEvent]) -> String {
        CSVText.document(
            header: ["at (UTC)", "admin", "action", "subject", "before", "after"],
            rows: events.map {
                [Self.isoTime($0.at), $0.actor, $0.action, $0.subject, $0.before ?? "", $0.after ?? ""]
            }
        )
    }

    static func isoTime(_ date: Date) -> String { date.formatted(.iso8601) }

    static func item(_ entry: LedgerEntry, environment: AppStoreEnvironment, catalog: Catalog) -> TimelineItem {
        let product = entry.productId.map { id in catalog.product(id: id)?.name.map { "\($0) (\(id))" } ?? id } ?? "?"
        var transaction = entry.transactionId ?? "?"
        if let data = entry.dataMark, data != DataEnvironment(environment) {
            transaction +=
                ", \(data.rawValue) data"
                + (data == .sandbox
                    ? ": App Review or TestFlight" : data == .xcode ? ": StoreKit testing in Xcode" : "")
        }
        let (kind, summary): (TimelineKind, String) =
            switch entry.key.kind {
            case .purchase: (.purchase, "Purchase of \(product) delivered (transaction \(transaction))")
            case .revocation:
                (
                    .refund,
                    "Refund of \(product) (transaction \(transaction)): \(PanelText.credits(-entry.balanceDelta)) taken back"
                        + (entry.deficitDelta > 0 ? ", \(PanelText.credits(entry.deficitDelta)) owed" : "")
                )
            case .reversal: (.reversal, "Refund of \(product) reversed by Apple (transaction \(transaction))")
            case .grant: (.grantClaimed, "Grant claimed by the app: \(entry.reason ?? "")")
            case .adjustment:
                (.adjustment, "Balance adjusted by \(PanelText.change(entry.amount)): \(entry.reason ?? "")")
            case .spend: (.spend, "Spent \(PanelText.credits(-entry.amount)) (key \(entry.key.id))")
            case .expiry:
                (
                    .expiry,
                    "\(PanelText.credits(-entry.amount)) credits of "
                        + (CreditLots.allowanceTransaction(ofLot: entry.key.id).map {
                            "the allowance of transaction \($0) ended, unspent"
                        } ?? "grant \(entry.key.id) expired, unspent")
                )
            case .allowance:
                (
                    .allowance,
                    "Allowance of \(product) for the period of transaction \(transaction): "
                        + "\(PanelText.credits(entry.amount)) credits, ending with the period"
                )
            case .merge:
                (
                    .merge,
                    entry.amount <= 0 && entry.walletAfter == .empty
                        ? "Merged into another customer: balance and history moved there"
                        : "Another customer merged into this one: \(PanelText.credits(entry.balanceDelta)) credits and its history"
                )
            }
        return TimelineItem(
            at: entry.createdAt, kind: kind, summary: summary, credits: entry.balanceDelta,
            balanceAfter: entry.walletAfter.balance, reference: entry.key.rawValue,
            dataEnvironment: entry.dataMark)
    }
}
