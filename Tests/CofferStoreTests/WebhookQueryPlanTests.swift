import CofferStore
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferStoreSQLite

/// The webhooks' lease on SQLite reads only what is pending: a customer's earlier pending deliveries through the
/// in-order index, never every delivery the endpoint ever had (the primary key's range, which grows with each event
/// delivered and made each round slower as the outbox aged).
@Suite("Webhook query plans")
struct WebhookQueryPlanTests {
    @Test(
        "the lease's look-up of a customer's earlier deliveries uses webhook_deliveries_in_order", arguments: [nil, 2])
    func lease(endpoints: Int?) async throws {
        let path = try TemporaryDirectory.file("store.sqlite")
        _ = try SQLiteStore(path: path)
        let database = try DatabaseQueue(path: path)
        let plan = try await database.read { db in
            let arguments: [any DatabaseValueConvertible] =
                ["Sandbox", 0, 0] + Array(repeating: "settings", count: endpoints ?? 0) + [256]
            return try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN " + SQLiteStore.leaseQuery(endpoints: endpoints),
                arguments: StatementArguments(arguments)
            ).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("USING INDEX webhook_deliveries_in_order") }, "\(plan)")
        #expect(plan.contains { $0.contains("USING INDEX webhook_deliveries_due") }, "\(plan)")
        #expect(!plan.contains { $0.contains("PRIMARY KEY") }, "\(plan)")
    }
}
