// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import CofferStore
import Foundation
import GRDB

extension SQLiteStore {
    public func sandboxMarkedUsers(
        environment: AppStoreEnvironment, supportIdPrefix: String?, limit: Int, offset: Int
    ) async throws -> [User] {
        let prefix = supportIdPrefix?.lowercased() ?? ""
        return try await read { db in
            try Row.fetchAll(
                db,
                cached: """
                    SELECT u.* FROM sandbox_marked m INDEXED BY sandbox_marked_by_created CROSS JOIN users u
                    WHERE m.environment = ? AND m.support_id >= ? AND m.support_id < ? AND u.id = m.owner
                    ORDER BY m.created_at DESC, m.support_id DESC LIMIT ? OFFSET ?
                    """,
                arguments: [environment.rawValue, prefix, prefix + "\u{7F}", max(0, limit), max(0, offset)]
            ).map(Self.user)
        }
    }

    public func sandboxMarkedGrants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int) async throws
        -> [Grant]
    {
        try await grants(environment: environment, recipient: nil, status: status, limit: limit, marked: true)
    }

    public func deleteSandboxMarkedGrants(environment: AppStoreEnvironment) async throws -> Int {
        try await write { db in
            try db.execute(
                cached: """
                    DELETE FROM grants WHERE environment = ? AND recipient IN (
                        SELECT owner FROM sandbox_marked WHERE environment = ?)
                    """,
                arguments: [environment.rawValue, environment.rawValue])
            return db.changesCount
        }
    }
}

/// The Sandbox-marked customers (``SandboxMark``) on SQLite, kept by triggers as their AppTransaction and receipts
/// change (migration v28).
enum SandboxMarkTables {
    static let sql = """
        CREATE TABLE sandbox_marked (
            owner TEXT PRIMARY KEY NOT NULL,
            environment TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            support_id TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX sandbox_marked_by_created ON sandbox_marked (environment, created_at, support_id);
        CREATE TRIGGER sandbox_mark_user_insert AFTER INSERT ON users BEGIN
            \(SandboxMark.refresh(owner: "NEW.id"))
        END;
        CREATE TRIGGER sandbox_mark_user_update AFTER UPDATE OF app_transaction_environment ON users
        WHEN OLD.app_transaction_environment IS NOT NEW.app_transaction_environment BEGIN
            \(SandboxMark.refresh(owner: "NEW.id"))
        END;
        CREATE TRIGGER sandbox_mark_user_delete AFTER DELETE ON users BEGIN
            DELETE FROM sandbox_marked WHERE owner = OLD.id;
        END;
        CREATE TRIGGER sandbox_mark_receipt_insert AFTER INSERT ON receipts
        WHEN \(SandboxMark.receiptMayChange("NEW", written: true)) BEGIN
            \(SandboxMark.refresh(owner: "NEW.owner"))
        END;
        CREATE TRIGGER sandbox_mark_receipt_update AFTER UPDATE OF data_environment, owner ON receipts
        WHEN OLD.owner IS NOT NEW.owner OR OLD.data_environment IS NOT NEW.data_environment BEGIN
            \(SandboxMark.refresh(owner: "OLD.owner"))
            \(SandboxMark.refresh(owner: "NEW.owner"))
        END;
        CREATE TRIGGER sandbox_mark_receipt_delete AFTER DELETE ON receipts
        WHEN \(SandboxMark.receiptMayChange("OLD", written: false)) BEGIN
            \(SandboxMark.refresh(owner: "OLD.owner"))
        END;
        \(SandboxMark.backfill);
        """
}
