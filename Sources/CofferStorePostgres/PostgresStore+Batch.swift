// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    public func apply(_ requests: [LedgerRequest]) async throws -> [Result<LedgerResult, LedgerError>] {
        guard !requests.isEmpty else { return [] }
        return try await write { connection in
            // Another currency's requests are applied one at a time after the default currency's batch: each
            // currency is a ledger of its own, so the order between them changes nothing.
            let others = requests.indices.filter { requests[$0].currency != nil }
            var results: [Result<LedgerResult, LedgerError>]
            if others.isEmpty {
                results = try await self.applyDefault(requests, on: connection)
            } else {
                // Every user of the batch locked first, in the order the default batch locks them, so two
                // instances' batches never wait on each other in a circle.
                let owners = Set(requests.map(\.owner.uuidString)).sorted()
                try await connection.query(
                    """
                    SELECT 1 FROM wallets WHERE user_id = ANY(\(owners)) ORDER BY user_id COLLATE "C" FOR UPDATE
                    """, logger: self.logger)
                let defaults = requests.indices.filter { requests[$0].currency == nil }
                results = .init(repeating: .failure(.unknownUser(requests[0].owner)), count: requests.count)
                let decided = try await self.applyDefault(defaults.map { requests[$0] }, on: connection)
                for (position, result) in zip(defaults, decided) { results[position] = result }
                let context = PostgresLedgerContext(connection: connection, logger: self.logger)
                for position in others {
                    results[position] = try await LedgerWriter.apply(requests[position], in: context)
                }
            }
            try await self.updateLots(connection, requests, results)
            let asked = EntitlementSources.Asked.of(requests, results)
            guard !asked.isEmpty else { return results }
            let sources = try await self.entitlementSources(asked, on: connection)
            return EntitlementSources.fill(results, for: requests, from: sources)
        }
    }

    /// Applies requests of the default currency as one batch: one statement reads every request's state, one
    /// writes what the batch decided.
    private func applyDefault(_ requests: [LedgerRequest], on connection: PostgresConnection) async throws
        -> [Result<LedgerResult, LedgerError>]
    {
        guard !requests.isEmpty else { return [] }
        var states = [LedgerWriter.State?](repeating: nil, count: requests.count)
        let load = LoadLedgerBatch(requests)
        for try await (index, state) in try await connection.execute(load, logger: logger) {
            guard states.indices.contains(index) else { throw StoreError.storage("batch row \(index) unasked") }
            states[index] = state
        }
        let (results, batch) = LedgerWriter.decide(batch: requests, states: states)
        if !batch.isEmpty {
            let save = try SaveLedgerBatch(batch)
            var written = 0
            for try await count in try await connection.execute(save, logger: logger) { written = count }
            // A receipt of another owner, committed since it was read, is not overwritten: the batch runs again.
            guard written == save.receipts else { throw LostRace() }
        }
        return results
    }
}

/// Reads the state of every request of a batch: each row is a request's (by its position, from 0) wallet
/// (locked), its transaction's receipt and its key's entry; a request whose user is gone has no row.
struct LoadLedgerBatch: PostgresPreparedStatement {
    static let sql = """
        SELECT q.position - 1 AS position, \(PostgresLedgerContext.stateColumns)
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
            WITH ORDINALITY AS q(owner, environment, transaction_id, key, position)
        JOIN users u ON u.id = q.owner AND u.environment = q.environment AND u.merged_into IS NULL
        JOIN wallets w ON w.user_id = q.owner
        LEFT JOIN receipts r ON r.environment = q.environment AND r.transaction_id = q.transaction_id
        LEFT JOIN ledger_entries e ON e.environment = q.environment AND e.owner = q.owner AND e.key = q.key
        ORDER BY q.owner COLLATE "C", q.position
        FOR UPDATE OF w
        """

    typealias Row = (Int, LedgerWriter.State)

    var owners: [String] = []
    var environments: [String] = []
    var transactionIds: NullableArray<String> = NullableArray([])
    var keys: [String] = []

    init(_ requests: [LedgerRequest]) {
        for request in requests {
            owners.append(request.owner.uuidString)
            environments.append(request.environment.rawValue)
            transactionIds.values.append(request.event.transaction?.transactionId)
            keys.append(request.event.key.rawValue)
        }
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(owners)
        bindings.append(environments)
        try bindings.append(transactionIds)
        bindings.append(keys)
        return bindings
    }

    func decodeRow(_ postgresRow: PostgresRow) throws -> Row {
        let row = postgresRow.makeRandomAccess()
        return (Int(try Rows.value(row, "position", as: Int64.self)), try PostgresLedgerContext.state(row))
    }
}

/// Writes what a batch decided in one statement: the wallets as they end, the new entries in order, and the
/// receipts (each transaction's last), a receipt never over another owner's. Answers how many receipts it wrote.
struct SaveLedgerBatch: PostgresPreparedStatement {
    static let sql = """
        WITH wallet AS (
            UPDATE wallets SET balance = v.balance, deficit = v.deficit
            FROM unnest($1::text[], $2::int8[], $3::int8[]) AS v(user_id, balance, deficit)
            WHERE wallets.user_id = v.user_id
        ), entry AS (
            INSERT INTO ledger_entries (environment, owner, key, kind, amount, balance_delta, deficit_delta,
                balance_after, deficit_after, transaction_id, product_id, reason, created_at, data_environment,
                signed_by_xcode)
            SELECT environment, owner, key, kind, amount, balance_delta, deficit_delta, balance_after, deficit_after,
                transaction_id, product_id, reason, created_at, data_environment, signed_by_xcode
            FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::int8[], $9::int8[], $10::int8[],
                $11::int8[], $12::int8[], $13::text[], $14::text[], $15::text[], $16::int8[], $17::text[],
                $42::bool[])
                WITH ORDINALITY AS e(environment, owner, key, kind, amount, balance_delta, deficit_delta,
                    balance_after, deficit_after, transaction_id, product_id, reason, created_at, data_environment,
                    signed_by_xcode, position)
            ORDER BY position
        ), receipt AS (
            INSERT INTO receipts (environment, transaction_id, owner, original_transaction_id, product_id, quantity,
                purchase_date, expires_date, revocation_date, family_shared, trial, upgraded, delivered_credits,
                delivered_at, revoked_at, taken_from_balance, added_to_deficit, reversed_at, data_environment, price,
                currency, storefront, revocation_reason, delivered_before_coffer, signed_by_xcode)
            SELECT * FROM unnest($18::text[], $19::text[], $20::text[], $21::text[], $22::text[], $23::int8[],
                $24::int8[], $25::int8[], $26::int8[], $27::bool[], $28::bool[], $29::bool[], $30::int8[],
                $31::int8[], $32::int8[], $33::int8[], $34::int8[], $35::int8[], $36::text[], $37::int8[],
                $38::text[], $39::text[], $40::int8[], $41::bool[], $43::bool[])
            \(PostgresLedgerContext.receiptConflict)
        )
        SELECT count(*)::int8 FROM receipt
        """

    typealias Row = Int

    /// How many receipts the batch writes.
    let receipts: Int
    private var bindings = PostgresBindings(capacity: 43)

    init(_ batch: LedgerWriter.BatchWrite) throws {
        // Another currency's requests are applied through the ledger's context (`apply(_:others:)`), never here.
        guard !batch.hasOtherCurrencies else { throw StoreError.storage("another currency in the default's batch") }
        let wallets = batch.wallets
        bindings.append(wallets.map(\.owner.uuidString))
        bindings.append(wallets.map(\.wallet.balance))
        bindings.append(wallets.map(\.wallet.deficit))

        let entries = batch.entries
        bindings.append(entries.map(\.environment.rawValue))
        bindings.append(entries.map(\.entry.owner.uuidString))
        bindings.append(entries.map(\.entry.key.rawValue))
        bindings.append(entries.map(\.entry.key.kind.rawValue))
        bindings.append(entries.map(\.entry.amount))
        bindings.append(entries.map(\.entry.balanceDelta))
        bindings.append(entries.map(\.entry.deficitDelta))
        bindings.append(entries.map(\.entry.walletAfter.balance))
        bindings.append(entries.map(\.entry.walletAfter.deficit))
        try Self.append(entries.map(\.entry.transactionId), to: &bindings)
        try Self.append(entries.map(\.entry.productId), to: &bindings)
        try Self.append(entries.map(\.entry.reason), to: &bindings)
        bindings.append(entries.map { Millis.from($0.entry.createdAt) })
        try Self.append(entries.map(\.entry.dataEnvironment?.rawValue), to: &bindings)

        let receipts = batch.receipts
        self.receipts = receipts.count
        let facts = receipts.map(\.receipt.transaction)
        bindings.append(receipts.map(\.environment.rawValue))
        bindings.append(facts.map(\.transactionId))
        bindings.append(receipts.map(\.receipt.owner.uuidString))
        bindings.append(facts.map(\.originalTransactionId))
        bindings.append(facts.map(\.productId))
        bindings.append(facts.map { Int64($0.quantity) })
        bindings.append(facts.map { Millis.from($0.purchaseDate) })
        try Self.append(facts.map { $0.expiresDate.map(Millis.from) }, to: &bindings)
        try Self.append(facts.map { $0.revocationDate.map(Millis.from) }, to: &bindings)
        bindings.append(facts.map(\.isFamilyShared))
        bindings.append(facts.map(\.isTrial))
        bindings.append(facts.map(\.isUpgraded))
        try Self.append(receipts.map(\.receipt.deliveredCredits), to: &bindings)
        try Self.append(receipts.map { $0.receipt.deliveredAt.map(Millis.from) }, to: &bindings)
        try Self.append(receipts.map { $0.receipt.revokedAt.map(Millis.from) }, to: &bindings)
        bindings.append(receipts.map(\.receipt.takenFromBalance))
        bindings.append(receipts.map(\.receipt.addedToDeficit))
        try Self.append(receipts.map { $0.receipt.reversedAt.map(Millis.from) }, to: &bindings)
        try Self.append(facts.map(\.environment?.rawValue), to: &bindings)
        try Self.append(facts.map(\.price), to: &bindings)
        try Self.append(facts.map(\.currency), to: &bindings)
        try Self.append(facts.map(\.storefront), to: &bindings)
        try Self.append(facts.map { $0.revocationReason.map(Int64.init) }, to: &bindings)
        bindings.append(receipts.map(\.receipt.deliveredBeforeCoffer))
        // Xcode's mark, added last: $42 for the entries, $43 for the receipts.
        bindings.append(entries.map(\.entry.signedByXcode))
        bindings.append(facts.map(\.signedByXcode))
    }

    /// A column whose values may be missing.
    private static func append<Element: PostgresArrayEncodable & Sendable>(
        _ values: [Element?], to bindings: inout PostgresBindings
    )
        throws
    {
        try bindings.append(NullableArray(values))
    }

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> Row { Int(try row.decode(Int64.self)) }
}

/// A one-dimensional PostgreSQL array whose elements may be NULL (PostgresNIO's arrays take no NULL), in the
/// binary format PostgreSQL's `array_recv` reads: dimensions, the has-NULL flag, the element type, the length
/// and lower bound, then each element as its length (-1 for NULL) and bytes.
struct NullableArray<Element: PostgresArrayEncodable & Sendable>: PostgresEncodable, Sendable {
    var values: [Element?]

    init(_ values: [Element?]) { self.values = values }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) throws {
        buffer.writeInteger(values.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(values.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !values.isEmpty else { return }
        buffer.writeInteger(Int32(values.count))
        buffer.writeInteger(1, as: Int32.self)
        for value in values {
            guard let value else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            try value.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex)
        }
    }
}
