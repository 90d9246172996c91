import CofferCore
import CofferStore
import Foundation
import PostgresNIO

// The reads a request makes on its way (who the token is, and what the answer's entitlements need), as named
// prepared statements: PostgreSQL parses and plans each once per connection and keeps its plan (PostgreSQL's own
// choice between a plan for the arguments and one for any, `plan_cache_mode=auto`), where a query sent unnamed is
// planned at every call, which cost more than running it (37 µs against 4 for the entitlement grants' read).
// Each names its columns: a prepared `SELECT *` fails ("cached plan must not change result type") on the
// connections of an instance still running while another one's migration adds a column.

extension PostgresStore {
    /// Every row of a prepared read, within the operation deadline.
    func prepared<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row]
    where Statement.Row: Sendable {
        try await read { connection in
            var rows: [Statement.Row] = []
            for try await row in try await connection.execute(statement, logger: self.logger) { rows.append(row) }
            return rows
        }
    }
}

extension PostgresBindings {
    /// Bindings of texts, `$1` first.
    static func texts(_ values: String...) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values { bindings.append(value) }
        return bindings
    }
}

/// The live customer a device token belongs to: one of their tokens, or the first one kept on their row.
struct UserByToken: PostgresPreparedStatement {
    static let sql = """
        SELECT \(columns("u.")) FROM user_tokens t JOIN live_users u ON u.id = t.owner
        WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND u.merged_into IS NULL
        UNION ALL
        SELECT \(columns("")) FROM live_users WHERE token_hash = $1 AND merged_into IS NULL
            AND NOT EXISTS (SELECT 1 FROM user_tokens WHERE token_hash = $1)
        LIMIT 1
        """

    /// The columns ``Rows/user(_:)`` reads, each after `prefix`.
    private static func columns(_ prefix: String) -> String {
        [
            "id", "environment", "support_id", "token_hash", "app_account_token", "created_at", "app_transaction_id",
            "app_transaction_environment", "merged_into", "deleted_at",
        ].map { prefix + $0 }.joined(separator: ", ")
    }

    let tokenHash: String

    func makeBindings() throws -> PostgresBindings { .texts(tokenHash) }

    func decodeRow(_ row: PostgresRow) throws -> User { try Rows.user(row) }
}

/// A customer's entitlements granted for a time, newest first.
struct EntitlementGrantsOf: PostgresPreparedStatement {
    static let sql = """
        SELECT id, environment, recipient, entitlement, starts_at, ends_at, reason, created_by, cancelled_at,
            cancelled_by
        FROM entitlement_grants WHERE recipient = $1 AND environment = $2
        ORDER BY starts_at DESC, id DESC LIMIT 200
        """

    let recipient: UUID
    let environment: AppStoreEnvironment

    func makeBindings() throws -> PostgresBindings { .texts(recipient.uuidString, environment.rawValue) }

    func decodeRow(_ row: PostgresRow) throws -> EntitlementGrant { try PostgresStore.entitlementGrant(row) }
}

/// A customer's receipts of some products, in purchase order.
struct ReceiptsOfProducts: PostgresPreparedStatement {
    static let sql = """
        SELECT owner, transaction_id, original_transaction_id, product_id, quantity, purchase_date, expires_date,
            revocation_date, family_shared, trial, upgraded, data_environment, price, currency, storefront,
            revocation_reason, signed_by_xcode, delivered_credits, delivered_at, revoked_at, taken_from_balance,
            added_to_deficit, reversed_at, delivered_before_coffer
        FROM receipts WHERE owner = $1 AND product_id = ANY($2::text[]) AND environment = $3
        ORDER BY purchase_date, transaction_id COLLATE "C"
        """

    let owner: UUID
    let productIds: [String]
    let environment: AppStoreEnvironment

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(owner.uuidString)
        bindings.append(productIds)
        bindings.append(environment.rawValue)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Receipt { try Rows.receipt(row) }
}

/// A customer's subscriptions' renewal states, by original transaction.
struct RenewalStatesOf: PostgresPreparedStatement {
    static let sql = """
        SELECT original_transaction_id, environment, owner, auto_renew_product_id, auto_renews, in_billing_retry,
            grace_period_expires_date, signed_date
        FROM renewal_states WHERE environment = $1 AND owner = $2
        ORDER BY original_transaction_id COLLATE "C"
        """

    let owner: UUID
    let environment: AppStoreEnvironment

    func makeBindings() throws -> PostgresBindings { .texts(environment.rawValue, owner.uuidString) }

    func decodeRow(_ row: PostgresRow) throws -> RenewalState { try Rows.renewalState(row) }
}

// The sources of the entitlements a ledger batch's answers carry (`LedgerRequest.entitlementCatalog`), read for
// every customer of the batch at once, inside its write transaction: a statement a batch, not three a delivery.

/// The customers a batch read is for, `$1` their ids and `$2` their environments.
private func customerBindings(_ asked: [EntitlementSources.Asked], capacity: Int) -> PostgresBindings {
    var bindings = PostgresBindings(capacity: capacity)
    bindings.append(asked.map(\.owner.uuidString))
    bindings.append(asked.map(\.environment.rawValue))
    return bindings
}

/// Several customers' entitlement grants, each customer's newest 200, newest first.
struct EntitlementGrantsOfCustomers: PostgresPreparedStatement {
    static let sql = """
        SELECT g.id, g.environment, g.recipient, g.entitlement, g.starts_at, g.ends_at, g.reason, g.created_by,
            g.cancelled_at, g.cancelled_by
        FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(owner, environment, position)
        CROSS JOIN LATERAL (
            SELECT * FROM entitlement_grants
            WHERE recipient = q.owner AND environment = q.environment
            ORDER BY starts_at DESC, id DESC LIMIT 200
        ) g
        ORDER BY q.position, g.starts_at DESC, g.id DESC
        """

    let asked: [EntitlementSources.Asked]

    func makeBindings() throws -> PostgresBindings { customerBindings(asked, capacity: 2) }

    func decodeRow(_ row: PostgresRow) throws -> EntitlementGrant { try PostgresStore.entitlementGrant(row) }
}

/// Several customers' receipts of the products that can unlock something (`$3`), each customer's in purchase
/// order.
struct ReceiptsOfCustomers: PostgresPreparedStatement {
    static let sql = """
        SELECT r.owner, r.transaction_id, r.original_transaction_id, r.product_id, r.quantity, r.purchase_date,
            r.expires_date, r.revocation_date, r.family_shared, r.trial, r.upgraded, r.data_environment, r.price,
            r.currency, r.storefront, r.revocation_reason, r.signed_by_xcode, r.delivered_credits, r.delivered_at,
            r.revoked_at, r.taken_from_balance, r.added_to_deficit, r.reversed_at, r.delivered_before_coffer
        FROM unnest($1::text[], $2::text[]) AS q(owner, environment)
        JOIN receipts r ON r.owner = q.owner AND r.environment = q.environment AND r.product_id = ANY($3::text[])
        ORDER BY r.owner, r.purchase_date, r.transaction_id COLLATE "C"
        """

    let asked: [EntitlementSources.Asked]
    let productIds: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = customerBindings(asked, capacity: 3)
        bindings.append(productIds)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Receipt { try Rows.receipt(row) }
}

/// Several customers' subscriptions' renewal states, each customer's by original transaction.
struct RenewalStatesOfCustomers: PostgresPreparedStatement {
    static let sql = """
        SELECT s.original_transaction_id, s.environment, s.owner, s.auto_renew_product_id, s.auto_renews,
            s.in_billing_retry, s.grace_period_expires_date, s.signed_date
        FROM unnest($1::text[], $2::text[]) AS q(owner, environment)
        JOIN renewal_states s ON s.owner = q.owner AND s.environment = q.environment
        ORDER BY s.owner, s.original_transaction_id COLLATE "C"
        """

    let asked: [EntitlementSources.Asked]

    func makeBindings() throws -> PostgresBindings { customerBindings(asked, capacity: 2) }

    func decodeRow(_ row: PostgresRow) throws -> RenewalState { try Rows.renewalState(row) }
}

extension PostgresStore {
    /// The entitlement sources of the customers a batch's answers ask for, read on the batch's connection: one
    /// statement for the grants, one for the receipts (when a catalog has products that unlock something) and one
    /// for the renewal states (when it sells subscriptions), whatever the batch's size.
    func entitlementSources(_ asked: [EntitlementSources.Asked], on connection: PostgresConnection) async throws
        -> [UUID: EntitlementSources]
    {
        var sources: [UUID: EntitlementSources] = [:]
        for customer in asked { sources[customer.owner] = EntitlementSources() }
        guard !asked.isEmpty else { return sources }
        for try await grant in try await connection.execute(EntitlementGrantsOfCustomers(asked: asked), logger: logger)
        {
            sources[grant.recipient]?.grants.append(grant)
        }
        let products = asked.reduce(into: Set<String>()) { $0.formUnion($1.products) }
        if !products.isEmpty {
            let read = ReceiptsOfCustomers(asked: asked, productIds: products.sorted())
            for try await receipt in try await connection.execute(read, logger: logger) {
                sources[receipt.owner]?.receipts.append(receipt)
            }
        }
        let renewing = asked.filter(\.renewals)
        if !renewing.isEmpty {
            for try await renewal in try await connection.execute(
                RenewalStatesOfCustomers(asked: renewing), logger: logger)
            {
                sources[renewal.owner]?.renewals.append(renewal)
            }
        }
        return sources
    }
}
