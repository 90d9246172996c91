/// The ledgers of the currencies other than the default (`LedgerRequest.currency`) on PostgreSQL: each currency's
/// wallets, receipts and entries, the default currency's columns and the currency (`credit_currency`: `currency` is
/// the receipts' column of the currency Apple's price is in), keyed as the default's plus the currency. The default
/// currency's ledger stays in `wallets`, `receipts` and `ledger_entries`, so a database written before there were
/// several currencies holds the default currency's balances as it was. None of the default tables' triggers (the
/// dashboard's rollups, the Sandbox marks, the webhooks' outbox) reads these.
enum PostgresCurrencyTables {
    static let sql = """
        CREATE TABLE currency_wallets (
            user_id TEXT NOT NULL REFERENCES users (id),
            credit_currency TEXT NOT NULL,
            balance BIGINT NOT NULL CHECK (balance >= 0),
            deficit BIGINT NOT NULL CHECK (deficit >= 0),
            PRIMARY KEY (user_id, credit_currency)
        );
        CREATE TABLE currency_receipts (
            environment TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            credit_currency TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            original_transaction_id TEXT NOT NULL,
            product_id TEXT NOT NULL,
            quantity BIGINT NOT NULL,
            purchase_date BIGINT NOT NULL,
            expires_date BIGINT,
            revocation_date BIGINT,
            family_shared BOOLEAN NOT NULL,
            trial BOOLEAN NOT NULL,
            upgraded BOOLEAN NOT NULL,
            delivered_credits BIGINT,
            delivered_at BIGINT,
            revoked_at BIGINT,
            taken_from_balance BIGINT NOT NULL,
            added_to_deficit BIGINT NOT NULL,
            reversed_at BIGINT,
            data_environment TEXT CHECK (data_environment IN ('Sandbox', 'Production')),
            price BIGINT,
            currency TEXT,
            storefront TEXT,
            revocation_reason BIGINT,
            delivered_before_coffer BOOLEAN NOT NULL DEFAULT false,
            signed_by_xcode BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY (environment, transaction_id, credit_currency)
        );
        CREATE INDEX currency_receipts_by_owner ON currency_receipts (owner);
        CREATE INDEX currency_receipts_by_original ON currency_receipts (environment, original_transaction_id);
        CREATE TABLE currency_entries (
            seq BIGSERIAL PRIMARY KEY,
            environment TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            credit_currency TEXT NOT NULL,
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            amount BIGINT NOT NULL,
            balance_delta BIGINT NOT NULL,
            deficit_delta BIGINT NOT NULL,
            balance_after BIGINT NOT NULL,
            deficit_after BIGINT NOT NULL,
            transaction_id TEXT,
            product_id TEXT,
            reason TEXT,
            created_at BIGINT NOT NULL,
            data_environment TEXT CHECK (data_environment IN ('Sandbox', 'Production')),
            signed_by_xcode BOOLEAN NOT NULL DEFAULT false,
            UNIQUE (environment, owner, credit_currency, key)
        )
        """
}
