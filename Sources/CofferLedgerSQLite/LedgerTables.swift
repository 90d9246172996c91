/// The ledger's tables on SQLite: wallets, receipts and ledger entries, each row tagged by environment and
/// owned by a row of a `users` table (`id`, `environment`) that each schema defines its own way. Frozen as
/// shipped: the server's first migration and the SDK's device ledger both create them from this text, and a
/// change to them is a new migration in each, never an edit here.
public enum LedgerTables {
    /// Creates the tables and their indexes.
    public static let v1 = """
        CREATE TABLE wallets (
            user_id TEXT PRIMARY KEY NOT NULL REFERENCES users (id),
            balance INTEGER NOT NULL CHECK (balance >= 0),
            deficit INTEGER NOT NULL CHECK (deficit >= 0)
        );
        CREATE TABLE receipts (
            environment TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            original_transaction_id TEXT NOT NULL,
            product_id TEXT NOT NULL,
            quantity INTEGER NOT NULL,
            purchase_date INTEGER NOT NULL,
            expires_date INTEGER,
            revocation_date INTEGER,
            family_shared INTEGER NOT NULL,
            trial INTEGER NOT NULL,
            upgraded INTEGER NOT NULL,
            delivered_credits INTEGER,
            delivered_at INTEGER,
            revoked_at INTEGER,
            taken_from_balance INTEGER NOT NULL,
            added_to_deficit INTEGER NOT NULL,
            reversed_at INTEGER,
            PRIMARY KEY (environment, transaction_id)
        ) WITHOUT ROWID;
        CREATE INDEX receipts_by_owner ON receipts (owner);
        CREATE INDEX receipts_by_original ON receipts (environment, original_transaction_id);
        CREATE TABLE ledger_entries (
            seq INTEGER PRIMARY KEY,
            environment TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            amount INTEGER NOT NULL,
            balance_delta INTEGER NOT NULL,
            deficit_delta INTEGER NOT NULL,
            balance_after INTEGER NOT NULL,
            deficit_after INTEGER NOT NULL,
            transaction_id TEXT,
            product_id TEXT,
            reason TEXT,
            created_at INTEGER NOT NULL,
            UNIQUE (environment, owner, key)
        );
        """

    /// Marks the environment Apple's data named on receipts and on the entries of purchases, revocations and
    /// reversals (``TransactionFact/environment``). Receipts written before take their row's environment, so
    /// the other environment's data never matches them; `NULL` stays only where a source did not say.
    public static let v2 = """
        ALTER TABLE receipts ADD COLUMN data_environment TEXT CHECK (data_environment IN ('Sandbox', 'Production'));
        ALTER TABLE ledger_entries ADD COLUMN data_environment TEXT
            CHECK (data_environment IN ('Sandbox', 'Production'));
        UPDATE receipts SET data_environment = environment;
        """

    /// Keeps what Apple's signed data says the customer paid (`price` in milliunits, `currency`), where
    /// (`storefront`), and why Apple refunded (`revocation_reason`). Receipts written before know none of it.
    public static let v3 = """
        ALTER TABLE receipts ADD COLUMN price INTEGER;
        ALTER TABLE receipts ADD COLUMN currency TEXT;
        ALTER TABLE receipts ADD COLUMN storefront TEXT;
        ALTER TABLE receipts ADD COLUMN revocation_reason INTEGER;
        """

    /// Marks the data Xcode's StoreKit testing signed (``TransactionFact/signedByXcode``) on receipts and entries.
    public static let v5 = """
        ALTER TABLE receipts ADD COLUMN signed_by_xcode INTEGER NOT NULL DEFAULT 0 CHECK (signed_by_xcode IN (0, 1));
        ALTER TABLE ledger_entries ADD COLUMN signed_by_xcode INTEGER NOT NULL DEFAULT 0
            CHECK (signed_by_xcode IN (0, 1));
        """

    /// Marks a purchase the app delivered before it used Coffer (``Receipt/deliveredBeforeCoffer``).
    public static let v4 = """
        ALTER TABLE receipts ADD COLUMN delivered_before_coffer INTEGER NOT NULL DEFAULT 0
            CHECK (delivered_before_coffer IN (0, 1));
        """

    /// The ledgers of the currencies other than the default (``LedgerRequest/currency``): each currency's wallets,
    /// receipts and entries, the same columns as the default currency's tables and the currency, keyed as those
    /// plus the currency (`credit_currency`: `currency` is the receipts' column of the currency Apple's price is in).
    /// The default currency's ledger stays in the tables above, so a database written before there were several
    /// currencies holds the default currency's balances as it was.
    public static let v6 = """
        CREATE TABLE currency_wallets (
            user_id TEXT NOT NULL REFERENCES users (id),
            credit_currency TEXT NOT NULL,
            balance INTEGER NOT NULL CHECK (balance >= 0),
            deficit INTEGER NOT NULL CHECK (deficit >= 0),
            PRIMARY KEY (user_id, credit_currency)
        ) WITHOUT ROWID;
        CREATE TABLE currency_receipts (
            environment TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            credit_currency TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            original_transaction_id TEXT NOT NULL,
            product_id TEXT NOT NULL,
            quantity INTEGER NOT NULL,
            purchase_date INTEGER NOT NULL,
            expires_date INTEGER,
            revocation_date INTEGER,
            family_shared INTEGER NOT NULL,
            trial INTEGER NOT NULL,
            upgraded INTEGER NOT NULL,
            delivered_credits INTEGER,
            delivered_at INTEGER,
            revoked_at INTEGER,
            taken_from_balance INTEGER NOT NULL,
            added_to_deficit INTEGER NOT NULL,
            reversed_at INTEGER,
            data_environment TEXT CHECK (data_environment IN ('Sandbox', 'Production')),
            price INTEGER,
            currency TEXT,
            storefront TEXT,
            revocation_reason INTEGER,
            delivered_before_coffer INTEGER NOT NULL DEFAULT 0 CHECK (delivered_before_coffer IN (0, 1)),
            signed_by_xcode INTEGER NOT NULL DEFAULT 0 CHECK (signed_by_xcode IN (0, 1)),
            PRIMARY KEY (environment, transaction_id, credit_currency)
        ) WITHOUT ROWID;
        CREATE INDEX currency_receipts_by_owner ON currency_receipts (owner);
        CREATE INDEX currency_receipts_by_original ON currency_receipts (environment, original_transaction_id);
        CREATE TABLE currency_entries (
            seq INTEGER PRIMARY KEY,
            environment TEXT NOT NULL,
            owner TEXT NOT NULL REFERENCES users (id),
            credit_currency TEXT NOT NULL,
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            amount INTEGER NOT NULL,
            balance_delta INTEGER NOT NULL,
            deficit_delta INTEGER NOT NULL,
            balance_after INTEGER NOT NULL,
            deficit_after INTEGER NOT NULL,
            transaction_id TEXT,
            product_id TEXT,
            reason TEXT,
            created_at INTEGER NOT NULL,
            data_environment TEXT CHECK (data_environment IN ('Sandbox', 'Production')),
            signed_by_xcode INTEGER NOT NULL DEFAULT 0 CHECK (signed_by_xcode IN (0, 1)),
            UNIQUE (environment, owner, credit_currency, key)
        );
        """
}
