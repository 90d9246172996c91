// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import PostgresNIO

extension PostgresStore {
    public func sandboxMarkedUsers(
        environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int
    ) async throws -> [User] {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        let end = prefix + "\u{7F}"
        return try await all(
            """
            SELECT u.* FROM sandbox_marked m JOIN users u ON u.id = m.owner WHERE m.environment = \(environment.rawValue)
                AND m.support_id COLLATE "C" >= \(prefix) AND m.support_id COLLATE "C" < \(end)
            ORDER BY m.created_at DESC, m.support_id COLLATE "C" DESC LIMIT \(max(0, limit)) OFFSET \(max(0, offset))
            """, Rows.user)
    }

    public func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await grants(environment: environment, recipient: nil, status: status, limit: limit, marked: true)
    }

    public func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { connection in
            try await Self.count(
                connection,
                """
                WITH deleted AS (
                    DELETE FROM grants WHERE environment = \(environment.rawValue) AND recipient IN (
                        SELECT owner FROM sandbox_marked WHERE environment = \(environment.rawValue))
                    RETURNING 1)
                SELECT count(*) FROM deleted
                """, logger: self.logger)
        }
    }
}

/// The Sandbox-marked customers (``SandboxMark``) on PostgreSQL, kept by triggers as their AppTransaction and
/// receipts change (migration v28).
enum PostgresSandboxMarkTables {
    static let sql = """
        CREATE TABLE sandbox_marked (
            owner TEXT PRIMARY KEY,
            environment TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            support_id TEXT NOT NULL
        );
        CREATE INDEX sandbox_marked_by_created ON sandbox_marked (environment, created_at, support_id COLLATE "C");
        CREATE FUNCTION coffer_refresh_mark(who TEXT) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            \(SandboxMark.refresh(owner: "who"))
        END $$;
        CREATE FUNCTION coffer_mark_user() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                DELETE FROM sandbox_marked WHERE owner = OLD.id;
            ELSE
                PERFORM coffer_refresh_mark(NEW.id);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER sandbox_mark_user_insert AFTER INSERT ON users
            FOR EACH ROW EXECUTE FUNCTION coffer_mark_user();
        CREATE TRIGGER sandbox_mark_user_update AFTER UPDATE OF app_transaction_environment ON users
            FOR EACH ROW WHEN (OLD.app_transaction_environment IS DISTINCT FROM NEW.app_transaction_environment)
            EXECUTE FUNCTION coffer_mark_user();
        CREATE TRIGGER sandbox_mark_user_delete AFTER DELETE ON users FOR EACH ROW EXECUTE FUNCTION coffer_mark_user();
        CREATE FUNCTION coffer_mark_receipt() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'UPDATE' THEN
                PERFORM coffer_refresh_mark(OLD.owner);
                PERFORM coffer_refresh_mark(NEW.owner);
            ELSIF TG_OP = 'INSERT' AND \(SandboxMark.receiptMayChange("NEW", written: true)) THEN
                PERFORM coffer_refresh_mark(NEW.owner);
            ELSIF TG_OP = 'DELETE' AND \(SandboxMark.receiptMayChange("OLD", written: false)) THEN
                PERFORM coffer_refresh_mark(OLD.owner);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER sandbox_mark_receipt_insert AFTER INSERT ON receipts
            FOR EACH ROW EXECUTE FUNCTION coffer_mark_receipt();
        CREATE TRIGGER sandbox_mark_receipt_update AFTER UPDATE OF data_environment, owner ON receipts
            FOR EACH ROW
            WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.data_environment IS DISTINCT FROM NEW.data_environment)
            EXECUTE FUNCTION coffer_mark_receipt();
        CREATE TRIGGER sandbox_mark_receipt_delete AFTER DELETE ON receipts
            FOR EACH ROW EXECUTE FUNCTION coffer_mark_receipt();
        \(SandboxMark.backfill)
        """
}

extension PostgresSandboxMarkTables {
    /// The receipts' trigger function again (migration v30), its conditions nested under the operation: on every
    /// insert v28's function also evaluated the delete branch's condition, one SQL expression with its probe of
    /// `OLD.owner` (null on an insert), planned anew each time (3 µs of PostgreSQL's CPU a delivery).
    static let receiptFunction = """
        CREATE OR REPLACE FUNCTION coffer_mark_receipt() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                IF \(SandboxMark.receiptMayChange("NEW", written: true)) THEN
                    PERFORM coffer_refresh_mark(NEW.owner);
                END IF;
            ELSIF TG_OP = 'UPDATE' THEN
                PERFORM coffer_refresh_mark(OLD.owner);
                PERFORM coffer_refresh_mark(NEW.owner);
            ELSIF \(SandboxMark.receiptMayChange("OLD", written: false)) THEN
                PERFORM coffer_refresh_mark(OLD.owner);
            END IF;
            RETURN NULL;
        END $$
        """
}
